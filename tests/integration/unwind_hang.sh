#!/usr/bin/env bash
# unwind_hang: a local user's file whose reads hang cannot stall the
# daemon. hangfs (tests/helpers/hangfs.c) serves a program (truth built
# without frame pointers, with a 2 MiB section added so its section
# headers lie past 1 MiB) whose reads past 1 MiB never answer; the program
# runs from its first pages. Under the default daemon:
#  - the reads of its file (unwind tables, symbols) are abandoned and
#    counted proffs_files_refused_total{reason="timeout"};
#  - another new program started meanwhile still gets its table: its
#    stacks whole from main (>= 90% of its iterate samples, as
#    sampler_unwind judges truth_nofp);
#  - hangfs killed while reads of its file still hang (mapped reads then
#    fault with SIGBUS): the daemon lives on and samples;
#  - SIGTERM ends the daemon within 2 s (SPEC), exit 0, no mount left.
# About 25 s.
# timeout: 180
source "$(dirname "$0")/sampler_lib.bash"

MP=$WORK/mp
HF=$WORK/hfs
mkdir -p "$MP" "$HF"
head -c $((2 << 20)) /dev/zero >"$WORK/pad"
objcopy --add-section .pad="$WORK/pad" "$TESTS_BIN/truth_nofp" "$WORK/prog" || die "objcopy"
shoff=$(readelf -h "$WORK/prog" | awk '/Start of section headers/ { print $5 }')
((shoff > (1 << 20))) || die "the section headers are at $shoff, not past 1 MiB"
"$TESTS_BIN/hangfs" "$WORK/prog" $((1 << 20)) "$HF" 2>"$WORK/hangfs.log" & HPID=$!; PIDS+=("$HPID")
MOUNTS+=("$HF")
for i in $(seq 100); do [[ -x $HF/prog ]] && break; sleep 0.05; done
[[ -x $HF/prog ]] || die "hangfs did not mount"

run_start "$WORK/s" "$MP" --batch-interval 2s
t0=$(metric 'proffs_files_refused_total{reason="timeout"}')
"$HF/prog" 14 & PP=$!; PIDS+=("$PP")
sleep 3
cp "$TESTS_BIN/truth_nofp" "$WORK/other"
"$WORK/other" 8 & OP=$!; PIDS+=("$OP")
wait "$OP" || fail "the other program failed"
grep -q "hangs" "$WORK/hangfs.log" && ok "hangfs: a read of the program's file hangs ($(grep -m1 hangs "$WORK/hangfs.log"))" ||
	fail "no read of the program's file reached past 1 MiB"
stored
t1=$(metric 'proffs_files_refused_total{reason="timeout"}')
((t1 > t0)) && ok "the hung reads abandoned and counted: timeout $t0 -> $t1" ||
	fail "no hung read counted (timeout $t0 -> $t1)"
F=$WORK/other.folded
cp "$MP/merged/cpu/pid=$OP/last-15m/folded.txt" "$F" || fail "read the other program's folded.txt"
n=$(fsum "$F" ';iterate(Long|Short);iterate$')
w=$(fsum "$F" '^other;_start;__libc_start_main;__libc_start_call_main;main;iterate(Long|Short);iterate$')
((n >= 20)) && within "$(pct "$w" "$n")" 90 100 &&
	ok "the other program's table was built meanwhile: $w of $n iterate samples whole from main" ||
	{ fail "the other program: $w of $n iterate samples whole from main (want >= 20 samples, >= 90%)"; head -3 "$F"; }
# The server dies while the daemon's readers still wait on its file:
# their mapped reads fault (SIGBUS), which must end those reads, not the
# daemon.
kill "$PP" 2>/dev/null
kill -KILL "$HPID"; wait "$HPID" 2>/dev/null
sleep 2
kill -0 "$RUN_PID" 2>/dev/null && ok "the hung file's server killed: the daemon lives on" ||
	fail "the daemon died when the hung file's server did: $(tail -3 "$RUN_LOG")"
fusermount3 -u -z "$HF" 2>/dev/null
cp "$TESTS_BIN/truth_nofp" "$WORK/after"; "$WORK/after" 2 & TP=$!; PIDS+=("$TP"); wait "$TP"
stored
(($(fsum "$MP/merged/cpu/pid=$TP/last-15m/folded.txt") > 0)) && ok "and samples after it" || fail "no samples after the server died"
run_stop "$RUN_PID" "$MP" && within "$RUN_STOP_S" 0 2 &&
	ok "SIGTERM while a read hangs: exit 0 in $RUN_STOP_S s (<= 2 s)" ||
	fail "SIGTERM while a read hangs: $RUN_STOP_S s (want <= 2 s, exit 0)"
finish
