# scripts/bench/lib.sh - helpers sourced by scripts/bench/run.sh.
# Results live in the associative array R (name -> value); the commands
# that made them in CMD (name -> command line), for BENCHMARKS.md.

declare -gA R=()
declare -gA CMD=()

log() { printf 'bench: %s\n' "$*" >&2; }

# bench_init NAME: the start every benchmark script shares. BUILD (env,
# default build, relative to the repository), PROFFS and TB set; root
# needed; W a fresh /var/tmp/proffs-NAME.XXXXXX and PIDS=(). At exit:
# every pid in PIDS killed (its process group with BENCH_KILL_GROUPS=1)
# and waited for, the script's bench_more_cleanup called if it has one,
# $W/mp unmounted, W removed, and kernel.bpf_stats_enabled put back when
# BENCH_BPF_STATS=1 had it turned on here.
bench_init() {
	BUILD=${BUILD:-build}
	[[ $BUILD = /* ]] || BUILD=$ROOT/$BUILD
	PROFFS=$BUILD/proffs
	TB=$BUILD/tests
	[[ $(id -u) == 0 ]] || { log "needs root (BPF, perf, FUSE)"; exit 1; }
	W=$(mktemp -d "/var/tmp/proffs-$1.XXXXXX")
	PIDS=()
	BENCH_OLD_STATS=$(sysctl -n kernel.bpf_stats_enabled)
	((${BENCH_BPF_STATS:-0})) && sysctl -qw kernel.bpf_stats_enabled=1
	trap bench_cleanup_ EXIT
	trap 'exit 130' INT TERM
}

bench_cleanup_() {
	local p
	for p in "${PIDS[@]}"; do
		((${BENCH_KILL_GROUPS:-0})) && kill -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null || true
	done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	declare -F bench_more_cleanup >/dev/null && bench_more_cleanup
	grep -q " $W/mp " /proc/mounts && { fusermount3 -u -z "$W/mp" 2>/dev/null || umount -l "$W/mp"; }
	((${BENCH_BPF_STATS:-0})) && sysctl -qw kernel.bpf_stats_enabled="$BENCH_OLD_STATS"
	rm -rf "$W"
}

# bench_need FILE...: each FILE there (built by make all, or installed by
# scripts/deps.sh), else the benchmark stops saying which.
bench_need() {
	local f
	for f in "$@"; do [[ -e $f ]] || { log "$f missing (make all; scripts/deps.sh)"; exit 1; }; done
}

# shortcmd CMD...: the command line as BENCHMARKS.md shows it: the scratch
# dir as $W, tmpfs scratch as $SHM, paths in the repository relative.
shortcmd() {
	local c="$*"
	c=${c//$W/\$W}
	[[ -n ${SHM_DAY:-} ]] && c=${c//$SHM_DAY/\$SHM}
	printf '%s' "${c//$ROOT\//}"
}

set_kv() { R[$1]=$2; }

# Drops the page cache so "cold" means cold; remembers whether it could.
CAN_DROP=0
if [[ -w /proc/sys/vm/drop_caches ]]; then CAN_DROP=1; fi
drop_caches() {
	if ((CAN_DROP)); then
		sync
		echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || CAN_DROP=0
	fi
}

# run_kv PREFIX CMD...: runs CMD, keeps its key=value stdout lines as
# R[PREFIX_key] and its command line as CMD[PREFIX].
run_kv() {
	local prefix=$1 out k v
	shift
	CMD[$prefix]=$(shortcmd "$@")
	out=$("$@") || { log "failed: $*"; exit 1; }
	while IFS='=' read -r k v; do
		[[ -n $k && $k != \#* ]] && R[${prefix}_$k]=$v
	done <<< "$out"
}

# ms_since T0: milliseconds from $EPOCHREALTIME value T0 to now.
ms_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", (b - a) * 1000 }'; }

# time_cmd NAME N cold|warm OUTFILE CMD...: runs CMD N times with stdout to
# OUTFILE (page cache dropped first when cold); R[NAME_first_ms] is the
# first run, R[NAME_median_ms] the median of all, R[NAME_min_ms] the best.
time_cmd() {
	local name=$1 n=$2 mode=$3 outf=$4 i t0 ts=()
	shift 4
	CMD[$name]=$(shortcmd "$@")
	for ((i = 0; i < n; i++)); do
		# TIME_BEFORE: a command run before each timed run, untimed
		[[ -n ${TIME_BEFORE:-} ]] && $TIME_BEFORE
		[[ $mode = cold ]] && drop_caches
		t0=$EPOCHREALTIME
		"$@" > "$outf" || { log "failed: $*"; exit 1; }
		ts+=("$(ms_since "$t0")")
	done
	R[${name}_first_ms]=${ts[0]}
	R[${name}_median_ms]=$(printf '%s\n' "${ts[@]}" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
	R[${name}_min_ms]=$(printf '%s\n' "${ts[@]}" | sort -g | head -1)
	R[${name}_runs]=$n
	R[${name}_mode]=$mode
	((CAN_DROP)) || R[${name}_mode]="$mode (page cache NOT dropped: no permission)"
}

# pprof_total FILE: the total of sample type 0 as go tool pprof reports it.
pprof_total() {
	go tool pprof -top -sample_index=0 -nodecount=1 "$1" 2>/dev/null |
		sed -n 's/.* of \([0-9.]*\) total.*/\1/p' | head -1
}

# check_totals A B EXPECTED: both profiles hold EXPECTED samples.
check_totals() {
	local a b
	a=$(pprof_total "$1")
	b=$(pprof_total "$2")
	R[total_proffs]=$a
	R[total_pprof]=$b
	if [[ $a != "$3" || $b != "$3" ]]; then
		log "WARNING: totals differ: proffs $a, pprof $b, generated $3"
		R[totals_ok]="NO (proffs $a, pprof $b, generated $3)"
	else
		R[totals_ok]="yes ($3 samples on both sides)"
	fi
}

# ratio A B [DIGITS]: A / B.
ratio() { awk -v a="$1" -v b="$2" -v d="${3:-1}" 'BEGIN { if (b + 0 == 0) print "n/a"; else printf "%.*f", d, a / b }'; }

# goal VALUE OP LIMIT: "met" or "MISSED".
goal() { awk -v v="$1" -v l="$3" -v op="$2" 'BEGIN {
	if (v == "" || v == "n/a") { print "not measured"; exit }
	ok = (op == "<=") ? (v + 0 <= l + 0) : (v + 0 >= l + 0); print ok ? "met" : "MISSED" }'; }

# v NAME: the value or "not measured".
v() { if [[ -n ${R[$1]:-} ]]; then printf '%s' "${R[$1]}"; else printf 'not measured'; fi; }

# perf_top NAME CMD...: profiles CMD (stdout discarded) with perf and keeps
# the top of the report (children included: which of our functions the
# time goes under) in $W/perf.NAME.txt, for BENCHMARKS.md.
perf_top() {
	local name=$1
	shift
	[[ ${PERF:-1} = 1 ]] && command -v perf >/dev/null || return 0
	perf record -q -F 499 --call-graph dwarf,16384 -o "$W/perf.$name.data" "$@" \
		>/dev/null 2>"$W/perf.$name.err" || { log "perf of $name failed"; return 0; }
	perf report -i "$W/perf.$name.data" --children --stdio -g none \
		--percent-limit 4 2>/dev/null | grep -E '^ +[0-9]' |
		awk '{ $3 = ""; print }' | head -30 > "$W/perf.$name.txt" || true
	CMD[perf_$name]="perf record -F 499 --call-graph dwarf $(shortcmd "$@")"
	rm -f "$W/perf.$name.data"
}

# db_sizes STORE OUT: pages per LMDB database of a store (mdb_stat -a),
# as a markdown table, biggest first: where the bytes on disk go.
db_sizes() {
	command -v mdb_stat >/dev/null || return 0
	{
		echo "| database | branch | leaf | overflow pages | KiB | share |"
		echo "|---|---:|---:|---:|---:|---:|"
		mdb_stat -a "$1" 2>/dev/null | awk '
			/^Status of/ { n = $3 }
			/Branch pages/ { b = $3 } /Leaf pages/ { l = $3 }
			/Overflow pages/ { o = $3; kb = (b + l + o) * 4; t += kb
				row[n] = sprintf("%d | %d | %d | %d", b, l, o, kb); k[n] = kb }
			END { for (n in row) printf "%d|| `%s` | %s | %.1f%% |\n", k[n], n, row[n], t ? 100 * k[n] / t : 0 }' |
			sort -t'|' -k1,1nr | cut -d'|' -f3- | sed 's/^/|/'
	} > "$2"
}

# median N...: the median of the numbers.
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# cpu_ticks PID: utime+stime of the whole process (all threads), in
# clock ticks (getconf CLK_TCK).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# cpu_ns PID: CPU time of the process's threads now, in nanoseconds (the
# first field of each thread's schedstat). The ticks of /proc/PID/stat
# are 10 ms: a daemon at 0.3% earns 9 of them in 30 s, so one tick more
# or less moved the figure by a ninth.
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'; }

# bpf_prog_stats PID PROG: "run_time_ns run_cnt" of the BPF program named
# PROG that process PID holds (found through its fds' prog_id; bpftool
# here lists no pids). Needs kernel.bpf_stats_enabled=1. It starts
# bpftool and python3: a daemon that profiles every process reads their
# /proc entries, so read a daemon's CPU time before calling this, or a
# second after.
bpf_prog_stats() {
	local id
	for id in $(awk '/^prog_id:/ { print $2 }' /proc/"$1"/fdinfo/* 2>/dev/null | sort -u); do
		bpftool prog show id "$id" -j 2>/dev/null | python3 -c '
import json, sys
p = json.load(sys.stdin)
if p.get("name") == sys.argv[1]:
    print(p.get("run_time_ns", 0), p.get("run_cnt", 0))' "$2"
	done | head -1 | grep . || echo 0 0
}

# bpf_memlock PID: bytes of the BPF maps process PID holds, each map once
# (a map shared by two programs' objects has an fd in each).
bpf_memlock() {
	local fd
	for fd in /proc/"$1"/fdinfo/*; do
		awk '/^map_id:/ { id = $2 } /^memlock:/ { m = $2 } END { if (id != "") print id, m }' "$fd" 2>/dev/null
	done | sort -u -k1,1 | awk '{ s += $2 } END { print s + 0 }'
}

# bpf_largest PID N: the N largest BPF maps process PID holds, "name KiB"
# comma-separated (which map grew, where the sum alone does not say).
bpf_largest() {
	local fd
	for fd in /proc/"$1"/fdinfo/*; do
		awk '/^map_id:/ { id = $2 } /^memlock:/ { m = $2 } END { if (id != "") print id, m }' "$fd" 2>/dev/null
	done | sort -u -k1,1 | sort -k2,2 -n -r | head -n "$2" | while read -r id m; do
		printf '%s %d KiB, ' "$(bpftool map show id "$id" 2>/dev/null | awk 'NR == 1 { for (i = 1; i < NF; i++) if ($i == "name") print $(i + 1) }')" $((m / 1024))
	done | sed 's/, $//'
}

# daemon_mem_bytes PID: VmRSS plus the BPF maps' memlock, counting once
# the map pages the process mmaps (unwind rows, ring buffer), which are in
# both.
daemon_mem_bytes() {
	local rss ml bm
	rss=$(awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$1/status")
	ml=$(bpf_memlock "$1")
	bm=$(awk '/^[0-9a-f]+-[0-9a-f]+ / { b = ($NF == "anon_inode:bpf-map") } b && /^Rss:/ { s += $2 } END { print (s + 0) * 1024 }' "/proc/$1/smaps")
	echo $((rss - bm + ml))
}

# measure_daemon PID SECS: "NS CPU" over SECS s of the daemon PID: its
# on_sample program's ns per sample (bpf_stats) and its CPU in % of one
# core, the CPU read between (not during) the bpftool calls.
measure_daemon() {
	local r0 c0 r1 c1 k0 k1 t0 t1 tck
	tck=$(getconf CLK_TCK)
	read -r r0 c0 <<<"$(bpf_prog_stats "$1" on_sample)"
	sleep 1 # the daemon reads bpftool's /proc entries: not in the window
	k0=$(cpu_ticks "$1"); t0=$EPOCHREALTIME
	sleep "$2"
	k1=$(cpu_ticks "$1"); t1=$EPOCHREALTIME
	read -r r1 c1 <<<"$(bpf_prog_stats "$1" on_sample)"
	awk -v r=$((r1 - r0)) -v c=$((c1 - c0)) -v k=$((k1 - k0)) -v hz="$tck" -v a="$t0" -v b="$t1" \
		'BEGIN { printf "%s %.3f\n", c ? sprintf("%.0f", r / c) : "nan", 100 * k / hz / (b - a) }'
}

# phase NAME ENV...: a daemon (99 Hz, 5 s batches) with ENV in the scratch
# dir $W, measured SECS s over whatever runs now (measure_daemon); appends
# to NS[NAME] and CPU[NAME] (the caller declares them: declare -A NS CPU)
# and keeps its runtimes' metrics lines (proffs_python_, _ruby_, _java_,
# _js_) in $W/metrics.NAME. Its pid goes to PIDS for the caller's trap.
phase() {
	local name=$1 d ns cpu
	shift
	rm -rf "$W/store"; mkdir -p "$W/mp"
	env "$@" "$PROFFS" run --store "$W/store" --mount "$W/mp" --hz 99 --batch-interval 5s >"$W/run.log" 2>&1 &
	d=$!; PIDS+=("$d")
	for _ in $(seq 200); do [[ -e $W/mp/README ]] && break; sleep 0.05; done
	sleep 3
	read -r ns cpu <<<"$(measure_daemon "$d" "$SECS")"
	NS[$name]+="$ns "; CPU[$name]+="$cpu "
	grep -E "^proffs_(python|ruby|java|js)_" "$W/mp/metrics" >"$W/metrics.$name" 2>/dev/null || true
	kill -TERM "$d"; wait "$d" || true
	log "$name: $ns ns/sample, daemon $cpu% of a core"
}
