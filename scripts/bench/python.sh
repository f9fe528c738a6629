#!/usr/bin/env bash
# scripts/bench/python.sh - the costs of walking Python frames (issue 15),
# same run, 99 Hz, both cores busy:
#   - BPF time per sample (bpf_stats run_time_ns / run_cnt of on_sample)
#     with two native programs (gzip -9, truth_nofp) busy, then with two
#     Debian python3.11 processes busy (the known-answer program), with
#     the Python walk on and off (PROFFS_RUNTIMES=off); ROUNDS daemons of
#     each, alternating, medians (this VM's timings vary by tens of %)
#   - the daemon's CPU (% of one core) in each phase
#   - the daemon's memory (RSS + BPF maps) with 50 Python processes
#     running (each a small loop that naps), after 20 s
# Prints a Markdown section on stdout. Needs root and `make all`.
# Env: BUILD (default build), SECS (default 10 per daemon), ROUNDS (3).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/bench/lib.sh"
SECS=${SECS:-10}
ROUNDS=${ROUNDS:-3}
BENCH_BPF_STATS=1
bench_init pybench
bench_need "$PROFFS" "$TB/truth_nofp" /usr/bin/python3.11

# phase (lib.sh) fills these.
declare -A NS CPU

# Each round: the native pair, then the Python pair with the walk off and
# on; ratios within a round (this VM drifts by tens of % over minutes).
RATIO=() RATIO_OFF=()
for r in $(seq "$ROUNDS"); do
	log "round $r: native (gzip -9, truth_nofp)"
	sh -c 'exec gzip -9 </dev/urandom >/dev/null' & G=$!; PIDS+=("$G")
	"$TB/truth_nofp" 100000 20 60 >/dev/null & T=$!; PIDS+=("$T")
	phase native
	kill "$G" "$T" 2>/dev/null || true; wait "$G" "$T" 2>/dev/null || true
	log "round $r: two python3.11 running the known-answer program"
	/usr/bin/python3.11 "$ROOT/tests/helpers/py_known.py" 100000 >/dev/null & P1=$!; PIDS+=("$P1")
	/usr/bin/python3.11 "$ROOT/tests/helpers/py_known.py" 100000 >/dev/null & P2=$!; PIDS+=("$P2")
	sleep 1
	phase python_off PROFFS_RUNTIMES=off
	phase python
	kill "$P1" "$P2" 2>/dev/null || true; wait "$P1" "$P2" 2>/dev/null || true
	set -- ${NS[native]}; n=${!#}; set -- ${NS[python_off]}; o=${!#}; set -- ${NS[python]}; p=${!#}
	RATIO+=("$(awk -v a="$n" -v b="$p" 'BEGIN { printf "%.2f", b / a }')")
	RATIO_OFF+=("$(awk -v a="$o" -v b="$p" 'BEGIN { printf "%.2f", b / a }')")
done

log "memory: 50 python3.11 processes"
cat >"$W/nap.py" <<'PY'
import time
def work():
    return sum(i * i for i in range(20000))
while True:
    work()
    time.sleep(0.02)
PY
for _ in $(seq 50); do /usr/bin/python3.11 "$W/nap.py" & PIDS+=("$!"); done
rm -rf "$W/store"; mkdir -p "$W/mp"
"$PROFFS" run --store "$W/store" --mount "$W/mp" --hz 99 --batch-interval 5s >"$W/run.log" 2>&1 &
D=$!; PIDS+=("$D")
for _ in $(seq 200); do [[ -e $W/mp/README ]] && break; sleep 0.05; done
sleep 20
MEM=$(daemon_mem_bytes "$D")
WALKED=$(awk '$1 == "proffs_python_processes_total{state=\"walked\"}" { print $2 }' "$W/mp/metrics")
NAMEB=$(awk '$1 == "proffs_python_name_cache_bytes" { print $2 }' "$W/mp/metrics")
kill -TERM "$D"; wait "$D" || true

for k in native python_off python; do
	NS[$k]=$(median ${NS[$k]}); CPU[$k]=$(median ${CPU[$k]})
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b != "nan") printf "%.2f", b / a; else print "n/a" }'; }
cat <<MD
## Python frames (issue 15): scripts/bench/python.sh

Host: $(nproc) CPUs, $(uname -r). 99 Hz, $SECS s per daemon, medians of $ROUNDS daemons each
(walk off and on alternating), same run. Native: gzip -9 and
truth_nofp busy. Python: two Debian python3.11 running tests/helpers/py_known.py busy, the
daemon with the Python walk off (PROFFS_RUNTIMES=off), then on.

| figure | native | python, walk off | python, walk on | on / native | goal |
|---|---|---|---|---|---|
| BPF time per sample (bpf_stats) | ${NS[native]} ns | ${NS[python_off]} ns | ${NS[python]} ns | $(median "${RATIO[@]}")x | <= 1.5x |
| daemon CPU (% of one core) | ${CPU[native]}% | ${CPU[python_off]}% | ${CPU[python]}% | | <= 0.3% |

With 50 python3.11 processes running (each sums 20,000 squares, then naps 20 ms), after 20 s:
daemon RSS + BPF maps $(awk -v m="$MEM" 'BEGIN { printf "%.1f MB (%.1f MiB)", m / 1e6, m / 1048576 }') (goal <= 32 MB); ${WALKED:-0} processes walked;
named code objects hold ${NAMEB:-0} bytes.

Per round (walk on / native, walk on / walk off): $(for i in "${!RATIO[@]}"; do printf '%sx/%sx ' "${RATIO[i]}" "${RATIO_OFF[i]}"; done); the table's
ratio is the median of the rounds' ratios, the ns figures medians of the daemons.

Metrics of the walk-on phase:

\`\`\`
$(grep -E '^proffs_python' "$W/metrics.python" 2>/dev/null)
\`\`\`
MD
