#!/usr/bin/env bash
# scripts/bench/runtimes.sh - what walking Ruby, Java and JavaScript frames
# costs (issues 27, 28, 29), as scripts/bench/python.sh measures Python's,
# same run, 99 Hz, both cores busy; for each runtime in RUNTIMES:
#   - BPF time per sample (bpf_stats run_time_ns / run_cnt of on_sample):
#     two native programs busy (gzip -9, truth_nofp), then two processes
#     of the runtime busy running its known-answer program, the daemon
#     with the runtimes off (PROFFS_RUNTIMES=off), then on; ROUNDS rounds,
#     the ratios taken within a round (this VM drifts over minutes)
#   - the daemon's CPU (% of one core) in each phase
#   - the daemon's memory (RSS + BPF maps) with MANY processes of the
#     runtime running (a small loop that naps), after 20 s
# Prints a Markdown section on stdout. Needs root, `make all` and what
# scripts/deps.sh installs (ruby, the JDKs, node).
# Env: BUILD (default build), SECS (10 per daemon), ROUNDS (3),
# RUNTIMES ("ruby java node").
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
[[ $BUILD = /* ]] || BUILD=$ROOT/$BUILD
PROFFS=$BUILD/proffs
TB=$BUILD/tests
SECS=${SECS:-10}
ROUNDS=${ROUNDS:-3}
RUNTIMES=${RUNTIMES:-ruby java node}
JDK=/usr/lib/jvm/java-17-openjdk-amd64
source "$ROOT/scripts/bench/lib.sh"
[[ $(id -u) == 0 ]] || { echo "bench: needs root" >&2; exit 1; }
for f in "$PROFFS" "$TB/truth_nofp" /usr/bin/ruby "$JDK/bin/java" /usr/bin/node "$TB/java/Known.class"; do
	[[ -e $f ]] || { echo "bench: $f missing" >&2; exit 1; }
done

W=$(mktemp -d /var/tmp/proffs-rtbench.XXXXXX)
PIDS=()
OLD_STATS=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
	sysctl -qw kernel.bpf_stats_enabled="$OLD_STATS"
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	pkill -f "^sleep 3599.5" 2>/dev/null || true
	fusermount3 -u -z "$W/mp" 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
sysctl -qw kernel.bpf_stats_enabled=1

# busy RT: starts one process of RT running its known-answer program for
# long; its pid in BUSY.
busy() {
	case $1 in
	ruby) /usr/bin/ruby "$ROOT/tests/helpers/rb_known.rb" 3600 >/dev/null & BUSY=$! ;;
	node) /usr/bin/node "$ROOT/tests/helpers/js/known.js" run 3600 >/dev/null & BUSY=$! ;;
	java) (sleep 0.5; echo "spin 3600000"; exec sleep 3599.5) |
		"$JDK/bin/java" -cp "$TB/java" Known "$TB/java/libknownjni.so" >/dev/null 2>&1 & BUSY=$! ;;
	esac
	PIDS+=("$BUSY")
}

# idle RT: one process of RT that loops a little and naps; pid in BUSY.
idle() {
	case $1 in
	ruby) /usr/bin/ruby -e 'loop { s = 0; 20000.times { |i| s += i * i }; sleep 0.02 }' & BUSY=$! ;;
	node) /usr/bin/node -e 'setInterval(() => { let s = 0; for (let i = 0; i < 20000; i++) s += i * i; }, 20)' & BUSY=$! ;;
	java) (exec sleep 3599.5) | "$JDK/bin/java" -Xmx64m -cp "$TB/java" Known "$TB/java/libknownjni.so" >/dev/null 2>&1 & BUSY=$! ;;
	esac
	PIDS+=("$BUSY")
}

# phase (lib.sh) fills these.
declare -A NS CPU

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b != "nan") printf "%.2f", b / a; else print "n/a" }'; }
declare -A RATIOS RATIOS_OFF MEM WALKED
for rt in $RUNTIMES; do
	RATIOS[$rt]="" RATIOS_OFF[$rt]=""
	for r in $(seq "$ROUNDS"); do
		log "$rt round $r: native (gzip -9, truth_nofp)"
		sh -c 'exec gzip -9 </dev/urandom >/dev/null' & G=$!; PIDS+=("$G")
		"$TB/truth_nofp" 100000 20 60 >/dev/null & T=$!; PIDS+=("$T")
		phase "native_$rt"
		kill "$G" "$T" 2>/dev/null || true; wait "$G" "$T" 2>/dev/null || true
		log "$rt round $r: two processes of the known-answer program"
		busy "$rt"; B1=$BUSY; busy "$rt"; B2=$BUSY
		sleep 3
		phase "off_$rt" PROFFS_RUNTIMES=off
		phase "on_$rt"
		# (a JVM's stdin feeder first: waiting for a pipeline waits for all of it)
		pkill -f "^sleep 3599.5" 2>/dev/null || true
		kill "$B1" "$B2" 2>/dev/null || true; wait "$B1" "$B2" 2>/dev/null || true
		set -- ${NS[native_$rt]}; n=${!#}; set -- ${NS[off_$rt]}; o=${!#}; set -- ${NS[on_$rt]}; p=${!#}
		RATIOS[$rt]+="$(ratio "$n" "$p") "
		RATIOS_OFF[$rt]+="$(ratio "$o" "$p") "
	done
	case $rt in ruby) many=50 ;; node) many=20 ;; java) many=20 ;; esac
	log "$rt memory: $many processes"
	mem_pids=()
	for _ in $(seq "$many"); do idle "$rt"; mem_pids+=("$BUSY"); done
	rm -rf "$W/store"; mkdir -p "$W/mp"
	"$PROFFS" run --store "$W/store" --mount "$W/mp" --hz 99 --batch-interval 5s >"$W/run.log" 2>&1 &
	D=$!; PIDS+=("$D")
	for _ in $(seq 200); do [[ -e $W/mp/README ]] && break; sleep 0.05; done
	sleep 20
	MEM[$rt]=$(daemon_mem_bytes "$D")
	case $rt in ruby) pfx=proffs_ruby ;; java) pfx=proffs_java ;; node) pfx=proffs_js ;; esac
	WALKED[$rt]=$(awk -v k="${pfx}_processes_total{state=\"walked\"}" '$1 == k { print $2 }' "$W/mp/metrics")
	WALKED[$rt]="${WALKED[$rt]:-0} of $many"
	kill -TERM "$D"; wait "$D" || true
	pkill -f "^sleep 3599.5" 2>/dev/null || true
	kill "${mem_pids[@]}" 2>/dev/null || true; wait "${mem_pids[@]}" 2>/dev/null || true
done

cat <<MD
## Ruby, Java and JavaScript frames (issues 27, 28, 29): scripts/bench/runtimes.sh

Command: \`scripts/bench/runtimes.sh\` (also run by \`make bench\`), $(date -u +%Y-%m-%d), commit $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown).

Host: $(nproc) CPUs, $(uname -r). 99 Hz, $SECS s per daemon, $ROUNDS rounds per runtime (native, then
the runtime's pair with the runtimes off and on), same run. Native: gzip -9 and truth_nofp busy.
Ruby: two Debian ruby 3.1 running tests/helpers/rb_known.rb; Java: two JDK 17 JVMs running
tests/helpers/java/Known (k-hot and k-jni spinning); JavaScript: two NodeSource node 20 running
tests/helpers/js/known.js (main thread and a worker). Ratios are medians of the rounds' ratios,
ns figures medians of the daemons.

| runtime | BPF ns/sample native | runtime off | runtime on | on / native | on / off | daemon CPU native / on | goal |
|---|---|---|---|---|---|---|---|
$(for rt in $RUNTIMES; do
	printf '| %s | %s | %s | %s | %sx | %sx | %s%% / %s%% | <= 1.5x |\n' "$rt" \
		"$(median ${NS[native_$rt]})" "$(median ${NS[off_$rt]})" "$(median ${NS[on_$rt]})" \
		"$(median ${RATIOS[$rt]})" "$(median ${RATIOS_OFF[$rt]})" \
		"$(median ${CPU[native_$rt]})" "$(median ${CPU[on_$rt]})"
done)

Per round (on / native): $(for rt in $RUNTIMES; do printf '%s: %s; ' "$rt" "${RATIOS[$rt]% }"; done)

Memory with many processes of one runtime (each loops a little and naps; JVMs idle at -Xmx64m),
after 20 s, daemon RSS + BPF maps (goal <= 32 MB):
$(for rt in $RUNTIMES; do
	printf -- '- %s: %s; %s processes walked\n' "$rt" \
		"$(awk -v m="${MEM[$rt]}" 'BEGIN { printf "%.1f MB (%.1f MiB)", m / 1e6, m / 1048576 }')" "${WALKED[$rt]}"
done)

Metrics of the last walk-on phases:

\`\`\`
$(for rt in $RUNTIMES; do case $rt in ruby) p=proffs_ruby ;; java) p=proffs_java ;; node) p=proffs_js ;; esac
	grep -E "^${p}_(processes_total\{state=\"walked|walks_total|steps_total\{end=\"ok|frames_total)" "$W/metrics.on_$rt" 2>/dev/null || true; done)
\`\`\`
MD
