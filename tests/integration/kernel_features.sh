#!/usr/bin/env bash
# kernel_features: a kernel that refuses a BPF program costs that feature
# only. PROFFS_REFUSE (README) gives the named parts an instruction the
# verifier refuses, so the path the daemon takes on such a kernel runs
# here with this kernel's own verifier and log:
#  - PROFFS_REFUSE=offcpu,python with --offcpu: the daemon mounts and
#    samples; one error line each names the feature, the kernel and what
#    is lost, followed by the verifier's last lines (its reason: "invalid
#    read from stack"), at most 20; /prof/metrics has
#    proffs_kernel_feature 0 for offcpu and python, 1 for cpu_sampler,
#    unwind_tables, ruby, java and js; no offcpu type is served; a Python
#    program's samples are native frames only; SIGTERM exits 0.
#  - PROFFS_REFUSE=unwind_tables: the frame-pointer walk instead; truth
#    (built with frame pointers) keeps whole stacks, 10:1 within 3 sigma.
# About 40 s.
# timeout: 180
source "$(dirname "$0")/sampler_lib.bash"

MP=$WORK/mp
mkdir -p "$MP"

# refusal LOG FEATURE: the error line for FEATURE and the verifier lines
# after it.
refusal() {
	local log=$1 f=$2 n
	grep -q "error: kernel $(uname -r) refused $f: .*the verifier's last lines (prog '" "$log" ||
		{ fail "no error line naming $f and the kernel $(uname -r)"; grep 'refused' "$log" | head -3; return; }
	n=$(awk -v f="$f" '$0 ~ "refused " f ": " { on = 1; next } on && /^proffs: error:   / { n++; next } on { exit } END { print n + 0 }' "$log")
	awk -v f="$f" '$0 ~ "refused " f ": " { on = 1; next } on && /^proffs: error:   / { print; next } on { exit }' "$log" |
		tail -n 2 | grep -q 'invalid read from stack' &&
		((n >= 2 && n <= 20)) &&
		ok "$f refused: named with the kernel, then the verifier's last $n lines ending in its reason" ||
		fail "$f refused: $n verifier lines after its error line, want 2-20 ending in 'invalid read from stack'"
}

# --- offcpu and the Python walk refused ---
PROFFS_REFUSE=offcpu,python run_start "$WORK/s1" "$MP" --offcpu --batch-interval 2s
P1=$RUN_PID
refusal "$RUN_LOG" offcpu
refusal "$RUN_LOG" python
python3 "$ROOT/tests/helpers/py_known.py" 10 >"$WORK/py.out" & PY=$!; PIDS+=("$PY")
"$TESTS_BIN/truth" 10 & TP=$!; PIDS+=("$TP")
wait "$PY" || fail "py_known.py failed"
wait "$TP" || fail "truth failed"
stored
for f in offcpu:0 python:0 cpu_sampler:1 unwind_tables:1 ruby:1 java:1 js:1; do
	v=$(metric "proffs_kernel_feature{feature=\"${f%%:*}\"}")
	[[ $v == "${f#*:}" ]] && ok "metrics: proffs_kernel_feature{feature=\"${f%%:*}\"} $v" ||
		fail "metrics: proffs_kernel_feature{feature=\"${f%%:*}\"} is '${v:-missing}', want ${f#*:}"
done
[[ ! -e $MP/offcpu && ! -e $MP/merged/offcpu ]] && ok "no offcpu type served" || fail "an offcpu type is served"
F=$WORK/py.folded
cp "$MP/merged/cpu/pid=$PY/last-15m/folded.txt" "$F" || fail "read py_known's folded.txt"
n=$(fsum "$F"); p=$(fsum "$F" '\.py\)(;|$)')
((n >= 15 && p == 0)) && ok "python walk refused: $n samples of py_known.py, none with a Python frame" ||
	fail "python walk refused: $n samples of py_known.py (want >= 15), $p with Python frames (want 0)"
n=$(fsum "$MP/merged/cpu/pid=$TP/last-15m/folded.txt")
((n >= 10)) && ok "cpu samples go on: truth has $n" || fail "truth has $n samples (want >= 10 of its 6 s)"
run_stop "$P1" "$MP" && ok "SIGTERM: exit 0 with the refused features"

# --- the unwind tables refused: frame pointers ---
PROFFS_REFUSE=unwind_tables run_start "$WORK/s2" "$MP" --batch-interval 2s
P2=$RUN_PID
refusal "$RUN_LOG" unwind_tables
"$TESTS_BIN/truth" 20 & TP=$!; PIDS+=("$TP")
wait "$TP" || fail "truth failed"
stored
v=$(metric 'proffs_kernel_feature{feature="unwind_tables"}')
[[ $v == 0 ]] && ok "metrics: unwind_tables 0" || fail "metrics: unwind_tables '${v:-missing}', want 0"
F=$WORK/truth.folded
cp "$MP/merged/cpu/pid=$TP/last-15m/folded.txt" "$F" || fail "read truth's folded.txt"
n=$(fsum "$F" ';iterate(Long|Short);iterate$'); l=$(fsum "$F" ';iterateLong;iterate$')
w=$(fsum "$F" '^truth;(_start;__libc_start_main;)?(__libc_start_call_main;)?main;iterate(Long|Short);iterate$')
share=$(pct "$l" "$n"); b=$(band 90.9 "$n")
((n >= 80)) && within "$share" "$(awk -v b="$b" 'BEGIN { print 90.9 - b }')" "$(awk -v b="$b" 'BEGIN { print 90.9 + b }')" &&
	ok "frame pointers: iterateLong $share% of $n samples (90.9 +- $b)" ||
	fail "frame pointers: iterateLong $share% of $n samples (want >= 80, 90.9 +- $b)"
[[ $w == "$n" ]] && ok "frame pointers: all $n of truth's iterate samples whole from main" ||
	{ fail "frame pointers: $w of $n iterate samples whole from main"; grep iterate "$F" | head -3; }
run_stop "$P2" "$MP" && ok "SIGTERM: exit 0"
finish
