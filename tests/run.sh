#!/usr/bin/env bash
# The test runner: unit tests (normal and sanitizer builds), integration
# scripts, a short fuzz run. Each test's output goes to build/test-logs/;
# a failing test's log tail is printed. Exit 77 from a test means "skipped"
# (it must print why). Ends with the line "N passed, N failed".
#
# Integration scripts live in tests/integration/*.sh and get:
#   PROFFS   the binary under test     TESTS_BIN  helper binaries
#   a line "# san: yes" in a script runs it again with the sanitizer build.
# TESTS="pattern" runs only tests whose name contains the pattern.
set -u
cd "$(dirname "$0")/.."
root=$PWD
logs=$root/build/test-logs
mkdir -p "$logs"
pass=0 fail=0 skip=0
failed=()
FUZZ_SECONDS=${FUZZ_SECONDS:-20}

run_one() { # name, command...
	local name=$1; shift
	if [[ -n "${TESTS:-}" && "$name" != *"$TESTS"* ]]; then return; fi
	local log="$logs/${name//\//_}.log" t0=$SECONDS rc
	"$@" >"$log" 2>&1 </dev/null
	rc=$?
	local dt=$((SECONDS - t0))
	if ((rc == 0)); then
		pass=$((pass + 1)); printf 'PASS %-50s %3ds\n' "$name" "$dt"
	elif ((rc == 77)); then
		skip=$((skip + 1)); printf 'SKIP %-50s %s\n' "$name" "$(tail -n 1 "$log")"
	else
		fail=$((fail + 1)); failed+=("$name")
		printf 'FAIL %-50s %3ds (rc %d)\n' "$name" "$dt" "$rc"
		tail -n 25 "$log" | sed 's/^/    | /'
	fi
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/lsan.supp}

# Both builds must be there: a missing one is a failure, not a pass with
# fewer tests.
for d in build build-san; do
	if [[ ! -x $d/proffs ]]; then
		fail=$((fail + 1)); failed+=("$d")
		echo "FAIL $d/ is not built (make all; make SAN=1 all)"
	fi
done
for b in build/tests/test_*; do
	[[ -x $b && $b != *.d ]] && run_one "unit/$(basename "$b")" "$b"
done
for b in build-san/tests/test_*; do
	[[ -x $b && $b != *.d ]] && run_one "san/unit/$(basename "$b")" "$b"
done
for s in tests/integration/*.sh; do
	[[ -f $s ]] || continue
	n=$(basename "$s" .sh)
	run_one "it/$n" env PROFFS="$root/build/proffs" TESTS_BIN="$root/build/tests" ROOT="$root" bash "$s"
	if grep -q '^# san: yes' "$s"; then
		run_one "san/it/$n" env PROFFS="$root/build-san/proffs" TESTS_BIN="$root/build/tests" ROOT="$root" SAN=1 bash "$s"
	fi
done
for f in build/fuzz/fuzz_*; do
	[[ -x $f ]] || continue
	n=$(basename "$f")
	mkdir -p "build/corpus/$n"
	run_one "fuzz/$n" "$f" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
		"build/corpus/$n" "tests/fuzz/corpus/$n"
done

if ((pass + fail + skip == 0)); then
	fail=1; failed+=("TESTS=${TESTS:-}")
	echo "FAIL no test matched TESTS='${TESTS:-}'"
fi
((${#failed[@]})) && printf 'failed: %s\n' "${failed[*]}"
echo "$pass passed, $fail failed, $skip skipped"
((fail == 0))
