#!/usr/bin/env bash
# scripts/bench/unwind.sh - the figures of issue 8 (unwinding without
# frame pointers), before (PROFFS_UNWIND=fp: the kernel's frame-pointer
# walk) and after (unwind tables), in the same run, both cores busy with
# Debian's own python3 (a json loop) and gzip -9, at 99 Hz:
#   - BPF time per sample: bpf_stats (run_time_ns / run_cnt of on_sample)
#   - the daemon's CPU (% of one core), RSS + BPF maps' memlock
#   - share of python3/gzip samples whose stack reaches the root
#     (__libc_start_call_main, or _start), against `perf record
#     --call-graph dwarf` of the same processes, same definition
#   - slowdown of a fixed job (tests/helpers/fixedwork), runs interleaved
# Prints a Markdown section on stdout. Needs root and `make all`.
# Env: BUILD (default build), SECS (default 30), RUNS (default 3).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/bench/lib.sh"
SECS=${SECS:-30}
RUNS=${RUNS:-3}
BENCH_BPF_STATS=1
bench_init ubench
bench_need "$PROFFS" "$TB/fixedwork"


cat >"$W/loop.py" <<'PY'
import json, sys, time
d = {"a": list(range(200)), "b": {"x": "y" * 50}}
while True:
    json.loads(json.dumps(d))
PY
python3 "$W/loop.py" & PY=$!; PIDS+=("$PY")
sh -c 'exec gzip -9 </dev/urandom >/dev/null' & GZ=$!; PIDS+=("$GZ")
sleep 1

# reach FOLDED: % of samples with a user stack that reach the root.
reach() {
	awk '{ n = $NF; sub(/ [0-9]+$/, ""); split($0, f, ";")
	       if (f[2] ~ /_\[k\]$/ || f[2] == "") next
	       tot += n; if ($0 ~ /;__libc_start_call_main;/ || f[2] == "_start") good += n }
	     END { if (tot) printf "%.1f", 100 * good / tot; else print "nan" }' "$1"
}

declare -A NS CPU MEM PYR GZR
for mode in fp tables; do
	log "daemon, $mode, 99 Hz, $SECS s"
	rm -rf "$W/store"; mkdir -p "$W/mp"
	if [[ $mode == fp ]]; then
		PROFFS_UNWIND=fp "$PROFFS" run --store "$W/store" --mount "$W/mp" --hz 99 --batch-interval 5s >"$W/run.log" 2>&1 &
	else
		"$PROFFS" run --store "$W/store" --mount "$W/mp" --hz 99 --batch-interval 5s >"$W/run.log" 2>&1 &
	fi
	D=$!; PIDS+=("$D")
	for _ in $(seq 200); do [[ -e $W/mp/README ]] && break; sleep 0.05; done
	sleep 3
	read -r ns cpu <<<"$(measure_daemon "$D" "$SECS")"
	NS[$mode]=$ns CPU[$mode]=$cpu
	m=$(daemon_mem_bytes "$D")
	MEM[$mode]="$((m / 1048576)) MiB (RSS + BPF maps, mmapped map pages counted once)"
	sleep 6
	cp "$W/mp/merged/cpu/pid=$PY/last-5m/folded.txt" "$W/py.$mode" && PYR[$mode]=$(reach "$W/py.$mode") || PYR[$mode]=nan
	cp "$W/mp/merged/cpu/pid=$GZ/last-5m/folded.txt" "$W/gz.$mode" && GZR[$mode]=$(reach "$W/gz.$mode") || GZR[$mode]=nan
	[[ $mode == tables ]] && grep -E '^proffs_(unwind|user_stacks)' "$W/mp/metrics" >"$W/metrics" || true
	kill -TERM "$D"; wait "$D" || true
done

log "perf record --call-graph dwarf, $SECS s"
PPY=nan PGZ=nan
if command -v perf >/dev/null; then
	perf record -F 99 --call-graph dwarf -p "$PY,$GZ" -o "$W/perf.data" -- sleep "$SECS" >/dev/null 2>&1 || true
	perf script -i "$W/perf.data" -F comm,pid,ip,sym 2>/dev/null | awk -v py="$PY" -v gz="$GZ" '
		function done_() { if (cur != "") { t[cur]++; if (ok) g[cur]++ } }
		/^[^ \t]/ { done_(); cur = ($2 == py ? "py" : ($2 == gz ? "gz" : "")); ok = 0; user = 0; next }
		/__libc_start_call_main|[ \t]_start$/ { ok = 1 }
		END { done_(); printf "%.1f %.1f\n", t["py"] ? 100 * g["py"] / t["py"] : -1, t["gz"] ? 100 * g["gz"] / t["gz"] : -1 }' >"$W/perf.share"
	read -r PPY PGZ <"$W/perf.share"
fi
for p in "$PY" "$GZ"; do kill "$p" 2>/dev/null || true; done

log "fixed job: $RUNS runs each without the daemon, with fp, with tables"
job() { local t0=$EPOCHREALTIME; "$TB/fixedwork" 1500; awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.4f\n", b - a }'; }
OFF=() FP=() TAB=()
for _ in $(seq "$RUNS"); do
	OFF+=("$(job)")
	for mode in fp tables; do
		rm -rf "$W/store"
		if [[ $mode == fp ]]; then PROFFS_UNWIND=fp "$PROFFS" run --store "$W/store" --mount "$W/mp" --hz 99 >"$W/run.log" 2>&1 &
		else "$PROFFS" run --store "$W/store" --mount "$W/mp" --hz 99 >"$W/run.log" 2>&1 & fi
		D=$!; PIDS+=("$D")
		for _ in $(seq 200); do [[ -e $W/mp/README ]] && break; sleep 0.05; done
		sleep 2
		if [[ $mode == fp ]]; then FP+=("$(job)"); else TAB+=("$(job)"); fi
		kill -TERM "$D"; wait "$D" || true
	done
done
MOFF=$(median "${OFF[@]}"); MFP=$(median "${FP[@]}"); MTAB=$(median "${TAB[@]}")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b != "nan") printf "%.2f", b / a; else print "n/a" }'; }
slow() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", 100 * (b - a) / a }'; }

cat <<MD
## Unwinding without frame pointers (issue 8): scripts/bench/unwind.sh

Host: $(nproc) CPUs, $(uname -r), load at start $(cut -d' ' -f1-3 /proc/loadavg). Both cores busy
with Debian's python3 (json loop) and gzip -9; 99 Hz; $SECS s per mode; same run for every figure.

| figure | frame pointers (before) | unwind tables (after) | after / before | goal |
|---|---|---|---|---|
| BPF time per sample (bpf_stats run_time_ns / run_cnt) | ${NS[fp]} ns | ${NS[tables]} ns | $(ratio "${NS[fp]}" "${NS[tables]}")x | <= 1.5x |
| daemon CPU | ${CPU[fp]}% of one core | ${CPU[tables]}% of one core | | <= 0.3% |
| daemon memory | ${MEM[fp]} | ${MEM[tables]} | | <= 32 MB |
| python3 samples reaching the root | ${PYR[fp]}% | ${PYR[tables]}% | | >= 95% |
| gzip -9 samples reaching the root | ${GZR[fp]}% | ${GZR[tables]}% | | >= 95% |
| fixed job (fixedwork 1500), median of $RUNS | ${MFP} s | ${MTAB} s | no daemon: ${MOFF} s | |
| slowdown against no daemon | $(slow "$MOFF" "$MFP")% | $(slow "$MOFF" "$MTAB")% | | <= 1% |

\`perf record -F 99 --call-graph dwarf\` (8 KiB stack copies, unwound by perf with libdw) of the
same two processes for $SECS s: python3 ${PPY}%, gzip ${PGZ}% of samples reach the root
(same definition: the stack holds __libc_start_call_main or ends in _start).

"Reaching the root": of the samples with a user stack, those whose stack holds
__libc_start_call_main or starts at _start. Metrics of the tables run:

\`\`\`
$(cat "$W/metrics" 2>/dev/null)
\`\`\`
MD
