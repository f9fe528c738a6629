#!/usr/bin/env bash
# runner_timeout: the test runner's time limit (tests/run.sh). A scratch
# copy of the runner gets one script, hang.sh, with "# timeout: 10": it
# starts a daemon that leaves its session (setsid sleep), a real
# `proffs run` with its FUSE mount, then hangs. The runner must count it
# failed by name with its limit within 10 s plus its own overhead, and
# leave nothing: the sleeper and the daemon gone, the mount unmounted.
# The scratch runner's closing line is "0 passed, 1 failed".
# (10 s: the daemon, loading its BPF programs beside the parallel tests,
# once took over 3 s to mount, the limit before.) About 20 s.
# timeout: 120
source "$(dirname "$0")/sampler_lib.bash"

S=$WORK/scratch
mkdir -p "$S/tests/integration" "$S/build" "$S/build-san"
cp "$ROOT/tests/run.sh" "$S/tests/run.sh"
# The runner wants both builds present; this copy runs no unit test.
printf '#!/bin/sh\n' >"$S/build/proffs"; cp "$S/build/proffs" "$S/build-san/proffs"
chmod +x "$S/build/proffs" "$S/build-san/proffs"
H=$WORK/hang
mkdir -p "$H/mp"
cat >"$S/tests/integration/hang.sh" <<EOF
#!/usr/bin/env bash
# timeout: 10
setsid sleep 1000 </dev/null >/dev/null 2>&1 &
echo \$! >"$H/sleeper.pid"
"$PROFFS" run --store "$H/store" --mount "$H/mp" >"$H/run.log" 2>&1 &
echo \$! >"$H/daemon.pid"
for i in \$(seq 400); do [[ -e "$H/mp/README" ]] && break; sleep 0.05; done
echo mounted
sleep 1000
EOF
t0=$EPOCHREALTIME
# MOUNT_SCOPE: its dead-mount sweep looks under this test's own dir
# only (the other tests' mounts are theirs).
(cd "$S" && FUZZ_SECONDS=1 MOUNT_SCOPE=$WORK bash tests/run.sh) >"$WORK/out" 2>&1
rc=$?
dt=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
cat "$WORK/out"
sp=$(cat "$H/sleeper.pid" 2>/dev/null); dp=$(cat "$H/daemon.pid" 2>/dev/null)
[[ -n $sp && -n $dp ]] && PIDS+=("$sp" "$dp")
MOUNTS+=("$H/mp")
grep -q "mounted" "$S/build/test-logs/it_hang.log" && ok "the hanging script had mounted the tree" ||
	fail "the hanging script never mounted the tree: $(tail -3 "$H/run.log" 2>/dev/null)"
((rc != 0)) && grep -qE '^FAIL it/hang .*killed at its limit of 10 s' "$WORK/out" &&
	ok "the runner fails it/hang by name at its limit of 10 s (exit $rc)" ||
	fail "the runner did not fail it/hang at its limit (exit $rc)"
[[ $(tail -n 1 "$WORK/out") == "0 passed, 1 failed, 0 skipped" ]] && ok "closing line: $(tail -n 1 "$WORK/out")" ||
	fail "closing line: $(tail -n 1 "$WORK/out")"
within "$dt" 10 22 && ok "done in $dt s (limit 10 s)" || fail "the runner took $dt s for a limit of 10 s"
# gone PID: not running (a zombie awaiting init's reap counts as gone).
gone() { local st; st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null); [[ -z $st || $st == Z ]]; }
[[ -n $sp ]] && gone "$sp" && ok "the sleeper that left its session is gone" ||
	fail "the sleeper ($sp) that left its session is still running"
[[ -n $dp ]] && gone "$dp" && ok "the daemon is gone" || fail "the daemon ($dp) is still running"
grep -q " $H/mp " /proc/mounts && fail "the killed daemon's mount is left at $H/mp" || ok "no mount left"
finish
