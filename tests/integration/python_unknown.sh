#!/usr/bin/env bash
# python_unknown: interpreters whose layout we do not know are each
# counted once, as unsupported_version, and their samples keep native
# frames (never a wrong Python name). Three run at once: pyenv's 2.7
# (no _PyEval_EvalFrameDefault), 3.6 (no _PyRuntime) and 3.9 (no layout).
# About 15 s.
# timeout: 120
source "$(dirname "$0")/sampler_lib.bash"

MP=$WORK/mp
mkdir -p "$MP"
PYENV=${PYENV_ROOT:-/root/.pyenv}/versions
BINS=("$PYENV/2.7.18/bin/python2.7" "$PYENV/3.6.15/bin/python3.6" "$PYENV/3.9.18/bin/python3.9")
for b in "${BINS[@]}"; do [[ -x $b ]] || die "$b is needed (pyenv's Pythons come with this machine)"; done
run_start "$WORK/s" "$MP" --batch-interval 2s
u0=$(metric 'proffs_python_processes_total{state="unsupported_version"}')
PYS=()
for b in "${BINS[@]}"; do
	"$b" -c 'import time
t = time.time()
def spin():
    while time.time() - t < 10: pass
spin()' & PYS+=($!); PIDS+=($!)
done
for p in "${PYS[@]}"; do wait "$p" || fail "pid $p failed"; done
stored
u1=$(metric 'proffs_python_processes_total{state="unsupported_version"}')
(( u1 - u0 == 3 )) && ok "three unknown interpreters counted unsupported_version, one each ($u0 -> $u1)" ||
	fail "unsupported_version went $u0 -> $u1 for three unknown interpreters (want +3)"
for i in 0 1 2; do
	F=$WORK/py$i.folded
	cp "$MP/merged/cpu/pid=${PYS[i]}/last-15m/folded.txt" "$F" || { fail "read ${BINS[i]##*/}'s folded.txt"; continue; }
	n=$(fsum "$F"); p=$(fsum "$F" '\((<string>|[^)]*\.py)\)(;|$)')
	((n >= 15 && p == 0)) && ok "${BINS[i]##*/}: $n samples, native frames only" ||
		fail "${BINS[i]##*/}: $n samples (want >= 15), $p with a Python frame (want 0)"
done
run_stop "$RUN_PID" "$MP"
finish
