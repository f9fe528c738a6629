#!/usr/bin/env bash
# timeout: 120 (three times its longest run on a clean clone, stop 48)
# sampler_hostile: no local user can stop, exhaust or steer the daemon
# (SPEC §3). One `proffs run` at 99 Hz; beside a plain spinner (the
# witness), processes running as nobody do what any local user may:
#  - a JIT (code in anonymous executable memory) whose /tmp/perf-PID.map
#    is a FIFO, a 100 GB sparse file, a symlink to /dev/zero, a symlink to
#    a root-only file whose lines name the JIT's code, or a valid map
#    rewritten in place 1000 times a second;
#  - a process with 60,000 mappings; one whose comm holds ';', a space, a
#    newline and bytes that are not UTF-8; an executable whose section
#    header table claims 2^32 entries and whose .symtab is larger than
#    the file.
# All cases run at once for the witness's 24 s (their checks are by pid),
# and are still running when the daemon gets SIGTERM. Checked:
#  - the witness's samples are >= 95% of 99 Hz x its CPU time (nothing
#    stalls the drain), its stack symbolized;
#  - the daemon's RSS stays within 32 MB the whole time;
#  - each refusal is counted in /prof/metrics under its reason and logged
#    (debug) naming the case's file; the rewritten map is read again at
#    most once a second, and still resolves the JIT's frames;
#  - nothing of the root-only file appears in the tree;
#  - folded.txt is one well-formed line per stack;
#  - SIGTERM ends the daemon in <= 2 s, exit 0, no mount left, and the
#    last batch is stored, with copies of the mount held in other mount
#    namespaces (nobody's unshare -Urm, root's unshare -m).
# alone: yes (its checks are a stop latency and a memory figure)
# fs.protected_symlinks is set to 0 for the test (restored at exit):
# with it on, the kernel itself refuses to follow nobody's links in /tmp
# and the link cases would prove nothing about proffs.
source "$(dirname "$0")/sampler_lib.bash"

HZ=99
PERIOD=$((1000000000 / HZ))
FOLDED_SCALE=$PERIOD # folded.txt counts samples
WITNESS_SECS=24
CASE_SECS=600 # longer than the run: still running at SIGTERM
RSS_MAX_KB=$((32 * 1024))
STORE=$WORK/store
MP=$WORK/mp
mkdir -p "$MP"
[[ $(uname -m) == x86_64 ]] || skip "the JIT helper is x86-64 only"
command -v setpriv >/dev/null || skip "setpriv (util-linux) is needed to run cases as nobody"
[[ -x $TESTS_BIN/hostile ]] || die "$TESTS_BIN/hostile not built"

PS_SYSCTL=/proc/sys/fs/protected_symlinks
OLD_PS=$(cat $PS_SYSCTL 2>/dev/null || echo)
restore_sysctl() { [[ -n $OLD_PS ]] && echo "$OLD_PS" >$PS_SYSCTL 2>/dev/null; }
declare -A CASE=()
# The cases are killed, so their perf maps in /tmp (a FIFO, a 100 GB sparse
# file, links) are not removed by them: the trap does.
# The cases stop first: the rewrite case's thread writes its map anew
# every millisecond (145 stale maps piled up in /tmp, one read whenever a
# new process got a pid of theirs).
rm_perfmaps() {
	local p i
	for p in "${CASE[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${CASE[@]}"; do
		for i in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		rm -f "/tmp/perf-$p.map"
	done
}
trap 'rc=$?; restore_sysctl; rm_perfmaps; (exit $rc); s_cleanup' EXIT
[[ -n $OLD_PS ]] && { echo 0 >$PS_SYSCTL || skip "cannot set fs.protected_symlinks"; }

# The helper where nobody can run it; the root-only file where nobody
# can read it (inside WORK, which stays 0700 except for bin/).
chmod 711 "$WORK"
mkdir -m 755 "$WORK/bin"
cp "$TESTS_BIN/hostile" "$WORK/bin/hostile"
chmod 755 "$WORK/bin/hostile"
"$WORK/bin/hostile" badelf "$WORK/bin/badelf" || die "hostile badelf"
SECRET=ROOTONLY$RANDOM$RANDOM
A_FIFO=500001000000 A_SPARSE=500002000000 A_ZERO=500003000000 A_ROOT=500004000000 A_RW=500005000000
A_STALE=500006000000
ROOTFILE=$WORK/rootonly.map
{
	for a in $A_FIFO $A_SPARSE $A_ZERO $A_ROOT $A_RW; do
		printf '%x 1000 %s_%s\n' $((0x$a)) "$SECRET" "$a"
	done
} >"$ROOTFILE"
chmod 600 "$ROOTFILE"

NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)

start_case() { # NAME CMD...: runs CMD as nobody, remembers its pid
	local name=$1; shift
	"${NOBODY[@]}" "$@" >"$WORK/$name.out" 2>&1 &
	CASE[$name]=$!
	PIDS+=($!)
}
H=$WORK/bin/hostile
# First: cutting a region into 60,000 mappings takes the kernel seconds
# (more on a busy host), while the daemon starts.
start_case maps "$H" maps 60000 $CASE_SECS
PROFFS_DEBUG=1 run_start "$STORE" "$MP" --hz $HZ --batch-interval 5s
log "daemon up (pid $RUN_PID)"
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
# rss_parts PID: VmRSS's parts (anonymous, file-backed: the binary, its
# libraries, LMDB's map, and shared), for the record of the peak.
rss_parts() { awk '/^Rss(Anon|File|Shmem):/ { printf "%s %d kB ", $1, $2 }' "/proc/$1/status" 2>/dev/null; }
RSS0=$(rss_kb "$RUN_PID")
grep -q "capabilities dropped" "$RUN_LOG" && ok "capabilities dropped after start: $(grep -o 'but [a-z_,]*' "$RUN_LOG")" ||
	fail "no capability drop in the log"
grep -q '^NoNewPrivs:[[:space:]]*1' "/proc/$RUN_PID/status" && ok "no_new_privs set" || fail "no_new_privs not set"
bad_caps=$(for t in /proc/$RUN_PID/task/*; do awk '/^CapEff:/ { print $2 }' "$t/status"; done | sort -u | grep -v '^0000010000080004$')
[[ -z $bad_caps ]] && ok "every thread keeps only cap_sys_ptrace, cap_dac_read_search, cap_checkpoint_restore" ||
	fail "threads with other capabilities: $bad_caps"

refused() { metric "proffs_files_refused_total{reason=\"$1\"}"; }
R0_READS=$(metric proffs_perfmap_reads_total)

start_case fifo "$H" jit $A_FIFO $CASE_SECS fifo
start_case sparse "$H" jit $A_SPARSE $CASE_SECS sparse
start_case devzero "$H" jit $A_ZERO $CASE_SECS link /dev/zero
start_case rootlink "$H" jit $A_ROOT $CASE_SECS link "$ROOTFILE"
start_case rewrite "$H" jit $A_RW $CASE_SECS rewrite
start_case stale "$H" jit $A_STALE $CASE_SECS stale
start_case comm "$H" comm $CASE_SECS
start_case badelf "$WORK/bin/badelf" spin $CASE_SECS
# Copies of the mount in other mount namespaces (nobody's own user
# namespace, and root's as a container start makes): the daemon must
# still end within 2 s of SIGTERM (tests/integration/sampler_signal.sh).
start_case ns1 unshare -Urm sleep $CASE_SECS
start_case ns2 unshare -Urm sleep $CASE_SECS
unshare -m --propagation private sleep $CASE_SECS & CASE[nsroot]=$!; PIDS+=($!)
# The window starts once the 60,000 mappings all exist.
for i in $(seq 600); do grep -q "60000 mappings" "$WORK/maps.out" && break; sleep 0.1; done
grep -q "60000 mappings" "$WORK/maps.out" || die "the maps case did not set up its mappings in 60 s: $(cat "$WORK/maps.out")"
for n in "${!CASE[@]}"; do
	kill -0 "${CASE[$n]}" 2>/dev/null || { cat "$WORK/$n.out"; die "case $n did not start"; }
done
T0=$SECONDS
# (setpriv execs the helper: $! is its pid). Niced up so that it gets CPU
# time enough for a ratio to mean something on a busy host (the ratio is
# samples per CPU second, which priority does not change).
nice -n -10 "${NOBODY[@]}" "$H" spin $WITNESS_SECS >"$WORK/witness.out" &
WP=$!
PIDS+=($WP)
RSS_MAX=$RSS0
while kill -0 "$WP" 2>/dev/null; do
	r=$(rss_kb "$RUN_PID")
	((r > RSS_MAX)) && { RSS_MAX=$r; RSS_PARTS=$(rss_parts "$RUN_PID"); }
	sleep 1
done
wait "$WP" || fail "witness failed"
WSECS=$((SECONDS - T0))
sleep 1
kill -0 "$RUN_PID" 2>/dev/null || die "daemon died"
for n in "${!CASE[@]}"; do
	kill -0 "${CASE[$n]}" 2>/dev/null || fail "case $n ended early: $(tail -2 "$WORK/$n.out")"
done
r=$(rss_kb "$RUN_PID"); ((r > RSS_MAX)) && { RSS_MAX=$r; RSS_PARTS=$(rss_parts "$RUN_PID"); }
log "daemon RSS: $((RSS0 / 1024)) MB at start, at most $((RSS_MAX / 1024)).$(((RSS_MAX % 1024) * 10 / 1024)) MB with every case running (${RSS_PARTS:-at the start})"
((RSS_MAX <= RSS_MAX_KB)) && ok "daemon RSS within 32 MB" || fail "daemon RSS ${RSS_MAX} kB > $RSS_MAX_KB kB"

# --- refusals: counted by reason, logged naming the case's file ---
cp "$MP/metrics" "$WORK/metrics.txt"
grep '^proffs_files_refused_total\|^proffs_lost\|^proffs_perfmap\|^proffs_symbol_loads' "$WORK/metrics.txt"
logged() { grep -q "safefile: refused $1: $2" "$RUN_LOG"; }
check_refusal() { # CASE REASON FILE-PATTERN
	local n=$(refused "$2")
	if ((${n:-0} >= 1)) && logged "$3" "$2"; then
		ok "$1: refused as $2 (counted: $n, logged for $3)"
	else
		fail "$1: no $2 refusal counted ($n) or logged for $3"
	fi
}
check_refusal "FIFO perf map" not_regular "tmp/perf-${CASE[fifo]}.map"
check_refusal "100 GB sparse perf map" too_big "tmp/perf-${CASE[sparse]}.map"
check_refusal "symlink to /dev/zero" symlink "tmp/perf-${CASE[devzero]}.map"
check_refusal "symlink to a root-only file" symlink "tmp/perf-${CASE[rootlink]}.map"
check_refusal "60,000 mappings" too_big "/proc/${CASE[maps]}/maps"
check_refusal "corrupt ELF" bad_format "$WORK/bin/badelf"
check_refusal "perf map older than its process" stale "tmp/perf-${CASE[stale]}.map"

# The rewritten map: read again only when it changed and a JIT frame
# missed, at most once a second (the only perf map here that is read at
# all), and it works.
reads=$(($(metric proffs_perfmap_reads_total) - ${R0_READS:-0}))
if ((reads >= 1 && reads <= WSECS + 4)); then
	ok "perf map rewritten 1000x/s: read $reads times in ~$((WSECS + 2)) s"
else
	fail "perf map rewritten 1000x/s: read $reads times in ~$((WSECS + 2)) s (want 1..$((WSECS + 4)))"
fi
F=$WORK/rewrite.folded
cp "$MP/merged/cpu/pid=${CASE[rewrite]}/last-15m/folded.txt" "$F" || fail "read the rewrite case's folded.txt"
tot=$(fsum "$F"); jr=$(fsum "$F" ';jit_rewritten_\[j\]$')
within "$(pct "$jr" "$tot")" 50 100 && ok "rewritten map resolves the JIT: jit_rewritten in $(pct "$jr" "$tot")% of $((tot / PERIOD)) samples" ||
	{ fail "rewritten map: jit_rewritten in $(pct "$jr" "$tot")% of $((tot / PERIOD)) samples"; head -3 "$F"; }

# --- every case was sampled; JIT frames of refused maps stay unnamed ---
for n in "${!CASE[@]}"; do
	[[ $n == ns* ]] && continue # they sleep
	cp "$MP/merged/cpu/pid=${CASE[$n]}/last-15m/folded.txt" "$WORK/$n.folded" 2>/dev/null || : >"$WORK/$n.folded"
	s=$(($(fsum "$WORK/$n.folded") / PERIOD))
	((s >= 50)) || fail "case $n: only $s samples (was it sampled?)"
done
ok "every case sampled (>= 50 samples each)"
for n in fifo sparse devzero rootlink stale; do
	grep -q '\[jit\]+0x' "$WORK/$n.folded" || { fail "case $n: JIT frames not shown as [jit]+0x..."; head -3 "$WORK/$n.folded"; }
done
ok "JIT frames of refused perf maps show as [jit]+0xOFFSET"
if grep -q jit_stale_name "$WORK/stale.folded"; then
	fail "a stale perf map named the frames of the process that got its pid"
else
	ok "a perf map older than its process names nothing"
fi

# --- nothing of the root-only file in the tree ---
{
	cat "$MP/README" "$MP/metrics"
	ls "$MP" "$MP/cpu" "$MP/cpu/comm" "$MP/cpu/pid" 2>&1
	for f in folded.txt top.txt flamegraph.svg profile.pb; do
		cat "$MP/merged/cpu/last-15m/$f"
		cat "$MP/merged/cpu/pid=${CASE[rootlink]}/last-15m/$f"
	done
} >"$WORK/tree.dump" 2>&1
sz=$(stat -c %s "$WORK/tree.dump")
if ((sz > 10000)) && ! grep -aq "$SECRET" "$WORK/tree.dump"; then
	ok "the root-only file's content is nowhere in the tree ($sz bytes searched)"
else
	fail "root-only content in the tree (or nothing read: $sz bytes)"; grep -a "$SECRET" "$WORK/tree.dump" | head -3
fi

# --- folded.txt: one well-formed line per stack ---
F=$WORK/all.folded
cp "$MP/merged/cpu/last-15m/folded.txt" "$F" || fail "read merged folded.txt"
nl=$(wc -l <"$F")
badl=$(awk '!/^[^ ].* [0-9]+$/ || /\r/' "$F" | wc -l)
crs=$(($(wc -c <"$F") - $(tr -d '\n' <"$F" | wc -c)))
if ((nl > 10 && badl == 0 && crs == nl)); then
	ok "folded.txt: $nl lines, each 'frames count'"
else
	fail "folded.txt: $badl malformed of $nl lines"; awk '!/^[^ ].* [0-9]+$/' "$F" | head -3 | cat -A | cut -c1-200
fi
c=$(head -c 200 "$WORK/comm.folded" | head -1)
[[ $c == a:b\ c\?* ]] && ok "comm with ';', space, newline, bad UTF-8 rendered as one frame: ${c%%;*}" ||
	fail "comm case first frame: $(printf '%q' "${c:0:40}")"

# --- SIGTERM with every case still running ---
for n in "${!CASE[@]}"; do kill -0 "${CASE[$n]}" 2>/dev/null || fail "case $n not running at SIGTERM"; done
before=$(fsum "$MP/merged/cpu/pid=$WP/last-15m/folded.txt")
t0=$(date +%s%N)
kill -TERM "$RUN_PID"
for i in $(seq 250); do kill -0 "$RUN_PID" 2>/dev/null || break; sleep 0.02; done
# Bounded: a daemon still there 5 s on is killed (and fails below).
kill -0 "$RUN_PID" 2>/dev/null && { tail -5 "$RUN_LOG"; kill -KILL "$RUN_PID"; }
wait "$RUN_PID"; rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
own=$(grep -o 'stopped after [0-9]* ms' "$RUN_LOG")
if ((rc == 0 && ms <= 2000)) && ! grep -q " $MP " /proc/mounts; then
	ok "SIGTERM: exit 0 in $ms ms (the daemon's own count: ${own:-?}), no mount left"
else
	fail "SIGTERM: exit $rc after $ms ms (want 0 within 2000 ms, no mount)"
fi

# --- the witness: its samples against its CPU time ---
"$PROFFS" cat --store "$STORE" "/merged/cpu/pid=$WP/last-15m/folded.txt" >"$WORK/witness.folded" || fail "proffs cat witness"
got=$(fsum "$WORK/witness.folded")
cpu=$(tail -1 "$WORK/witness.out")
ratio=$(pct "$got" "$cpu")
log "witness: $((got / PERIOD)) samples for $((cpu / 1000000)) ms of CPU: $ratio% of 99 Hz x CPU time ($((before / PERIOD)) before the last batch)"
within "$ratio" 95 110 && ok "witness sampled at $ratio% (>= 95%)" || fail "witness sampled at $ratio% (want >= 95%)"
sym=$(fsum "$WORK/witness.folded" ';spin_some$')
within "$(pct "$sym" "$got")" 80 100 && ok "witness stacks symbolized: spin_some in $(pct "$sym" "$got")%" ||
	{ fail "witness: spin_some in $(pct "$sym" "$got")%"; head -3 "$WORK/witness.folded"; }
lost=$(awk -F' ' '/^proffs_lost_samples_total/ { s += $2 } END { print s + 0 }' "$WORK/metrics.txt")
log "samples lost (ring full, no memory): $lost"
"$PROFFS" check --store "$STORE" >"$WORK/check.out" 2>&1 && ok "proffs check: store sound" || { cat "$WORK/check.out"; fail "proffs check"; }
((FAILS)) && { echo "--- daemon log (warnings, stop)"; grep -E "warn|hang|after [0-9]+ ms|SIGTERM" "$RUN_LOG" | tail -20; }
finish
