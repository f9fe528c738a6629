#!/usr/bin/env bash
# scripts/bench/push.sh - the cost of `proffs run --push` on a busy host.
#
# A store holds 10 past minutes of ~600 series each (tests/tools/
# synth_batches: 600 processes, 30,000 samples per 10 s batch). A daemon
# with --push sends them to tests/integration/push_receiver.py on
# 127.0.0.1 (which decodes every request with protoc); the figures are the
# wall time per pushed minute (the goal: well within the 60 s a minute
# lasts), bytes per minute, and the CPU seconds of the pusher thread
# (/proc/PID/task/TID/stat of the thread named proffs-push) against the
# whole daemon's over the same time (its baseline: sampling this host).
# Prints key=value lines.
# Usage: scripts/bench/push.sh [BUILD_DIR]   (root: the daemon samples)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
W=$(mktemp -d /var/tmp/proffs-pushbench.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	sleep 1
	for m in "$W/mp"; do grep -q " $m " /proc/mounts && fusermount3 -u -z "$m" || true; done
	rm -rf "$W"
}
trap cleanup EXIT
NOW=$(date +%s)
START=$(( (NOW / 60 - 30) * 60 ))
PROFFS_STORE_NOSYNC=1 "$BUILD/tests/synth_batches" --store "$W/store" --procs 600 --samples 30000 \
	--batches $((6 * ${MINUTES:-10})) --interval 10 --start "$START" >/dev/null
echo ok >"$W/mode"
mkdir -p "$W/recv" "$W/mp"
python3 "$ROOT/tests/integration/push_receiver.py" "$W/port" "$W/mode" "$W/recv" "$ROOT/sampler/push" &
PIDS+=($!)
for i in $(seq 100); do [[ -s $W/port ]] && break; sleep 0.1; done
metric() { awk -v n="$2" '$1 == n { print $2 }' "$1/metrics"; }

"$BUILD/proffs" run --store "$W/store" --mount "$W/mp" --push "http://127.0.0.1:$(cat "$W/port")" >"$W/run.log" 2>&1 &
PIDS+=($!)
for i in $(seq 100); do [[ -e $W/mp/metrics ]] && break; sleep 0.1; done
t0=$(date +%s.%N)
for i in $(seq 600); do
	m=$(metric "$W/mp" proffs_push_minutes_total)
	[[ -n $m ]] && ((m >= ${MINUTES:-10})) && break
	sleep 0.5
done
t1=$(date +%s.%N)
cpu=$(metric "$W/mp" proffs_cpu_seconds_total)
bytes=$(metric "$W/mp" proffs_push_bytes_total)
profiles=$(metric "$W/mp" proffs_push_profiles_total)
retries=$(metric "$W/mp" proffs_push_retries_total)
refused=$(metric "$W/mp" proffs_push_refused_series_total)
# The pusher thread's own CPU (utime + stime of the thread it names).
pid=${PIDS[1]}
pcpu=0
for t in /proc/$pid/task/*; do
	[[ $(cat "$t/comm" 2>/dev/null) == proffs-push ]] &&
		pcpu=$(awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "$t/stat")
done
wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')

echo "minutes=$m"
echo "series_per_minute=$((profiles / m))"
echo "wall_s=$wall"
echo "wall_per_minute_s=$(awk -v w="$wall" -v m="$m" 'BEGIN { printf "%.2f", w / m }')"
echo "bytes_per_minute=$((bytes / m))"
echo "retries=$retries"
echo "refused_series=$refused"
echo "receiver_refusals=$(cat "$W/recv/bad" 2>/dev/null | wc -l)"
[[ -s $W/recv/bad ]] && head -c 300 "$W/recv/bad" >&2
echo "cpu_daemon_s=$cpu"
echo "cpu_push_thread_s=$pcpu"
echo "push_cpu_per_minute_s=$(awk -v a="$pcpu" -v m="$m" 'BEGIN { printf "%.2f", a / m }')"
echo "push_share_of_daemon_cpu=$(awk -v a="$pcpu" -v b="$cpu" 'BEGIN { printf "%.2f", a / b }')"
