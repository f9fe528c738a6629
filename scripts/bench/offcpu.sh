#!/usr/bin/env bash
# scripts/bench/offcpu.sh - the cost of `proffs run --offcpu` (issue 10):
#   - a context-switch-heavy job (tests/helpers/pingpong: two threads
#     passing a byte over pipes, pinned to one CPU) timed without the
#     daemon, with the daemon (cpu sampling only), with --offcpu (default:
#     blocks >= 1 ms unwound, shorter ones counted) and with --offcpu
#     --offcpu-min 1us (every block unwound: the worst case), runs
#     interleaved; slowdown of --offcpu against the daemon without it;
#   - BPF time per switch of the sched_switch program (kernel.bpf_stats_enabled,
#     run_time_ns / run_cnt from bpftool), over the job's runs;
#   - the daemon's CPU during the job, its RSS and BPF maps' memlock;
#   - bcc's offcputime on the same job, if it runs here.
# Prints a Markdown section on stdout. Needs root and `make all`.
# Env: BUILD (default build), RUNS (runs per mode, default 7), ROUNDS
# (round trips per run, default 200000).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/bench/lib.sh"
RUNS=${RUNS:-7}
ROUNDS=${ROUNDS:-200000}
SPIN=${SPIN:-0} # work between passes: SPIN=60000 gives ~60k switches/s on this idle host
BENCH_BPF_STATS=1
bench_init obench
bench_need "$PROFFS" "$TB/pingpong"
command -v bpftool >/dev/null || { echo "bench: needs bpftool" >&2; exit 1; }
DPID=""
bench_more_cleanup() {
	[[ -n $DPID ]] && { kill "$DPID" 2>/dev/null || true; wait "$DPID" 2>/dev/null || true; }
}
TCK=$(getconf CLK_TCK)

daemon_start() { # ARGS...
	mkdir -p "$W/mp"
	rm -rf "$W/store"
	"$PROFFS" run --store "$W/store" --mount "$W/mp" "$@" >"$W/run.log" 2>&1 &
	DPID=$!
	for _ in $(seq 200); do [[ -e $W/mp/README ]] && break; sleep 0.05; done
	[[ -e $W/mp/README ]] || { cat "$W/run.log" >&2; exit 1; }
	sleep 2 # past start-up: kallsyms, first symbol tables
}
# A daemon that does not stop in 20 s is killed: the figures are taken by
# then, and the bench must not hang on it.
daemon_stop() {
	kill -TERM "$DPID"
	for _ in $(seq 200); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$DPID" 2>/dev/null && log "daemon $DPID did not stop on SIGTERM: killed" || true
	wait "$DPID" 2>/dev/null || true
	fusermount3 -u -z "$W/mp" 2>/dev/null || true
	DPID=""
}

# The newest sched_switch and rseq_update programs (the daemon just
# started loaded them): "run_time_ns run_cnt" of the switch program, with
# the rseq_update program's time added (it runs once per switch of a
# thread back to user space: its cost is per switch too), then that
# program's own "run_time_ns run_cnt".
prog_stats() {
	bpftool -j prog show | python3 -c '
import json, sys
ps = json.load(sys.stdin)
def newest(name):
    q = [p for p in ps if p.get("name") == name]
    return max(q, key=lambda p: p["id"]) if q else {}
s, r = newest("on_switch"), newest("on_resume")
print(s.get("run_time_ns", 0) + r.get("run_time_ns", 0), s.get("run_cnt", 0), r.get("run_time_ns", 0), r.get("run_cnt", 0))'
}

# job: "secs switches" of one pingpong run.
job() { taskset -c 0 "$TB/pingpong" "$ROUNDS" "$SPIN"; }

declare -A T
BPFNS=() BPFCNT=() RNS=() RCNT=() BPFNSA=() BPFCNTA=() DCPU=() DCPUA=() SWS=()
RSS=0 MEMLOCK=0
for i in $(seq "$RUNS"); do
	log "run $i of $RUNS"
	read -r s n < <(job); T[none]+="$s "; SWS+=("$(awk -v s="$s" -v n="$n" 'BEGIN { printf "%.0f", n / s }')")
	daemon_start
	read -r s n < <(job); T[cpu]+="$s "
	daemon_stop
	daemon_start --offcpu
	read -r ns0 c0 rn0 rc0 < <(prog_stats); d0=$(cpu_ticks "$DPID"); t0=$EPOCHREALTIME
	read -r s n < <(job); T[offcpu]+="$s "
	read -r ns1 c1 rn1 rc1 < <(prog_stats); d1=$(cpu_ticks "$DPID"); t1=$EPOCHREALTIME
	BPFNS+=($((ns1 - ns0))); BPFCNT+=($((c1 - c0))); RNS+=($((rn1 - rn0))); RCNT+=($((rc1 - rc0)))
	DCPU+=("$(awk -v c="$((d1 - d0))" -v hz="$TCK" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", 100 * c / hz / (b - a) }')")
	if ((i == RUNS)); then
		RSS=$(awk '/^VmRSS:/ { print $2 }' "/proc/$DPID/status")
		# Once per map: the offcpu object holds its own descriptors of
		# the cpu sampler's unwind maps.
		MEMLOCK=$(cat /proc/$DPID/fdinfo/* 2>/dev/null | awk '/^map_id:/ { id = $2 } /^memlock:/ { m = $2 } /^pos:/ { id = ""; m = "" }
			id != "" && m != "" && !seen[id]++ { t += m; id = ""; m = "" } END { print t + 0 }')
		cp "$W/mp/metrics" "$W/metrics"
	fi
	daemon_stop
	daemon_start --offcpu --offcpu-min 1us
	read -r ns0 c0 _ _ < <(prog_stats); d0=$(cpu_ticks "$DPID"); t0=$EPOCHREALTIME
	read -r s n < <(job); T[all]+="$s "
	read -r ns1 c1 _ _ < <(prog_stats); d1=$(cpu_ticks "$DPID"); t1=$EPOCHREALTIME
	BPFNSA+=($((ns1 - ns0))); BPFCNTA+=($((c1 - c0)))
	DCPUA+=("$(awk -v c="$((d1 - d0))" -v hz="$TCK" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", 100 * c / hz / (b - a) }')")
	daemon_stop
done

# shellcheck disable=SC2086
MN=$(median ${T[none]}); MC=$(median ${T[cpu]}); MO=$(median ${T[offcpu]}); MA=$(median ${T[all]})
pctd() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.1f%%", 100 * (b - a) / a }'; }
NSW=0 NCNT=0
for i in "${!BPFNS[@]}"; do NSW=$((NSW + BPFNS[i])); NCNT=$((NCNT + BPFCNT[i])); done
PERSW=$(awk -v a="$NSW" -v b="$NCNT" 'BEGIN { if (b) printf "%.0f", a / b; else print "n/a" }')
NSA=0 NCNTA=0
for i in "${!BPFNSA[@]}"; do NSA=$((NSA + BPFNSA[i])); NCNTA=$((NCNTA + BPFCNTA[i])); done
PERSWA=$(awk -v a="$NSA" -v b="$NCNTA" 'BEGIN { if (b) printf "%.0f", a / b; else print "n/a" }')
SWPS=$(median "${SWS[@]}")
RN=0 RC=0
for i in "${!RNS[@]}"; do RN=$((RN + RNS[i])); RC=$((RC + RCNT[i])); done
PERRS=$(awk -v a="$RN" -v b="$RC" 'BEGIN { if (b) printf "%.0f", a / b; else print "n/a" }')

BCC="not run"
if command -v offcputime-bpfcc >/dev/null; then
	if timeout 60 offcputime-bpfcc -f 1 >"$W/bcc.out" 2>"$W/bcc.err"; then
		BCC="ran (figures not automated)"
	else
		BCC="installed (bpfcc-tools 0.26, Debian 12) but cannot run on this kernel: $(grep -m1 -o 'Unable to find kernel headers' "$W/bcc.err" || tail -1 "$W/bcc.err")"
		BCC+="; its offcputime also needs a kprobe on finish_task_switch, and this kernel has CONFIG_KPROBES unset"
	fi
else
	BCC="bpfcc-tools not installed"
fi
short=$(awk '/^proffs_offcpu_short_total/ { print $2 }' "$W/metrics")
stored=$(awk '/^proffs_offcpu_samples_total/ { print $2 }' "$W/metrics")

cat <<MD
## Off-CPU profiling (issue 10): scripts/bench/offcpu.sh

Host: $(nproc) CPUs, $(uname -r), load at start $(cut -d' ' -f1-3 /proc/loadavg). Same run for
every figure; modes interleaved, $RUNS runs each, medians.

Job: \`taskset -c 0 pingpong $ROUNDS $SPIN\` (two threads passing a byte over two
pipes on one CPU: every pass blocks one thread and wakes the other), about
$SWPS context switches/s without the daemon. Its blocks last microseconds,
so with the default \`--offcpu-min 1ms\` each switch takes the cheap path
(note the switch-out, find the block short, count it); \`--offcpu-min 1us\`
unwinds every one (kernel stack, user stack at rseq_update, record).

| figure | value | goal |
|---|---|---|
| job without the daemon | ${MN} s | |
| with \`proffs run\` (cpu only, 19 Hz) | ${MC} s ($(pctd "$MN" "$MC")) | |
| with \`proffs run --offcpu\` | ${MO} s | |
| **slowdown of --offcpu** (vs the daemon without it) | **$(pctd "$MC" "$MO")** | <= 5% |
| with \`--offcpu --offcpu-min 1us\` (every block unwound) | ${MA} s ($(pctd "$MC" "$MA") vs cpu only) | |
| BPF time per switch, sched_switch and rseq_update programs, \`--offcpu\` (bpf_stats: their run_time_ns / sched_switch's run_cnt over the job's runs) | ${PERSW} ns ($NCNT runs) | |
| of which rseq_update's (run_time_ns / its run_cnt) | ${PERRS} ns a run ($RC runs) | |
| same, \`--offcpu-min 1us\` (every block unwinds the kernel stack at the switch and the user stack at rseq_update) | ${PERSWA} ns ($NCNTA runs) | |
| daemon CPU during the job, \`--offcpu\` | $(median "${DCPU[@]}")% of one core | |
| daemon CPU during the job, \`--offcpu-min 1us\` | $(median "${DCPUA[@]}")% of one core | |
| daemon RSS with \`--offcpu\` | ${RSS} KiB | |
| BPF maps memlock (fdinfo), cpu + offcpu | $((MEMLOCK / 1024)) KiB | |
| blocks in the last \`--offcpu\` run: stored / counted short | ${stored:-?} / ${short:-?} | |
| bcc \`offcputime\` | $BCC | |

Runs (s): none ${T[none]}; cpu ${T[cpu]}; offcpu ${T[offcpu]}; offcpu-min 1us ${T[all]}.
BPF time is what bpf_stats charges to the sched_switch program itself; the
task work that walks a user stack runs outside it (in the woken thread, on
its way back to user space) and shows only in the job's time. The host has
two cores shared with other work: run-to-run spread is a few percent, so a
slowdown within that spread is noise, not a measurement.
MD
