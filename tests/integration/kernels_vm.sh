#!/usr/bin/env bash
# kernels_vm: the profiler gives the same answers on Debian 12's own
# kernels as on the host. Boots each of Debian 12's 6.1 (6.1.0-*-amd64) and
# 6.12 (6.12.*+deb12-amd64, bookworm-backports) kernels under qemu (TCG,
# 2 vCPUs; tests/vm/run.sh) with this machine's root shared read-only, and
# runs tests/vm/guest_checks.sh in each as root: one `proffs run --offcpu
# --batch-interval 2s` at the default 19 Hz, and the host tests' known
# answers read through its mounted tree:
#  - no BPF program refused: proffs_kernel_feature 1 for cpu_sampler,
#    unwind_tables, python, ruby, java, js, offcpu; no `refused` log line
#  - truth (frame pointers) and truth_nofp: iterateLong 90.9% of the two
#    calls' samples within a 3-sigma band, whole stacks (sampler_run.sh, sampler_unwind.sh)
#  - off-CPU: the 900:100 ms sleeper's waitLong 90% +- 3 pp, its stack
#    whole from _start through main;waitLong into the kernel (offcpu.sh)
#  - Python 3.11, Ruby 3.1, JDK 17, node 20: heavy's share within band of
#    each program's own CPU-clock figure (sampler_python/ruby/java/node.sh)
#  - SIGTERM: exit 0, no mount left
# Each guest's `uname -r` is printed; its output comes prefixed with the
# kernel ("[6.1] ..."); its profiles, outputs and daemon log are left in
# build/test-logs/kernels_vm/RELEASE/. Fails naming the kernel and the exit
# status of its run (124: VM_TIMEOUT, 125: no boot).
# Duration: both kernels at once, ~2.5 min.
# alone: yes (TCG needs both cores, and the shares need samples)
# timeout: 900
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
KERNELS=(6.1 6.12)
SHARE=$ROOT/build/test-logs/kernels_vm
rm -rf "$SHARE"
mkdir -p "$SHARE" || { echo "FAIL: cannot make $SHARE"; exit 1; }

T0=$SECONDS
declare -A RC=() REL=() DT=()
# The guests' runners, by pid: each kills its qemu on TERM (tests/vm/run.sh).
PIDS=()
stop_guests() {
	local p
	for p in "${PIDS[@]}"; do pkill -TERM -P "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
}
trap stop_guests EXIT
# Both guests at once, two vCPUs each on the host's two cores: each runs
# at about half speed (the same guest-seconds of work, fewer instructions:
# the shares stand; the sample counts are the guest's timer ticks, which
# a host slice of a few ms does not skip). One after the other took 230 s
# of make test's alone phase; one vCPU each put the JVM's own clock off
# (its compiler threads time-sliced with the measured one).
for k in "${KERNELS[@]}"; do
	(
		t=$SECONDS
		VM_SHARE=$SHARE VM_TIMEOUT=400 tests/vm/run.sh "$k" -- bash tests/vm/guest_checks.sh >"$SHARE/guest-$k.log" 2>&1
		echo "$? $((SECONDS - t))" >"$SHARE/rc-$k"
	) &
	PIDS+=($!)
done
wait "${PIDS[@]}"
for k in "${KERNELS[@]}"; do
	out=$SHARE/guest-$k.log
	echo "=== kernel $k: tests/vm/run.sh $k -- bash tests/vm/guest_checks.sh"
	sed "s/^/[$k] /" "$out"
	read -r RC[$k] DT[$k] <"$SHARE/rc-$k" || { RC[$k]=1; DT[$k]=?; }
	# guest_checks.sh's first line: "kernel RELEASE (VM), N CPUs"
	REL[$k]=$(sed -n 's/^kernel \([^ ]*\) (VM).*/\1/p' "$out" | head -1)
	echo "=== kernel $k: guest uname -r: ${REL[$k]:-unknown (it never ran the checks)}; exit ${RC[$k]} after ${DT[$k]} s"
done

echo "--- summary ($((SECONDS - T0)) s)"
FAILS=0
for k in "${KERNELS[@]}"; do
	if [[ ${RC[$k]} == 0 ]]; then
		echo "ok: kernel $k (${REL[$k]}): every guest check passed ($(grep -c '^ok: ' "$SHARE/guest-$k.log") checks, ${DT[$k]} s)"
	else
		FAILS=$((FAILS + 1))
		case ${RC[$k]} in
			124) why="timed out (VM_TIMEOUT=400)" ;;
			125) why="the guest never ran the command (boot failure)" ;;
			77) why="skipped in the guest: $(tail -n 1 "$SHARE/guest-$k.log")" ;;
			*) why="guest_checks.sh failed" ;;
		esac
		echo "FAIL: kernel $k (${REL[$k]:-?}): exit ${RC[$k]}: $why"
		grep '^FAIL: ' "$SHARE/guest-$k.log" | sed "s/^FAIL: /FAIL: [$k] /"
	fi
done
((FAILS == 0)) || { echo "profiles and daemon logs: $SHARE"; exit 1; }
echo "all checks passed"
exit 0
