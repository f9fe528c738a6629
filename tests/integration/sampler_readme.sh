#!/usr/bin/env bash
# timeout: 660 (three times its longest run on a clean clone, stop 48)
# sampler_readme: `proffs run` as the README shows it - no flag but where
# to keep the store and mount the tree (so: 19 Hz, 10 s batches, the
# unwind tables) - for three minutes on a host kept busy by a fork storm,
# Debian's python3, gzip and sha256sum, a program without frame pointers
# and a witness that times its own CPU per minute. Read through the tree:
#  - complete minutes: every minute from the first whole one to `latest`
#    is listed; `latest` has ended and its files never change afterwards
#    (read again after a batch: the same bytes); the witness's samples in
#    each whole minute are its CPU time x 19 Hz (+- 3%, or 3 samples);
#  - labels from the host: unit from a system.slice/NAME.service cgroup,
#    container from a docker-ID.scope one, comm, exe, pid, node; a unit's
#    selection holds its process's samples and no one else's;
#  - stacks: the program without frame pointers is whole (_start to its
#    leaf) in >= 95% of its samples, iterateLong 90.9% +- 2 of them;
#  - metrics: batches every 10 s, no sample lost, walks ending at a root;
#  - SIGTERM: exit 0 within 2 s, no mount left, the open batch stored.
# long: yes (three minutes of wall clock: started first). Its busy host
# runs at nice 19: the CPUs stay full, yet the tests beside it (nice 0)
# are not starved; the two programs it judges run at nice 0.
source "$(dirname "$0")/sampler_lib.bash"

HZ=19
STORE=$WORK/store
MP=$WORK/mp
RUN_S=${README_RUN_S:-185}
mkdir -p "$MP"
for t in /usr/bin/python3 gzip sha256sum; do command -v $t >/dev/null || die "$t is needed (Debian's; deps.sh installs it)"; done

# --- the host's cgroups, as systemd and docker make them ---
CG=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[[ -n $CG && -w $CG ]] || die "no writable cgroup2 hierarchy"
[[ -d $CG/system.slice ]] || { mkdir "$CG/system.slice" && CGROUPS+=("$CG/system.slice"); } || die "mkdir system.slice"
UNIT=proffs-readme-$$.service
CID=$(printf '%064x' $((0x5eed0000 + $$)))
for d in "$CG/system.slice/$UNIT" "$CG/system.slice/docker-$CID.scope"; do
	mkdir "$d" || die "mkdir $d"
	CGROUPS+=("$d")
done
in_cgroup() { # CGDIR CMD...: runs CMD inside the cgroup, in the background
	local cg=$1; shift
	sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg" "$@" &
	PIDS+=($!)
}

# Exactly the README's command, with the store and mountpoint of this test.
run_start "$STORE" "$MP"
T0=$(date +%s)
log "daemon up (pid $RUN_PID) at $(date -u +%T)"
cpu0=$(awk '{ print $14 + $15 }' "/proc/$RUN_PID/stat")

# --- a busy host ---
in_cgroup "$CG/system.slice/$UNIT" "$TESTS_BIN/truth_nofp" $((RUN_S - 10)) 0 $((RUN_S - 10)); TP=$!
cat >"$WORK/loop.py" <<'PY'
import json, sys, time
t0 = time.time()
d = {"a": list(range(200)), "b": {"x": "y" * 50}}
while time.time() - t0 < float(sys.argv[1]):
    json.loads(json.dumps(d))
PY
in_cgroup "$CG/system.slice/docker-$CID.scope" nice -n 19 /usr/bin/python3 "$WORK/loop.py" $((RUN_S - 10)); PY=$!
nice -n 19 timeout $((RUN_S - 10)) gzip -9 </dev/urandom >/dev/null & PIDS+=($!)
(
	end=$((SECONDS + RUN_S - 10))
	head -c 50000000 /dev/urandom >"$WORK/hashme"
	while ((SECONDS < end)); do nice -n 19 sha256sum "$WORK/hashme" >/dev/null; done
) & PIDS+=($!)
nice -n 19 timeout $((RUN_S - 10)) "$TESTS_BIN/forker_nofp" 2500 40 fkreadme >"$WORK/forker.out" & FK=$!; PIDS+=($FK)
# The witness: one thread busy from the next whole minute for two
# minutes, timing its own CPU per minute (whatever share it gets).
M1=$(((T0 + 59) / 60 * 60))
"$TESTS_BIN/minute_spin" "$M1" $((M1 + 120)) "$WORK/witness.txt" & WP=$!; PIDS+=($WP)

wait_s=$((T0 + RUN_S - $(date +%s)))
((wait_s > 0)) && sleep "$wait_s"
wait "$WP" || fail "the witness failed"
kill -0 "$RUN_PID" 2>/dev/null || die "the daemon died"
load=$(cut -d' ' -f1-3 /proc/loadavg)
log "after $(($(date +%s) - T0)) s; load average $load"

# --- complete minutes ---
mins=$(ls "$MP/cpu" | grep -E '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}$')
latest=$(readlink "$MP/cpu/latest")
lt=$(date -u -d "${latest}:00Z" +%s 2>/dev/null || echo 0)
now=$(date +%s)
log "minutes listed: $(echo $mins); latest -> $latest"
if ((lt > 0 && lt + 60 <= now && now - (lt + 60) <= 60 + 15)); then
	ok "latest -> $latest: ended $((now - lt - 60)) s ago, the newest minute that could be complete"
else
	fail "latest -> '$latest' at $(date -u +%T) (want the newest ended minute whose last batch is in)"
fi
missing=
for ((m = (T0 + 59) / 60 * 60; m <= lt; m += 60)); do
	grep -qx "$(date -u -d "@$m" +%Y-%m-%dT%H:%M)" <<<"$mins" || missing+=" $(date -u -d "@$m" +%H:%M)"
done
[[ -z $missing ]] && ok "every minute from the first whole one to latest is listed" || fail "minutes missing:$missing"
# A complete minute never changes: the same bytes after another batch.
for f in folded.txt top.txt profile.pb flamegraph.svg; do cp "$MP/cpu/$latest/$f" "$WORK/latest1.$f" || fail "read latest/$f"; done
sleep 11
for f in folded.txt top.txt profile.pb flamegraph.svg; do
	cmp -s "$WORK/latest1.$f" "$MP/cpu/$latest/$f" || fail "$latest/$f changed after another batch"
done
[[ -s $WORK/latest1.folded.txt ]] && ok "$latest's four files read the same after another batch" || fail "$latest/folded.txt is empty"
# The witness: each whole minute holds exactly its samples. It shares a
# busy CPU, so which timer ticks find it running is a draw: its count
# varies about CPU time x 19 Hz like a binomial one, a standard error of
# at most sqrt(want); allowed: 3.5 of them, or 3% when that is more (the
# minutes test judges a witness with a CPU of its own to 2%).
PERIOD=$((1000000000 / HZ))
while read -r m cpu_ns; do
	name=$(date -u -d "@$m" +%Y-%m-%dT%H:%M)
	((m + 60 <= lt + 60)) || continue
	got=$(awk '{ s += $NF } END { print s + 0 }' "$MP/cpu/pid=$WP/$name/folded.txt" 2>/dev/null)
	want=$(awk -v c="$cpu_ns" -v p=$PERIOD 'BEGIN { printf "%.0f", c / p }')
	tol=$(awk -v w="$want" 'BEGIN { t = 3.5 * sqrt(w); if (t < w * 0.03) t = w * 0.03; printf "%.0f", t < 3 ? 3 : t }')
	if ((want > 100 && got >= want - tol && got <= want + tol)); then
		ok "witness, minute $name: $got samples for $((cpu_ns / 1000000)) ms of CPU ($want +- $tol)"
	else
		fail "witness, minute $name: $got samples for $((cpu_ns / 1000000)) ms of CPU (want $want +- $tol)"
	fi
done <"$WORK/witness.txt"

# --- labels from the host ---
L=$(ls "$MP/cpu")
for want in "unit=$UNIT" "container=$CID" comm=truth_nofp comm=fkreadme comm=python3 comm=gzip comm=sha256sum \
	"pid=$TP" "node=$(hostname)" "exe=$(printf '%s' "$TESTS_BIN/truth_nofp" | sed 's|%|%25|g; s|/|%2F|g')"; do
	grep -qxF "$want" <<<"$L" && ok "label $want listed" || fail "label $want not listed under /cpu"
done
F=$WORK/unit.folded
cp "$MP/merged/cpu/unit=$UNIT/last-15m/folded.txt" "$F" || fail "read unit=$UNIT"
if [[ -s $F ]] && ! grep -Evq '^(truth_nofp|sh|nice)[; ]' "$F"; then
	ok "unit=$UNIT holds truth_nofp's samples ($(fsum "$F")) and no one else's"
else
	fail "unit=$UNIT holds other samples: $(grep -Ev '^(truth_nofp|sh|nice)[; ]' "$F" | head -2 | cut -c1-100)"
fi
F=$WORK/container.folded
cp "$MP/merged/cpu/container=$CID/last-15m/folded.txt" "$F" || fail "read container=$CID"
[[ -s $F ]] && ! grep -Evq '^(python3|sh)[; ]' "$F" && ok "container=${CID:0:12}... holds python3's samples and no one else's" ||
	{ fail "container=${CID:0:12}...: wrong or no samples"; grep -Ev '^(python3|sh)[; ]' "$F" | cut -c1-150 | head -3; }

# --- stacks, with the default unwinder ---
wait "$TP" || fail "truth_nofp failed"
F=$WORK/truth.folded
cp "$MP/merged/cpu/pid=$TP/last-15m/folded.txt" "$F" || die "read truth_nofp"
tot=$(fsum "$F"); long=$(fsum "$F" ';iterateLong(;|$)')
whole=$(fsum "$F" '^truth_nofp;_start;__libc_start_main;__libc_start_call_main;main;iterate(Long|Short);iterate(;[^;]*_\[k\])*$')
log "truth_nofp: $tot samples, iterateLong $(pct "$long" "$tot")%, whole $(pct "$whole" "$tot")%"
((tot >= 500)) || fail "truth_nofp has only $tot samples"
within "$(pct "$whole" "$tot")" 95 100 && ok "truth_nofp (no frame pointers): whole from _start in $(pct "$whole" "$tot")% of $tot samples" ||
	{ fail "truth_nofp: whole in only $(pct "$whole" "$tot")%"; sort -t' ' -k2 -n "$F" | tail -3 | cut -c1-250; }
# 90.9% +- three standard errors of a share of tot samples (2 pp or more).
tol=$(awk -v n="$tot" 'BEGIN { t = 300 * sqrt(0.909 * 0.091 / (n ? n : 1)); printf "%.1f", t < 2 ? 2 : t }')
within "$(pct "$long" "$tot")" "$(awk -v t="$tol" 'BEGIN { print 90.9 - t }')" "$(awk -v t="$tol" 'BEGIN { print 90.9 + t }')" &&
	ok "truth_nofp: iterateLong $(pct "$long" "$tot")% (90.9 +- $tol)" || fail "truth_nofp: iterateLong $(pct "$long" "$tot")%, want 90.9 +- $tol"

# --- metrics ---
M=$WORK/metrics
cp "$MP/metrics" "$M" || die "read metrics"
el=$(($(date +%s) - T0))
b=$(metric proffs_batches_total "$M")
# One per 10 s window, and another block of a window for samples held
# past its cut (a walk parked for its table) that came in later.
((b >= el / 10 - 2 && b <= 2 * (el / 10 + 2))) && ok "metrics: $b batches in $el s (a 10 s window each, a few twice)" ||
	fail "metrics: $b batches in $el s"
lost=$(awk '/^proffs_lost_samples_total/ { s += $2 } END { print s + 0 }' "$M")
((lost == 0)) && ok "metrics: no sample lost" || fail "metrics: $lost samples lost"
r=$(metric 'proffs_user_stacks_total{end="root"}' "$M")
((${r:-0} > 1000)) && ok "metrics: $r user stacks walked to their root" || fail "metrics: ${r:-no} stacks ended at a root"
grep -E '^proffs_(samples_total|bpf_samples_total|processes_tracked|unwind_rows|resident_memory_bytes) ' "$M"

# --- SIGTERM, with a batch still open ---
# A process started just after a cut and stopped with the daemon before
# the next one: all its samples are in the open batch, and the first of
# them were parked while its tables were read (a new process).
wait "$FK" 2>/dev/null
while (($(date +%s) % 10 != 0)); do sleep 0.1; done
cut=$(date +%s)
sleep 0.3
# At nice -20 it keeps a CPU to itself, the tests beside it (nice 0)
# included: sharing one, a tick found it there only by chance (a
# binomial draw of the ticks: 38 +- 4.4 when half its CPU was another's),
# and stop 48's CI run saw 31 of 38 from that alone.
nice -n -20 "$TESTS_BIN/forker" 1 2000 lastreadme >"$WORK/last.out" || fail "forker lastreadme"
late=$(($(date +%s) >= cut + 10))
cpu1=$(awk '{ print $14 + $15 }' "/proc/$RUN_PID/stat")
log "daemon CPU: $(awk -v c=$((cpu1 - cpu0)) -v t="$(getconf CLK_TCK)" -v s="$el" 'BEGIN { printf "%.2f%% of a core", 100 * c / t / s }') over $el s"
t0=$(date +%s%N)
kill -TERM "$RUN_PID"
for i in $(seq 250); do kill -0 "$RUN_PID" 2>/dev/null || break; sleep 0.02; done
ms=$((($(date +%s%N) - t0) / 1000000))
# Bounded: a daemon still there 5 s on is killed (and fails below).
kill -0 "$RUN_PID" 2>/dev/null && { tail -5 "$RUN_LOG"; kill -KILL "$RUN_PID"; }
wait "$RUN_PID"; rc=$?
((rc == 0 && ms <= 2000)) && ! grep -q " $MP " /proc/mounts && ok "SIGTERM: exit 0 in $ms ms, no mount left" ||
	fail "SIGTERM: exit $rc after $ms ms (want 0 within 2000 ms, no mount)"
got=$("$PROFFS" cat --store "$STORE" /merged/cpu/comm=lastreadme/last-15m/folded.txt | awk '{ s += $NF } END { print s + 0 }')
# Its count is its CPU time x 19 Hz but for the ticks at each end, and
# a few when another task took its CPU all the same: 3.5 standard
# errors of a binomial draw at most above, >= 90% below (issue 46).
cpu_ns=$(awk '$1 == "children_cpu_ns" { print $2 }' "$WORK/last.out")
want=$(awk -v c="${cpu_ns:-0}" -v p=$PERIOD 'BEGIN { printf "%.0f", c / p }')
tol=$(awk -v w="$want" 'BEGIN { printf "%.0f", 3.5 * sqrt(w) }')
# (On a host so busy that it ran past the next cut, a part of it is in
# a closed batch: the count still says whether any was lost.)
((late)) && log "lastreadme ran past the next cut: its samples are in two batches"
if ((want >= 30 && got * 10 >= want * 9 && got <= want + tol)); then
	ok "the open batch was stored: lastreadme's $got samples for $((cpu_ns / 1000000)) ms of CPU ($want +- $tol)"
else
	fail "the open batch: lastreadme's $got samples for $((${cpu_ns:-0} / 1000000)) ms of CPU (want >= 90% of $want, at most +$tol)"
fi
"$PROFFS" check --store "$STORE" >"$WORK/check.out" 2>&1 && ok "proffs check: store sound" || { cat "$WORK/check.out"; fail "proffs check"; }
finish
