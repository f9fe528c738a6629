#!/usr/bin/env bash
# The test runner: unit tests (normal and sanitizer builds), integration
# scripts, a short fuzz run. Each test's output goes to build/test-logs/;
# a failing test's log tail is printed. Exit 77 from a test means "skipped"
# (it must print why); a skip counts as a failure unless
# PROFFS_TEST_ALLOW_SKIP=1 (a machine without root or BPF). Ends with the
# line "N passed, N failed".
#
# Integration scripts live in tests/integration/*.sh and get:
#   PROFFS   the binary under test     TESTS_BIN  helper binaries
#   a line "# san: yes" in a script runs it again with the sanitizer build;
#   a line "# alone: yes" runs it with nothing else running (its checks
#   need a CPU of their own: wall-clock sample counts, stop latencies).
# The others run JOBS at a time (default 4): most of their time is spent
# waiting for a sampler, a mount or the clock, and each owns its temp dir,
# ports and mountpoints. A line "# long: yes" (a test of minutes, mostly
# waiting) starts it before everything else, so the short ones fill the
# slots around it instead of trailing after it.
# TESTS="pattern" runs only tests whose name contains the pattern.
#
# Every test has a time limit: a line "# timeout: SECONDS" in a script
# sets it (default 600); unit binaries get 600, fuzzers FUZZ_SECONDS + 120.
# Each test runs in a cgroup of its own (cgroup v2), so that past its limit
# the runner kills it and everything it started, daemons that left its
# session included (sshfs, ganesha, setsid), unmounts the FUSE mounts its
# killed daemons left dead, and counts it failed by name with the limit.
set -u
cd "$(dirname "$0")/.."
root=$PWD
logs=$root/build/test-logs
mkdir -p "$logs"
pass=0 fail=0 skip=0
failed=()
FUZZ_SECONDS=${FUZZ_SECONDS:-8}
JOBS=${JOBS:-4}

# The cgroup v2 hierarchy (hybrid hosts mount it at .../unified), and a
# parent for the tests' cgroups.
CG_ROOT=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
CG_TESTS=""
if [[ -n $CG_ROOT && -w $CG_ROOT ]]; then
	# Those of runners that were killed (their tests' cgroups empty now).
	for d in "$CG_ROOT"/proffs-tests.*; do
		[[ -d $d ]] && ! kill -0 "${d##*.}" 2>/dev/null && rmdir "$d"/*/ "$d" 2>/dev/null
	done
	CG_TESTS=$CG_ROOT/proffs-tests.$$
	mkdir -p "$CG_TESTS" 2>/dev/null || CG_TESTS=""
fi
[[ -n $CG_TESTS ]] || echo "run.sh: no writable cgroup v2 hierarchy: a test past its limit is killed with its process group only" >&2
LIMIT_DEFAULT=600
LIMIT=$LIMIT_DEFAULT # the next test's limit (start_job, run_one)

# The FUSE mounts whose daemon is gone (stat fails at once with ENOTCONN):
# those of a test killed at its limit. Other tests' live mounts answer;
# a test of its own that kills its daemon on purpose (sampler_crash) has a
# dead mount for a moment too, so a runner started by a test
# (runner_timeout) looks only under MOUNT_SCOPE, its own work dir: from
# the whole of /tmp it once unmounted sampler_crash's fresh mount.
MOUNT_SCOPE=${MOUNT_SCOPE:-}
unmount_dead() {
	local m
	while read -r m; do
		[[ $m == /tmp/* || $m == /var/tmp/* || $m == "$root"/* ]] || continue
		[[ -z $MOUNT_SCOPE || $m == "$MOUNT_SCOPE"/* ]] || continue
		if ! timeout 2 stat -t "$m" >/dev/null 2>&1; then
			fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
			echo "run.sh: unmounted $m, left by a killed test" >&2
		fi
	done < <(awk '$3 ~ /^fuse/ { print $2 }' /proc/mounts)
}

# limited NAME SECS CMD...: runs CMD in a cgroup of its own; past SECS
# kills all of it and exits 124 (the report says which limit).
limited() {
	local name=$1 secs=$2 cg="" p w rc flag
	shift 2
	flag=$(mktemp /tmp/proffs-limit.XXXXXX)
	if [[ -n $CG_TESTS ]]; then
		cg=$CG_TESTS/${name//\//_}
		mkdir -p "$cg" 2>/dev/null || cg=""
	fi
	if [[ -n $cg ]]; then
		bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@" &
	else
		setsid "$@" &
	fi
	p=$!
	(
		trap 'kill "$sp" 2>/dev/null; exit 0' TERM
		sleep "$secs" & sp=$!
		wait "$sp" || exit 0
		echo "TIMEOUT: killed at its limit of $secs s"
		echo timeout >"$flag"
		if [[ -n $cg ]]; then echo 1 >"$cg/cgroup.kill"; else kill -KILL -- -"$p"; fi
	) &
	w=$!
	wait "$p"; rc=$?
	kill "$w" 2>/dev/null; wait "$w" 2>/dev/null
	[[ -s $flag ]] && rc=124
	rm -f "$flag"
	if [[ -n $cg ]]; then
		# What the test left running once it ended (or all of it, at
		# the limit) goes with it.
		[[ -s $cg/cgroup.procs ]] && echo 1 >"$cg/cgroup.kill"
		for _ in $(seq 50); do [[ -s $cg/cgroup.procs ]] || break; sleep 0.1; done
		rmdir "$cg" 2>/dev/null
	fi
	((rc == 124)) && unmount_dead
	return "$rc"
}

selected() { [[ -z "${TESTS:-}" || "$1" == *"$TESTS"* ]]; }
logfile() { printf '%s/%s.log' "$logs" "${1//\//_}"; }

# report NAME RC SECONDS: counts and prints one result line.
report() {
	local name=$1 rc=$2 dt=$3 log
	log=$(logfile "$name")
	if ((rc == 124)) && grep -q '^TIMEOUT: killed at its limit' "$log"; then
		fail=$((fail + 1)); failed+=("$name")
		printf 'FAIL %-50s %3ds (%s)\n' "$name" "$dt" "$(grep -m1 '^TIMEOUT:' "$log" | cut -c10-)"
		tail -n 25 "$log" | sed 's/^/    | /'
	elif ((rc == 0)); then
		pass=$((pass + 1)); printf 'PASS %-50s %3ds\n' "$name" "$dt"
	elif ((rc == 77)) && [[ ${PROFFS_TEST_ALLOW_SKIP:-} == 1 ]]; then
		skip=$((skip + 1)); printf 'SKIP %-50s %s\n' "$name" "$(tail -n 1 "$log")"
	elif ((rc == 77)); then
		# A test that cannot run here is not a pass: CI has root, BPF
		# and every tool deps.sh installs, so a skip there is a defect.
		fail=$((fail + 1)); failed+=("$name")
		printf 'FAIL %-50s skipped: %s (set PROFFS_TEST_ALLOW_SKIP=1 on a machine that cannot run it)\n' \
			"$name" "$(tail -n 1 "$log")"
	else
		fail=$((fail + 1)); failed+=("$name")
		printf 'FAIL %-50s %3ds (rc %d)\n' "$name" "$dt" "$rc"
		# The failed checks first, each with the lines the test printed
		# after it (its evidence): a reader who sees only the lines next
		# to this one (CI's excerpt) still learns what failed and how.
		grep -m 8 -A 4 -E '^(FAIL|not ok|ERROR|==[0-9]+==ERROR)' "$log" | grep -v '^--$' | cut -c1-300 | sed 's/^/    ! /'
		tail -n 25 "$log" | sed 's/^/    | /'
	fi
}

run_one() { # name, command...
	local name=$1; shift
	selected "$name" || return 0
	local t0=$SECONDS rc
	limited "$name" "$LIMIT" "$@" >"$(logfile "$name")" 2>&1 </dev/null
	rc=$?
	report "$name" "$rc" $((SECONDS - t0))
}

# The pool: start_job runs a test in the background once fewer than JOBS
# are running; reap_one waits for any one of them and reports it.
declare -A job_name=() job_t0=()
reap_one() {
	local pid rc
	wait -n -p pid "${!job_name[@]}"
	rc=$?
	report "${job_name[$pid]}" "$rc" $((SECONDS - ${job_t0[$pid]}))
	unset "job_name[$pid]" "job_t0[$pid]"
}
start_job() { # name, command...
	local name=$1; shift
	selected "$name" || return 0
	while ((${#job_name[@]} >= JOBS)); do reap_one; done
	limited "$name" "$LIMIT" "$@" >"$(logfile "$name")" 2>&1 </dev/null &
	job_name[$!]=$name
	job_t0[$!]=$SECONDS
}
drain_jobs() { while ((${#job_name[@]})); do reap_one; done; }

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
# script_limit SCRIPT: its "# timeout: SECONDS" line, else the default.
script_limit() {
	local t
	t=$(sed -n 's/^# timeout: \([0-9][0-9]*\).*/\1/p' "$1" | head -1)
	echo "${t:-$LIMIT_DEFAULT}"
}
# start_it SCRIPT: one integration script (and its sanitizer twin).
start_it() {
	local s=$1 n
	n=$(basename "$s" .sh)
	LIMIT=$(script_limit "$s")
	start_job "it/$n" env PROFFS="$root/build/proffs" TESTS_BIN="$root/build/tests" ROOT="$root" bash "$s"
	if grep -q '^# san: yes' "$s"; then
		start_job "san/it/$n" env PROFFS="$root/build-san/proffs" TESTS_BIN="$root/build/tests" ROOT="$root" SAN=1 bash "$s"
	fi
}
alone=() rest=()
for s in tests/integration/*.sh; do
	[[ -f $s ]] || continue
	if grep -q '^# alone: yes' "$s"; then
		alone+=("$s")
	elif grep -q '^# long: yes' "$s"; then
		start_it "$s"
	else
		rest+=("$s")
	fi
done
for s in "${rest[@]}"; do start_it "$s"; done
LIMIT=$LIMIT_DEFAULT
for b in build/tests/test_*; do
	[[ -x $b && $b != *.d ]] && start_job "unit/$(basename "$b")" "$b"
done
for b in build-san/tests/test_*; do
	[[ -x $b && $b != *.d ]] && start_job "san/unit/$(basename "$b")" "$b"
done
LIMIT=$((FUZZ_SECONDS + 120))
for f in build/fuzz/fuzz_*; do
	[[ -x $f ]] || continue
	n=$(basename "$f")
	mkdir -p "build/corpus/$n"
	start_job "fuzz/$n" "$f" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
		"build/corpus/$n" "tests/fuzz/corpus/$n"
done
drain_jobs
for s in "${alone[@]}"; do
	n=$(basename "$s" .sh)
	LIMIT=$(script_limit "$s")
	run_one "it/$n" env PROFFS="$root/build/proffs" TESTS_BIN="$root/build/tests" ROOT="$root" bash "$s"
	if grep -q '^# san: yes' "$s"; then
		run_one "san/it/$n" env PROFFS="$root/build-san/proffs" TESTS_BIN="$root/build/tests" ROOT="$root" SAN=1 bash "$s"
	fi
done

[[ -n $CG_TESTS ]] && rmdir "$CG_TESTS" 2>/dev/null
if ((pass + fail + skip == 0)); then
	fail=1; failed+=("TESTS=${TESTS:-}")
	echo "FAIL no test matched TESTS='${TESTS:-}'"
fi
# Again at the end, with what failed: a reader of the last lines only
# (CI's excerpt) learns it too.
for name in "${failed[@]}"; do
	printf 'failed: %s\n' "$name"
	[[ -f $(logfile "$name") ]] && grep -m 3 -A 3 -E '^(FAIL|not ok|ERROR|==[0-9]+==ERROR)' "$(logfile "$name")" | grep -v '^--$' | cut -c1-300 | sed 's/^/    ! /'
done
echo "$pass passed, $fail failed, $skip skipped"
((fail == 0))
