#!/usr/bin/env bash
# scripts/bench/runtimes.sh - what walking Ruby, Java and JavaScript frames
# costs (issues 27, 28, 29), 99 Hz, both cores busy; for each runtime in
# RUNTIMES:
#   - BPF time per sample of the runtime's processes against native ones
#     taken in the same seconds: a native pair (gzip -9, truth_nofp) and
#     two processes of the runtime running its known-answer program run
#     together under one daemon, which times each sample in its program
#     and sums by the runtime of the process sampled (/prof/metrics:
#     proffs_bpf_sample_seconds_total, proffs_bpf_samples_by_runtime_total);
#     WINDOWS windows of SECS s. This VM drifts by tens of % over a minute,
#     so figures of phases taken one after another do not compare; these do.
#     The program's whole time per sample (bpf_stats, from the program fd's
#     fdinfo) is given beside it as a check.
#   - the daemon's CPU (% of one core, its threads' schedstat) meanwhile,
#     and with 4 busy processes of the runtime alone (10 for node)
#   - the daemon's memory (RSS + BPF maps) with MANY processes of the
#     runtime running (a small loop that naps), after 20 s
# Prints a Markdown section on stdout. Needs root, `make all` and what
# scripts/deps.sh installs (ruby, the JDKs, node).
# Env: BUILD (default build), SECS (10), WINDOWS (4), RUNTIMES
# ("ruby java node node22 node24": node is NodeSource's node 20, node22
# and node24 the official builds deps.sh installs).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/bench/lib.sh"
SECS=${SECS:-10}
WINDOWS=${WINDOWS:-4}
RUNTIMES=${RUNTIMES:-ruby java node node22 node24}
# The node of each node runtime.
declare -A NODE=([node]=/usr/bin/node [node22]=/opt/proffs-test/node/22/bin/node [node24]=/opt/proffs-test/node/24/bin/node)
JDK=/usr/lib/jvm/java-17-openjdk-amd64
BENCH_BPF_STATS=1
bench_init rtbench
bench_need "$PROFFS" "$TB/truth_nofp" /usr/bin/ruby "$JDK/bin/java" "${NODE[@]}" "$TB/java/Known.class"
bench_more_cleanup() { pkill -f "^sleep 3599.5" 2>/dev/null || true; }

# busy RT: starts one process of RT running its known-answer program for
# long; its pid in BUSY.
busy() {
	case $1 in
	ruby) /usr/bin/ruby "$ROOT/tests/helpers/rb_known.rb" 3600 >/dev/null & BUSY=$! ;;
	node*) "${NODE[$1]}" "$ROOT/tests/helpers/js/known.js" run 3600 >/dev/null & BUSY=$! ;;
	java) (sleep 0.5; echo "spin 3600000"; exec sleep 3599.5) |
		"$JDK/bin/java" -cp "$TB/java" Known "$TB/java/libknownjni.so" >/dev/null 2>&1 & BUSY=$! ;;
	esac
	PIDS+=("$BUSY")
}

# idle RT: one process of RT that loops a little and naps; pid in BUSY.
idle() {
	case $1 in
	ruby) /usr/bin/ruby -e 'loop { s = 0; 20000.times { |i| s += i * i }; sleep 0.02 }' & BUSY=$! ;;
	node*) "${NODE[$1]}" -e 'setInterval(() => { let s = 0; for (let i = 0; i < 20000; i++) s += i * i; }, 20)' & BUSY=$! ;;
	java) (exec sleep 3599.5) | "$JDK/bin/java" -Xmx64m -cp "$TB/java" Known "$TB/java/libknownjni.so" >/dev/null 2>&1 & BUSY=$! ;;
	esac
	PIDS+=("$BUSY")
}

# by_rt RUBY JAVA NODE: the one of the three for the runtime $rt.
by_rt() {
	case $rt in ruby) echo "$1" ;; java) echo "$2" ;; node*) echo "$3" ;; *) return 1 ;; esac
}

# crowd KIND N: N processes of $rt started by KIND (busy or idle), the
# first of a new phase (PIDS0: what stop_phase stops).
crowd() {
	PIDS0=${#PIDS[@]}
	for _ in $(seq "$2"); do "$1" "$rt"; done
}

# start_daemon: a daemon (99 Hz, default flags otherwise) on a fresh store in $W;
# its pid in D (and PIDS), once its tree is mounted.
start_daemon() {
	rm -rf "$W/store"; mkdir -p "$W/mp"
	"$PROFFS" run --store "$W/store" --mount "$W/mp" --hz 99 >"$W/run.log" 2>&1 &
	D=$!; PIDS+=("$D")
	for _ in $(seq 200); do [[ -e $W/mp/README ]] && return 0; kill -0 "$D" 2>/dev/null || break; sleep 0.05; done
	echo "bench: the daemon did not start: $(tail -3 "$W/run.log")" >&2
	exit 1
}

# stop_phase: stops the daemon D and the processes started since
# PIDS0 (a JVM's stdin feeder first: waiting for a pipeline waits for it).
stop_phase() {
	kill -TERM "$D"; wait "$D" || true
	pkill -f "^sleep 3599.5" 2>/dev/null || true
	for p in "${PIDS[@]:PIDS0}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]:PIDS0}"; do wait "$p" 2>/dev/null || true; done
}

# cpu_ns PID: the CPU time of all of PID's threads, in ns.
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'; }

# prog_fd PID NAME: the fd under which process PID holds BPF program NAME.
prog_fd() {
	local f id
	for f in /proc/"$1"/fdinfo/*; do
		id=$(awk '/^prog_id:/ { print $2 }' "$f" 2>/dev/null)
		[[ -n $id ]] || continue
		if bpftool prog show id "$id" -j 2>/dev/null | python3 -c '
import json, sys
sys.exit(json.load(sys.stdin).get("name") != sys.argv[1])' "$2"; then
			echo "${f##*/}"; return 0
		fi
	done
	return 1
}

# snap PID FD MP: one line of totals now: on_sample's run_time_ns and
# run_cnt (bpf_stats), the daemon's CPU ns (all threads), the wall clock,
# then ns and samples of native samples and of the runtime's (by kind
# RTK), from the daemon's /prof/metrics.
snap() {
	local s c
	s=$(awk '/^run_time_ns:/ { t = $2 } /^run_cnt:/ { c = $2 } END { print t + 0, c + 0 }' /proc/"$1"/fdinfo/"$2")
	c=$(cpu_ns "$1")
	echo "$s $c $EPOCHREALTIME $(awk -v k="$RTK" '
		$1 == "proffs_bpf_sample_seconds_total{runtime=\"native\"}" { nt = $2 }
		$1 == "proffs_bpf_samples_by_runtime_total{runtime=\"native\"}" { nn = $2 }
		$1 == "proffs_bpf_sample_seconds_total{runtime=\"" k "\"}" { rt = $2 }
		$1 == "proffs_bpf_samples_by_runtime_total{runtime=\"" k "\"}" { rn = $2 }
		END { printf "%.0f %d %.0f %d", nt * 1e9, nn, rt * 1e9, rn }' "$3/metrics")"
}

# between A B: "bpf_ns_per_sample cpu_pct native_ns runtime_ns ratio
# samples_native samples_runtime" from two snaps.
between() {
	awk -v a="$1" -v b="$2" 'BEGIN { split(a, p); split(b, q)
		for (i = 1; i <= 8; i++) d[i] = q[i] - p[i]
		nat = d[6] ? d[5] / d[6] : 0; run = d[8] ? d[7] / d[8] : 0
		printf "%.0f %.3f %.0f %.0f %s %d %d\n", (d[2] ? d[1] / d[2] : 0), (d[4] > 0 ? 100 * d[3] / 1e9 / d[4] : 0),
			nat, run, (nat > 0 ? sprintf("%.2f", run / nat) : "n/a"), d[6], d[8] }'
}

declare -A RES WIN MEM ANON WALKED BUSYCPU
for rt in $RUNTIMES; do
	RTK=$(by_rt ruby java js)
	log "$rt: a native pair and two processes of the known-answer program, together"
	PIDS0=${#PIDS[@]}
	sh -c 'exec gzip -9 </dev/urandom >/dev/null' & PIDS+=("$!")
	"$TB/truth_nofp" 100000 20 3600 >/dev/null & PIDS+=("$!")
	busy "$rt"; busy "$rt"
	sleep 3
	start_daemon
	F=$(prog_fd "$D" on_sample)
	sleep 5 # first tables and names
	first=$(snap "$D" "$F" "$W/mp"); prev=$first WIN[$rt]=""
	for i in $(seq "$WINDOWS"); do
		sleep "$SECS"
		cur=$(snap "$D" "$F" "$W/mp")
		set -- $(between "$prev" "$cur")
		WIN[$rt]+="$5 "
		prev=$cur
	done
	RES[$rt]=$(between "$first" "$cur")
	grep -E "^proffs_(ruby|java|js)_" "$W/mp/metrics" >"$W/metrics.on_$rt" 2>/dev/null || true
	stop_phase
	log "$rt: ${RES[$rt]} (windows: ${WIN[$rt]})"
	# the daemon's CPU with BUSYN busy processes of the runtime alone
	busyn=$(by_rt 4 4 10)
	log "$rt: daemon CPU with $busyn busy processes"
	crowd busy "$busyn"
	sleep 3
	start_daemon
	sleep 20 # past the first tables and names (one-time: the node binary's unwind table alone is ~0.35 s of CPU)
	a=$(cpu_ns "$D"); t0=$EPOCHREALTIME
	sleep 30
	b=$(cpu_ns "$D"); t1=$EPOCHREALTIME
	BUSYCPU[$rt]="$(awk -v a="$a" -v b="$b" -v x="$t0" -v y="$t1" 'BEGIN { printf "%.3f", 100 * (b - a) / 1e9 / (y - x) }')% of a core with $busyn busy"
	stop_phase
	log "$rt: ${BUSYCPU[$rt]}"
	many=$(by_rt 50 20 20)
	log "$rt memory: $many processes"
	crowd idle "$many"
	start_daemon
	sleep 20
	MEM[$rt]=$(daemon_mem_bytes "$D")
	ANON[$rt]=$(( $(awk '/^RssAnon:/ { print $2 }' "/proc/$D/status") * 1024 + $(bpf_memlock "$D") ))
	pfx=$(by_rt proffs_ruby proffs_java proffs_js)
	WALKED[$rt]=$(awk -v k="${pfx}_processes_total{state=\"walked\"}" '$1 == k { print $2 }' "$W/mp/metrics")
	WALKED[$rt]="${WALKED[$rt]:-0} of $many"
	stop_phase
done

cat <<MD
## Ruby, Java and JavaScript frames (issues 27, 28, 29): scripts/bench/runtimes.sh

Command: \`scripts/bench/runtimes.sh\` (also run by \`make bench\`), $(date -u +%Y-%m-%d), commit $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown).

Host: $(nproc) CPUs, $(uname -r). 99 Hz. Per runtime, one daemon samples a native pair (gzip -9,
truth_nofp) and two processes of the runtime, all busy at once, for $WINDOWS windows of $SECS s
after 5 s of warm-up; the program times each sample (from its clock reading to its record's
output) and sums by the runtime of the process sampled, so both columns come from the same
seconds. Ruby: two Debian ruby 3.1 running tests/helpers/rb_known.rb; Java: two JDK 17 JVMs
running tests/helpers/java/Known (k-hot and k-jni spinning); JavaScript: two nodes (node:
NodeSource's node 20; node22, node24: the official 22.23.5 and 24.22.3) running
tests/helpers/js/known.js (main thread and a worker). "whole program" is bpf_stats'
run_time_ns / run_cnt over all samples of the run.

| runtime | ns/sample native | ns/sample runtime | runtime / native | per window | samples native / runtime | whole program (bpf_stats) | daemon CPU | goal |
|---|---|---|---|---|---|---|---|---|
$(for rt in $RUNTIMES; do
	set -- ${RES[$rt]}
	printf '| %s | %s | %s | %sx | %s | %s / %s | %s ns | %s%% | <= 1.5x |\n' "$rt" "$3" "$4" "$5" "${WIN[$rt]% }" "$6" "$7" "$1" "$2"
done)

The daemon's CPU with busy processes of one runtime alone (from 20 s after its start, for 30 s; goal
<= 0.3% for 4 JVMs and for 10 nodes):
$(for rt in $RUNTIMES; do printf -- '- %s: %s\n' "$rt" "${BUSYCPU[$rt]}"; done)

Memory with many processes of one runtime (each loops a little and naps; JVMs idle at -Xmx64m),
after 20 s (goal <= 32 MB): the daemon's RssAnon + BPF maps (issue 26's measure: file-backed
pages, LMDB's and the binary's, apart), and its whole RSS + BPF maps:
$(for rt in $RUNTIMES; do
	printf -- '- %s: %s anonymous + BPF; %s with file pages; %s processes walked\n' "$rt" \
		"$(awk -v m="${ANON[$rt]}" 'BEGIN { printf "%.1f MB", m / 1e6 }')" \
		"$(awk -v m="${MEM[$rt]}" 'BEGIN { printf "%.1f MB", m / 1e6 }')" "${WALKED[$rt]}"
done)

Metrics of the last walk-on phases:

\`\`\`
$(for rt in $RUNTIMES; do p=$(by_rt proffs_ruby proffs_java proffs_js)
	grep -E "^${p}_(processes_total\{state=\"walked|walks_total|steps_total\{end=\"ok|frames_total)" "$W/metrics.on_$rt" 2>/dev/null || true; done)
\`\`\`
MD
