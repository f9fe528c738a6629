#!/usr/bin/env bash
# timeout: 120 (three times its longest run on a clean clone, stop 48)
# sampler_signal: SIGTERM ends `proffs run` within 2 s (SPEC §3), exit 0,
# no mount left, the open batch stored, however many other mount
# namespaces hold a copy of the mount. Copies come from every container
# start, a systemd service with PrivateTmp=, or any local user:
#  - root: unshare -m --propagation private sleep 600
#  - nobody: unshare -Urm sleep 600 (a user namespace of its own)
#  - three of each at once
# The copies keep the FUSE connection alive after the daemon's own mount
# is detached; a daemon that waited for it to end never exited. The
# copies left behind must fail (ENOTCONN) at once, never hang.
# Also its priority: started in a session of its own (root's run, as
# systemd starts it), the daemon's scheduling group (autogroup) is at
# nice -10; started inside the test's session (nobody's run), the test's
# group keeps its nice, and the log says why the daemon cannot help it.
# alone: yes (a stop latency)
source "$(dirname "$0")/sampler_lib.bash"

STORE=$WORK/store
MP=$WORK/mp
mkdir -p "$MP"
command -v unshare >/dev/null && command -v setpriv >/dev/null && command -v nsenter >/dev/null ||
	die "unshare, setpriv and nsenter (util-linux) are needed"
# nobody must reach the mountpoint to copy it: WORK is 0700.
chmod 711 "$WORK"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)

# holds PID: does process PID see a copy of MP in its own mount namespace?
holds() { [[ $(readlink "/proc/$1/ns/mnt") != "$(readlink /proc/self/ns/mnt)" ]] &&
	grep -q " $MP " "/proc/$1/mountinfo" 2>/dev/null; }

AG_ON=$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null || echo 0)
AG_SELF=$(cat /proc/self/autogroup 2>/dev/null)
for mode in root nobody many; do
	if [[ $mode == root ]]; then RUN_SETSID=1 run_start "$STORE" "$MP"; else run_start "$STORE" "$MP"; fi
	ni=$(awk '{ print $19 }' "/proc/$RUN_PID/stat")
	((ni == -10)) || fail "$mode: the daemon runs at nice $ni (want -10)"
	if [[ $AG_ON != 1 ]]; then
		((ni == -10)) && ok "$mode: nice -10 (autogroup is off in this kernel: the nice value alone ranks it)"
	elif [[ $mode == root ]]; then
		ag=$(cat "/proc/$RUN_PID/autogroup")
		[[ $ag == *"nice -10" && $ag != "${AG_SELF% nice*} nice"* ]] &&
			ok "root: a daemon leading its session raises its own scheduling group ($ag)" ||
			fail "root: the daemon's scheduling group is '$ag' (want its own at nice -10; the test's is '$AG_SELF')"
	elif [[ $mode == nobody ]]; then
		ag=$(cat "/proc/$RUN_PID/autogroup")
		if [[ $ag == "$AG_SELF" && $(cat /proc/self/autogroup) == "$AG_SELF" ]] &&
			grep -q "started inside another session" "$RUN_LOG"; then
			ok "nobody: started inside the test's session, the daemon leaves its group alone ($ag) and says so"
		else
			fail "nobody: the daemon's group '$ag', the test's now '$(cat /proc/self/autogroup)' (was '$AG_SELF'); log: $(grep -m1 session "$RUN_LOG")"
		fi
	fi
	copies=()
	case $mode in
	root) unshare -m --propagation private sleep 600 & copies+=($!) ;;
	nobody) "${NOBODY[@]}" unshare -Urm sleep 600 & copies+=($!) ;;
	many)
		for i in 1 2 3; do
			unshare -m --propagation private sleep 600 & copies+=($!)
			"${NOBODY[@]}" unshare -Urm sleep 600 & copies+=($!)
		done
		;;
	esac
	PIDS+=("${copies[@]}")
	# (unshare execs sleep: $! is the process that holds the copy)
	for p in "${copies[@]}"; do
		for i in $(seq 100); do holds "$p" && break; sleep 0.05; done
		holds "$p" || die "$mode: process $p holds no copy of the mount"
	done
	# 1.5 s of CPU just before SIGTERM: it is in the batch still open.
	"$TESTS_BIN/forker" 1 1500 "ns$mode" >"$WORK/$mode.out" || fail "$mode: forker"
	t0=$(date +%s%N)
	kill -TERM "$RUN_PID"
	for i in $(seq 250); do kill -0 "$RUN_PID" 2>/dev/null || break; sleep 0.02; done
	ms=$((($(date +%s%N) - t0) / 1000000))
	if kill -0 "$RUN_PID" 2>/dev/null; then
		fail "$mode (${#copies[@]} copies): the daemon still runs $ms ms after SIGTERM"
		tail -5 "$RUN_LOG"
		kill -KILL "$RUN_PID"; wait "$RUN_PID" 2>/dev/null
		fusermount3 -u -z "$MP" 2>/dev/null
		continue
	fi
	wait "$RUN_PID"; rc=$?
	if ((rc == 0 && ms <= 2000)) && ! grep -q " $MP " /proc/mounts; then
		ok "$mode (${#copies[@]} copies of the mount elsewhere): SIGTERM ends the daemon in $ms ms, exit 0, no mount left"
	else
		fail "$mode: exit $rc after $ms ms (want 0 within 2000 ms, no mount)"; tail -5 "$RUN_LOG"
	fi
	grep -q "failed to unmount\|cannot abort" "$RUN_LOG" && fail "$mode: $(grep -m1 "failed to unmount\|cannot abort" "$RUN_LOG")"
	# The open batch: the child's samples are in the store.
	got=$("$PROFFS" cat --store "$STORE" "/merged/cpu/comm=ns$mode/last-15m/folded.txt" | awk '{ s += $NF } END { print s + 0 }')
	# Its child had a CPU of its own (this test runs alone): its count is
	# its CPU time x 19 Hz but for the tick at each end; >= 90% of it.
	cns=$(awk '$1 == "children_cpu_ns" { print $2 }' "$WORK/$mode.out")
	want=$(awk -v c="${cns:-0}" 'BEGIN { printf "%.0f", c * 19 / 1e9 }')
	((want >= 20 && got * 10 >= want * 9 && got <= want + 2)) &&
		ok "$mode: the open batch was stored ($got samples for $((${cns:-0} / 1000000)) ms of CPU at 19 Hz: $want)" ||
		fail "$mode: the open batch: $got samples of ns$mode for $((${cns:-0} / 1000000)) ms of CPU (want >= 90% of $want, and $want >= 20)"
	# The copies left behind are dead: an answer at once, not a hang.
	t0=$(date +%s%N)
	out=$(timeout 5 nsenter -t "${copies[0]}" -m stat "$MP/README" 2>&1); rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	if ((rc != 0 && rc != 124 && ms < 2000)); then
		ok "$mode: a copy left elsewhere fails at once ($ms ms: ${out##*: })"
	else
		fail "$mode: a copy left elsewhere answered rc $rc after $ms ms: $out"
	fi
	kill "${copies[@]}" 2>/dev/null
	wait "${copies[@]}" 2>/dev/null
done
finish
