#!/usr/bin/env bash
# timeout: 240 (three times its longest run on a clean clone, stop 48)
# sampler_unwind: stacks of code built without frame pointers are whole
# (SPEC §3), checked through the mounted tree of one `proffs run` at 99 Hz:
#  - the 10:1 truth program built -O2 -fomit-frame-pointer: iterateLong
#    90.9% +- 2 pp, and the stack _start;...;main;iterateLong;iterate
#  - deep recursion (150 frames, past the 127-frame budget): every stack
#    cut at the budget with [truncated], no frame the program lacks
#  - a callback under libc's qsort (main -> chainA -> chainB -> qsort ->
#    cmpKeys): the whole chain in >= 95% of cmpKeys' samples
#  - a SIGPROF handler: the walk continues through the signal trampoline
#    into the interrupted code, down to _start
#  - Debian's own python3 (a json loop), gzip -9 and sha256sum: >= 95% of
#    their samples reach _start or __libc_start_call_main
#  - a fork storm of 50 ms no-frame-pointer children, and a storm of
#    fresh copies of a binary (each a file with no table yet, so its
#    first samples are finished in user space): >= 90% complete
#  - two libraries without frame pointers loaded in turn at one address
#    (dlopen, dlclose; two frame layouts): >= 95% of their samples whole
#  - /prof/metrics has the unwind tables and stacks by how walks ended
#  - a file whose first run exited before its table was read (a slow
#    build, PROFFS_UNWIND_DELAY; the run a zombie not yet reaped): its
#    next run gets whole stacks
#  - a stack deeper than a sample's stack copy (80 frames of 1 KiB, its
#    table late): whole, the rest read from the live process
#  - the row space grows by chunks as tables load (made by the helper
#    once the daemon dropped CAP_BPF) and shrinks when they idle out
#
# alone: yes (shares of whole stacks: the walk finishes in user space when
# a table waits behind other tests' table builds on a loaded host)
source "$(dirname "$0")/sampler_lib.bash"

# whole_share SRC COPY MIN ALL_RE WHOLE_RE WHAT: of SRC's samples matching
# ALL_RE (all if empty), at least MIN, 95-100% match WHOLE_RE; on a miss
# the commonest (root ... leaf (depth)) pairs are printed.
whole_share() {
	local src=$1 f=$2 min=$3 all whole
	cp "$src" "$f" || { fail "$6: no profile at $src"; return; }
	all=$(FOLDED_SCALE=1 fsum "$f" "$4")
	whole=$(FOLDED_SCALE=1 fsum "$f" "$5")
	log "$6: $whole of $all samples whole"
	((all >= min)) && within "$(pct "$whole" "$all")" 95 100 &&
		ok "$6: $(pct "$whole" "$all")% of $all stacks whole" ||
		{ fail "$6: only $whole of $all stacks whole (want >= 95% of >= $min)"
		  awk '{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); c[f[2] " ... " f[k] " (" k ")"] += n } END { for (x in c) print c[x], x }' "$f" | sort -nr | head -5; }
}

HZ=99
FOLDED_SCALE=$((1000000000 / HZ)) # folded.txt counts samples
STORE=$WORK/store
MP=$WORK/mp
mkdir -p "$MP"
# Debian's own python3 (a pyenv shim may come first on PATH).
PY3=/usr/bin/python3
for t in $PY3 gzip sha256sum; do command -v $t >/dev/null || die "$t is not installed (Debian's; deps.sh)"; done

# remap's two libraries: one source, two frame layouts, no frame pointers
cat >"$WORK/remaplib.c" <<'C'
volatile unsigned long rsink;
__attribute__((noinline)) static void INNER(void)
{
	for (unsigned long i = 0; i < 40000000; i++)
		rsink = rsink * 31 + i;
}
__attribute__((noinline)) static void BURN(void)
{
	volatile char pad[PAD];
	pad[0] = 1;
	INNER();
	rsink += pad[0];
}
void remapBurn(void)
{
	BURN();
	rsink++;
}
C
for l in A:64 B:3000; do
	cc -O2 -fomit-frame-pointer -shared -fPIC -DPAD=${l#*:} -DINNER=remapInner${l%%:*} -DBURN=remapBurn${l%%:*} \
		-o "$WORK/libremap${l%%:*}.so" "$WORK/remaplib.c" || die "cc libremap${l%%:*}.so"
done

run_start "$STORE" "$MP" --hz $HZ --batch-interval 5s
log "daemon up (pid $RUN_PID)"

"$TESTS_BIN/truth_nofp" 30 20 60 & TP=$!; PIDS+=("$TP")
"$TESTS_BIN/deep" 150 6 & DP=$!; PIDS+=("$DP")
"$TESTS_BIN/qsortcb" 6 || fail "qsortcb failed"
"$TESTS_BIN/qsortcb" 4 signal >/dev/null 2>&1 & QS=$!; PIDS+=("$QS")
cat >"$WORK/loop.py" <<'PY'
import json, sys, time
t0 = time.time()
d = {"a": list(range(200)), "b": {"x": "y" * 50}}
while time.time() - t0 < float(sys.argv[1]):
    json.loads(json.dumps(d))
PY
# Debian's own binaries, told apart from other users' runs by pid.
"$PY3" "$WORK/loop.py" 10 & PY=$!
wait "$PY" || fail "python3 loop failed"
wait "$QS"
gzip -9 </dev/urandom >/dev/null & GZ=$!
sleep 5
kill "$GZ"; wait "$GZ" 2>/dev/null
head -c 400000000 /dev/urandom >"$WORK/big.bin"
sha256sum "$WORK/big.bin" >/dev/null & SH=$!
wait "$SH" || fail "sha256sum failed"
rm -f "$WORK/big.bin"
"$TESTS_BIN/forker_nofp" 80 50 fknofp >"$WORK/forker.out" || fail "forker_nofp failed"
# Fresh copies: new inodes, so no table exists when their first sample comes.
for i in $(seq 25); do
	cp "$TESTS_BIN/forker_nofp" "$WORK/fresh$i"
	"$WORK/fresh$i" 1 60 frnofp >/dev/null || fail "fresh copy $i failed"
done
wait "$TP" || fail "truth_nofp failed"
# (a first run has the tables built: a new file's first samples are
# walked in user space, which cannot always follow a library that is
# gone by the time it reads the process's mappings)
"$TESTS_BIN/remap" 1 "$WORK/libremapA.so" "$WORK/libremapB.so" >/dev/null || fail "remap (first run) failed"
"$TESTS_BIN/remap" 6 "$WORK/libremapA.so" "$WORK/libremapB.so" >"$WORK/remap.out" & RP=$!
wait "$RP" || fail "remap failed"
flushed 6
R=last-15m

# --- the 10:1 truth without frame pointers ---
F=$WORK/truth.folded
cp "$MP/merged/cpu/pid=$TP/$R/folded.txt" "$F" || die "read truth_nofp folded.txt"
tot=$(fsum "$F"); long=$(fsum "$F" ';iterateLong(;|$)')
n=$((tot / (1000000000 / HZ)))
share=$(pct "$long" "$tot")
log "truth_nofp: $n samples, iterateLong $share%"
((n >= 500)) || fail "truth_nofp has only $n samples (want >= 500: the host is too busy to judge)"
within "$share" 88.9 92.9 && ok "truth_nofp: iterateLong $share% (90.9 +- 2)" || { fail "truth_nofp: iterateLong $share%, want 90.9 +- 2"; sort -t' ' -k2 -n "$F" | tail -5; }
whole=$(fsum "$F" '^truth_nofp;_start;__libc_start_main;__libc_start_call_main;main;iterateLong;iterate(;[^;]*_\[k\])*$')
wp=$(pct "$whole" "$long")
within "$wp" 95 100 && ok "truth_nofp: _start;...;main;iterateLong;iterate whole in $wp% of iterateLong's samples" ||
	{ fail "truth_nofp: whole stack in only $wp% of iterateLong's samples"; grep iterateLong "$F" | sort -t' ' -k2 -n | tail -5; }

# --- qsort callback ---
F=$WORK/qsort.folded
cp "$MP/merged/cpu/comm=qsortcb/$R/folded.txt" "$F" || die "read qsortcb folded.txt"
# cmpKeys' own samples: it is the innermost user frame (the signal run's
# handler also lands on top of cmpKeys; those are judged below).
cmp=$(fsum "$F" ';cmpKeys(;[^;]*_\[k\])*$')
CHAIN_RE='^qsortcb;_start;__libc_start_main;__libc_start_call_main;main;chainA;chainB;[^;]*qsort[^;]*;(msort[^;]*;)*cmpKeys(;[^;]*_\[k\])*$'
chain=$(fsum "$F" "$CHAIN_RE")
cp_=$(pct "$chain" "$cmp")
within "$cp_" 95 100 && ok "qsort: main;chainA;chainB;qsort;...;cmpKeys whole in $cp_% of cmpKeys' $cmp samples" ||
	{ fail "qsort: whole chain in only $cp_% of cmpKeys' $cmp samples"
	  grep -E ';cmpKeys(;[^;]*_\[k\])* [0-9]+$' "$F" | grep -Ev "${CHAIN_RE%\$} [0-9]+\$" | head -5 | cut -c1-300; }

# --- through a signal handler ---
hb=$(fsum "$F" ';handlerBurn(;|$)')
# (__restore_rt has no symbol in Debian's libc: libc.so.6+0xOFFSET)
hbw=$(fsum "$F" '^qsortcb;_start;[^ ]*;main;chainA;[^ ]*;(__restore_rt|libc[.]so[.]6[+]0x[0-9a-f]+);on_prof;handlerBurn(;[^;]*_\[k\])*$')
hp=$(pct "$hbw" "$hb")
if ((hb == 0)); then
	fail "signal: no samples in handlerBurn"
else
	within "$hp" 90 100 && ok "signal: $hp% of handlerBurn's samples go on through __restore_rt to main and _start" ||
		{ fail "signal: only $hp% of handlerBurn's samples continue past the trampoline"; grep handlerBurn "$F" | head -5; }
fi

# --- Debian's own binaries ---
# Reaching the root: _start (by name, or the stripped executable's entry
# code as module+0xOFFSET), or glibc's __libc_start_call_main. Counted
# over the samples that have a user stack (a process in exit_mmap or
# execve has none left to walk).
reach_root() { # COMM EXE
	local comm=$1 exe=$2 entry
	entry=$(readelf -h "$exe" | awk '/Entry point/ { print $4 }')
	awk -v e="$((entry))" '
		function hex(s,   i, v) { v = 0; s = tolower(s); for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
		{ n = $NF; sub(/ [0-9]+$/, ""); split($0, f, ";")
		  if (f[2] ~ /_\[k\]$/ || f[2] == "") next
		  tot += n
		  ok = ($0 ~ /;__libc_start_call_main;/ || f[2] == "_start")
		  if (!ok && f[2] ~ /[+]0x[0-9a-f]+$/) { o = f[2]; sub(/.*[+]0x/, "", o); o = hex(o); ok = (o >= e && o < e + 64) }
		  if (ok) good += n }
		END { if (tot == 0) print "nan 0"; else printf "%.1f %d\n", 100 * good / tot, tot }' "$WORK/$comm.folded"
}
for c in python3:$PY:$PY3 gzip:$GZ:gzip sha256sum:$SH:sha256sum; do
	IFS=: read -r comm pid exe <<<"$c"
	exe=$(readlink -f "$(command -v "$exe")")
	cp "$MP/merged/cpu/pid=$pid/$R/folded.txt" "$WORK/$comm.folded" || { fail "no samples of $comm"; continue; }
	read -r rp rn <<<"$(reach_root "$comm" "$exe")"
	nsamp=$rn # folded.txt counts samples
	within "$rp" 95 100 && ok "$comm: $rp% of $nsamp samples with a user stack reach _start/__libc_start_call_main" ||
		{ fail "$comm: only $rp% of $nsamp samples reach the root"; grep -v '_start' "$WORK/$comm.folded" | sort -t' ' -k2 -n | tail -5 | cut -c1-300; }
done

# --- deep recursion: past the frame budget, a marker ---
# Every stack is cut at the budget: 127 user frames, then [truncated],
# and holds only the program's frames. (A batch once named all its user
# markers after the first one it met: [truncated] read [unwind: outside
# mappings] in the minutes where another process's walk ended so.)
wait "$DP" || fail "deep 150 failed"
F=$WORK/deep150.folded
cp "$MP/merged/cpu/pid=$DP/$R/folded.txt" "$F" || die "read deep150 folded.txt"
# (its start-up samples, in ld.so before main, are not judged)
n=$(FOLDED_SCALE=1 fsum "$F" ';recurse;'); tr=$(FOLDED_SCALE=1 fsum "$F" '^deep150;\[truncated\];(recurse;)+burn(;touch)?(;[^;]*_\[k\])*$')
cut=$(awk '/;recurse;/ { n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); u = 0
	for (i = 3; i <= k; i++) u += (f[i] !~ /_\[k\]$/)
	if (f[2] == "[truncated]" && u == 127) s += n } END { print s + 0 }' "$F")
# A PLT stub (clock_gettime's) is named after the symbol before it, _init;
# a sample inside the vDSO's clock_gettime has its own name for it.
odd=$(awk '/;recurse;/ { sub(/ [0-9]+$/, ""); k = split($0, f, ";"); for (i = 3; i <= k; i++) if (f[i] !~ /^(recurse|burn|touch|now|_init|clock_gettime|__clock_gettime.*|__vdso_clock_gettime|.*_\[k\])$/) { print f[i]; exit } }' "$F" | head -1)
log "deep150: $n samples, $(pct "$tr" "$n")% end in [truncated];recurse...;burn"
((n >= 100)) && [[ $cut == "$n" && -z $odd ]] &&
	ok "deep150: all $n stacks cut at the budget (127 frames, then [truncated]), no frame the program lacks" ||
	{ fail "deep150: $cut of $n stacks cut at the budget with [truncated]; frame not in the program: '${odd}'"; awk '{ k = split($0, f, ";"); print f[2], k, $NF }' "$F" | sort | uniq -c | sort -n | tail -3; }

# --- short-lived processes ---
for comm in fknofp frnofp; do
	F=$WORK/$comm.folded
	cp "$MP/merged/cpu/comm=$comm/$R/folded.txt" "$F" || { fail "no samples of $comm"; continue; }
	# Over the samples with a user stack (in exit_mmap a process has none).
	all=$(fsum "$F")
	tot=$(awk -v k="$FOLDED_SCALE" '{ n = $NF; sub(/ [0-9]+$/, ""); split($0, f, ";"); if (f[2] !~ /_\[k\]$/ && f[2] != "") s += n } END { printf "%.0f\n", s * k }' "$F")
	good=$(fsum "$F" "^$comm;_start;__libc_start_main;__libc_start_call_main;main;childWork(;|$)")
	gp=$(pct "$good" "$tot")
	log "$comm: $(pct "$((all - tot))" "$all")% of samples have no user stack (exit)"
	if within "$gp" 90 100; then
		ok "$comm: $gp% of $((tot / (1000000000 / HZ))) samples complete (main;childWork under _start)"
	else
		fail "$comm: only $gp% of samples complete"
		grep -Ev "^$comm;_start;__libc_start_main;__libc_start_call_main;main;childWork(;|$| )" "$F" | sort -t' ' -k2 -n | tail -5 | cut -c1-300
	fi
done

# --- metrics ---
M=$WORK/metrics
cp "$MP/metrics" "$M" || die "read metrics"
grep -Eq '^proffs_unwind_tables\{kind="table"\} [1-9]' "$M" && ok "metrics: unwind tables loaded" || fail "metrics: no unwind tables"
grep -Eq '^proffs_unwind_rows [1-9]' "$M" && grep -Eq '^proffs_unwind_table_bytes [1-9]' "$M" && ok "metrics: rows and bytes" || fail "metrics: no rows/bytes"
grep -Eq '^proffs_user_stacks_total\{end="root"\} [1-9]' "$M" && ok "metrics: stacks by how their walk ended" || fail "metrics: no root-ended stacks counted"
grep -Eq '^proffs_unwind_pending_total\{outcome="finished"\} [1-9]' "$M" && ok "metrics: walks finished in user space counted" ||
	fail "metrics: no walk finished in user space (the fresh copies should need it)"
grep -E '^proffs_(unwind|user_stacks)' "$M"
# The row space grows by 256 KiB chunks as tables load. All but the first
# are made after the daemon dropped CAP_BPF, by its helper; they are
# packed (a table of up to a chunk never straddles two), and the maps
# hold little besides them (rules and the files map: 768 KiB).
rows=$(metric proffs_unwind_rows "$M")
chunks=$(metric proffs_unwind_row_chunks "$M")
mb=$(metric proffs_unwind_map_bytes "$M")
if ((${chunks:-0} >= 2 && chunks * 32768 >= rows && chunks <= (rows + 32767) / 32768 + 2 &&
	mb <= chunks * 262144 + 1048576)); then
	ok "row chunks: $chunks for $rows rows ($mb bytes of unwind maps)"
else
	fail "row chunks: ${chunks:-none} for ${rows:-?} rows, ${mb:-?} map bytes"
fi

# --- one address, another file: libraries loaded in turn ---
# (the BPF walk keeps what it read of a process's mappings while the
# process's mapping count says nothing changed: a library unloaded and
# another loaded in its place must be walked with its own rules; a
# stale picture reads the return address from the other layout's slot,
# and the stack breaks under remapInner. Names are not judged here:
# user space names an address by the mappings it knows when it reads
# the record, and may name the other library's function)
read -r _ _ same _ loads <"$WORK/remap.out"
log "remap: the other library's address reused in ${same:-?} of ${loads:-?} loads"
((${same:-0} * 2 >= ${loads:-1})) || fail "remap: libraries reused an address in only ${same:-?} of ${loads:-?} loads"
whole_share "$MP/merged/cpu/pid=$RP/$R/folded.txt" "$WORK/remap.folded" 200 ';remapInner[AB](;[^;]*_\[k\])*$' \
	'^remap;_start;__libc_start_main;__libc_start_call_main;main;cycle;remapBurn;remapBurn[AB];remapInner[AB](;[^;]*_\[k\])*$' \
	"libraries loaded in turn at one address (remap)"

run_stop "$RUN_PID" "$MP" && ok "SIGTERM: exit 0, unmounted"

# --- the first process to need a table exits before it is read ---
# A slow build of one file (PROFFS_UNWIND_DELAY) lets a fresh binary's
# first run exit before its table is read through it; the next run of the
# same file must get its table (the daemon asks again through a live
# process), not keep "no table" while the file stays in use.
PROFFS_UNWIND_IDLE=3 PROFFS_UNWIND_DELAY=1000:$WORK/once_nofp run_start "$STORE" "$MP" --hz $HZ --batch-interval 1s
cp "$TESTS_BIN/truth_nofp" "$WORK/once_nofp"
# The first run stays a zombie (its parent reaps it after 3 s) while its
# table is read: it answers kill(pid, 0) but has no maps or root left.
/usr/bin/python3 -c '
import os, sys, time
p = os.fork()
if p == 0:
    os.execv(sys.argv[1], [sys.argv[1], "0.3"])
time.sleep(3)
sys.exit(os.waitpid(p, 0)[1] != 0)' "$WORK/once_nofp" >/dev/null & ZP=$!; PIDS+=("$ZP")
sleep 0.8
"$WORK/once_nofp" 5 >/dev/null & P2=$!; PIDS+=("$P2")
wait "$ZP" || fail "the short run failed"
wait "$P2" || fail "the second run failed"
sleep 3
# The old code left every stack "no table" (0%).
whole_share "$MP/merged/cpu/pid=$P2/$R/folded.txt" "$WORK/once.folded" 200 ';iterate(;|$)' \
	'^once_nofp;_start;__libc_start_main;__libc_start_call_main;main;iterate(Long|Short);iterate(;|$)' \
	"second run of a file whose first reader exited"
gone=$(metric 'proffs_unwind_builds_total{event="requester_exited"}')
((${gone:-0} >= 1)) && ok "metrics: $gone builds given up for an exited process" || fail "metrics: requester_exited is ${gone:-missing}"

# --- chunks given back ---
# python3.11's own table spans chunks; once it has been idle past
# PROFFS_UNWIND_IDLE (3 s) and the worker's sweep (every 10 s) ran, the
# chunks no table uses any more are freed.
"$PY3" "$WORK/loop.py" 3
c1=$(metric proffs_unwind_row_chunks)
c2=$c1
for _ in $(seq 30); do
	sleep 1
	c2=$(metric proffs_unwind_row_chunks)
	((c2 < c1)) && break
done
((${c1:-0} >= 3 && ${c2:-99} < c1)) && ok "row chunks: $c1 while python3 ran, $c2 once its table was idle" ||
	fail "row chunks: $c1 while python3 ran, still $c2 after 30 s"
run_stop "$RUN_PID" "$MP"

# --- a stack deeper than the copy a sample carries ---
# bigframes: 80 frames of 1 KiB under main, a fresh file whose table is
# built 1.5 s late, so its samples are finished in user space from their
# stack copy (60 KiB at most), and the rest of the stack is read from the
# live process: whole from _start, not cut at the copy's end.
PROFFS_UNWIND_DELAY=1500:$WORK/bigframes run_start "$STORE" "$MP" --hz $HZ --batch-interval 1s
cp "$TESTS_BIN/bigframes" "$WORK/bigframes"
"$WORK/bigframes" 80 3 || fail "bigframes failed"
sleep 3
deep80=$(printf ';deepframe%.0s' $(seq 80))
whole_share "$MP/merged/cpu/comm=bigframes/$R/folded.txt" "$WORK/big.folded" 150 '' \
	"^bigframes;_start;__libc_start_main;__libc_start_call_main;main$deep80;burn(;[^;]*)*\$" \
	"a stack deeper than the copy (bigframes: 80 frames of 1 KiB)"
run_stop "$RUN_PID" "$MP"
finish
