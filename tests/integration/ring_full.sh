#!/usr/bin/env bash
# ring_full: a sample whose walk needs a table not built yet carries a
# copy of its stack; when the ring has no room for the copy, the sample is
# kept and its stack ends in [unwind: no table] (README). Two busy copies
# of a program without frame pointers whose table is held back 4 s
# (PROFFS_UNWIND_DELAY), sampled at 999 Hz: ~500 copies of up to 28 KB
# per 250 ms drain overflow the 4 MiB ring. Every sample is kept: none
# counted lost, its stacks end in the marker, and the rest (finished
# from their copies) are whole from main.
# About 20 s.
# timeout: 120
# alone: yes (the count is judged against the programs' CPU time at 999
# Hz: beside the parallel tests the samples were 75% and 86% of those
# ticks in two CI runs, none counted lost; where the rest went under that
# load is not found)
source "$(dirname "$0")/sampler_lib.bash"

MP=$WORK/mp
mkdir -p "$MP"
cp "$TESTS_BIN/truth_nofp" "$WORK/burst"
PROFFS_UNWIND_DELAY=4000:$WORK/burst run_start "$WORK/s" "$MP" --hz 999 --batch-interval 2s
sleep 1
B=()
# Each run by a python3 that prints its CPU time once it has ended.
W=()
for i in 1 2; do
	python3 -c 'import resource, subprocess, sys
p = subprocess.Popen(sys.argv[1:]); print(p.pid, flush=True); p.wait()
r = resource.getrusage(resource.RUSAGE_CHILDREN); print(r.ru_utime + r.ru_stime)' "$WORK/burst" 3 >"$WORK/b$i.out" &
	W+=($!); PIDS+=($!)
done
wait "${W[@]}"
B=($(head -qn1 "$WORK"/b[12].out))
cpu=$(tail -qn1 "$WORK"/b[12].out | awk '{ s += $1 } END { print s }')
sleep 5 # the held-back table, then the parked walks
stored
F=$WORK/burst.folded
cat "$MP"/merged/cpu/pid={"${B[0]}","${B[1]}"}/last-15m/folded.txt >"$F" 2>/dev/null
n=$(fsum "$F"); nt=$(fsum "$F" '\[unwind: no table\]')
whole=$(fsum "$F" '^burst;_start;__libc_start_main;__libc_start_call_main;main;iterate(Long|Short);iterate(;[^;]*_\[k\])*$')
exp=$(awk -v c="$cpu" 'BEGIN { printf "%.0f", c * 999 }')
log "burst: $n samples, CPU time says $exp; $nt end in [unwind: no table], $whole whole"
((nt > 0)) && ok "the ring overflowed: $nt samples kept with stacks ending in [unwind: no table]" ||
	fail "no sample ends in [unwind: no table] ($n samples): the ring never overflowed"
# Kept, not dropped: nothing counted lost for a full ring, and the count
# near the programs' CPU time x 999 (a tick-accurate count is not the
# claim here: at 999 Hz on a busy host the timer itself misses ticks).
lost=$(awk '/^proffs_lost_samples_total/ { s += $2 } END { print s + 0 }' "$MP/metrics")
((lost == 0 && n * 10 >= exp * 9)) && ok "every sample kept: none lost, $n for $exp ticks of CPU time" ||
	fail "burst: $lost samples lost, $n kept for $exp ticks of CPU time (want none lost, >= 90%)"
((whole + nt >= n * 95 / 100)) && ok "the others whole from _start: $whole" ||
	{ fail "burst: $whole whole and $nt no-table of $n"; sort -t' ' -k2 -n "$F" | tail -4; }
run_stop "$RUN_PID" "$MP"
finish
