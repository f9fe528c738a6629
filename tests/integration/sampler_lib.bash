# sampler_lib.bash - shared by tests/integration/sampler_*.sh (sourced, not
# run). Each test gets its own work dir and mountpoint, and a trap that
# kills, by pid, what the test started, unmounts (fusermount3 -u -z) and
# removes the cgroups it created.
#
# Env: PROFFS (binary), TESTS_BIN (helpers), ROOT (repo).
set -u
PROFFS=${PROFFS:-$ROOT/build/proffs}
TESTS_BIN=${TESTS_BIN:-$ROOT/build/tests}

WORK=$(mktemp -d /tmp/proffs-sampler.XXXXXX)
MOUNTS=()  # mountpoints to unmount at exit
PIDS=()    # processes to kill at exit
declare -A RUN_LOGS=() # daemon pid -> its log
CGROUPS=() # cgroup dirs to remove at exit, innermost last
PERFMAPS=() # pids whose /tmp/perf-PID.map to remove at exit (a JIT leaves it)
FAILS=0

log() { printf '%s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*"; FAILS=$((FAILS + 1)); }
ok() { printf 'ok: %s\n' "$*"; }
die() {
	printf 'FAIL: %s\n' "$*"
	[[ -n "${RUN_LOG:-}" && -f $RUN_LOG ]] && { echo "--- daemon log (tail)"; tail -n 20 "$RUN_LOG"; }
	exit 1
}
skip() { printf 'SKIP: %s\n' "$*"; exit 77; }
# metric NAME [FILE]: the value of one series of /prof/metrics (or FILE).
metric() { awk -v k="$1" '$1 == k { print $2 }' "${2:-$MP/metrics}"; }
# stored [MP]: waits until every sample taken before now is stored and
# readable in the tree: the daemon's proffs_stored_until_seconds passes
# this moment at its next cut (at most a drain interval away) once no walk
# is still parked for its table. At most 30 s; dies if it never does.
stored() {
	local m=${1:-$MP}/metrics t=$EPOCHREALTIME u i
	for i in $(seq 300); do
		u=$(metric proffs_stored_until_seconds "$m")
		awk -v u="${u:-0}" -v t="$t" 'BEGIN { exit !(u >= t) }' && return 0
		sleep 0.1
	done
	die "nothing stored past $t in 30 s (proffs_stored_until_seconds ${u:-missing})"
}

s_cleanup() {
	local rc=$? m p i
	trap - EXIT INT TERM
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do
		for i in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
	done
	for p in "${PERFMAPS[@]}"; do rm -f "/tmp/perf-$p.map"; done
	for m in "${MOUNTS[@]}"; do
		if grep -q " $m " /proc/mounts 2>/dev/null; then
			fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
		fi
	done
	for ((i = ${#CGROUPS[@]} - 1; i >= 0; i--)); do rmdir "${CGROUPS[i]}" 2>/dev/null; done
	[[ -n ${KEEP_WORK:-} ]] || rm -rf "$WORK" 2>/dev/null
	exit "$rc"
}
trap s_cleanup EXIT
trap 'exit 1' INT TERM

[[ $(id -u) == 0 ]] || skip "needs root (BPF, FUSE mounts, cgroups)"
[[ -r /sys/kernel/btf/vmlinux ]] || skip "kernel has no BTF (/sys/kernel/btf/vmlinux): CO-RE BPF cannot load"

is_mounted() {
	awk -v d="$1" '$2 == d && $3 == "fuse.proffs" { f = 1 } END { exit !f }' /proc/mounts
}

# run_start STORE MP [args...]: starts `proffs run` in the background and
# waits until MP is mounted. Sets RUN_PID and RUN_LOG. A daemon that
# exits first fails the test with its first error line. RUN_SETSID=1: in a
# session of its own, as systemd starts a service (setsid execs the
# daemon: a background job of a script leads no process group).
RUN_N=0
run_start() {
	local store=$1 mp=$2 i
	shift 2
	RUN_N=$((RUN_N + 1))
	RUN_LOG=$WORK/run-$RUN_N.log
	if [[ ${RUN_SETSID:-} == 1 ]]; then
		setsid "$PROFFS" run --store "$store" --mount "$mp" "$@" >"$RUN_LOG" 2>&1 &
	else
		"$PROFFS" run --store "$store" --mount "$mp" "$@" >"$RUN_LOG" 2>&1 &
	fi
	RUN_PID=$!
	RUN_LOGS[$RUN_PID]=$RUN_LOG
	PIDS+=("$RUN_PID")
	[[ " ${MOUNTS[*]} " == *" $mp "* ]] || MOUNTS+=("$mp")
	for i in $(seq 200); do
		# A stale mount from a crash is listed too: wait for an answer.
		if is_mounted "$mp" && [[ -e $mp/README ]]; then return 0; fi
		if ! kill -0 "$RUN_PID" 2>/dev/null; then
			cat "$RUN_LOG"
			# The daemon's own first error is the cause (a kernel that
			# refuses a program says which and why): never a skip.
			die "proffs run exited early: $(grep -m 1 'error:' "$RUN_LOG")"
		fi
		sleep 0.05
	done
	cat "$RUN_LOG"
	die "proffs run did not mount $mp"
}

# run_stop PID MP: SIGTERM; expect exit 0 within 15 s and no mount left.
run_stop() {
	local pid=$1 mp=$2 i rc t0=$EPOCHREALTIME
	kill -TERM "$pid"
	for i in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	RUN_STOP_S=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	if kill -0 "$pid" 2>/dev/null; then
		fail "proffs run did not exit within $RUN_STOP_S s of SIGTERM"
		run_stop_log "$pid"; return 1
	fi
	wait "$pid"; rc=$?
	[[ $rc == 0 ]] || { fail "proffs run exited $rc on SIGTERM (after $RUN_STOP_S s)"; run_stop_log "$pid"; return 1; }
	if grep -q " $mp " /proc/mounts; then fail "mount left behind at $mp"; run_stop_log "$pid"; return 1; fi
	return 0
}

# run_stop_log [PID]: that daemon's last words (the latest one's without
# PID), for a failed stop; a sanitizer's report is longer than a tail.
run_stop_log() {
	local log=${RUN_LOGS[${1:-0}]:-$RUN_LOG}
	echo "--- daemon log ($log)"
	if grep -q '^==[0-9]*==ERROR' "$log"; then grep -A 30 '^==[0-9]*==ERROR' "$log" | head -40; else tail -n 12 "$log"; fi
}

# flushed SECS: waits SECS (a batch interval or more: what was sampled
# is stored by then), then dies, with the daemon's whole log, unless the
# latest daemon still runs.
flushed() {
	sleep "$1"
	kill -0 "$RUN_PID" 2>/dev/null || { cat "$RUN_LOG"; die "daemon died"; }
}

# fsum FILE [ERE]: sum of the counts of folded lines (matching ERE).
# A cpu folded.txt counts samples; a test that compares with CPU time
# sets FOLDED_SCALE to the sampling period in ns (1e9 / Hz), so sums read
# as sampled CPU nanoseconds.
fsum() {
	awk -v re="${2:-}" -v k="${FOLDED_SCALE:-1}" '{ n = $NF; sub(/ [0-9]+$/, "") } re == "" || $0 ~ re { s += n } END { printf "%.0f\n", s * k }' "$1"
}

# burst_samples RANGE FRAME_ERE CODE_ERE PID...: "ALL FRAMES RAN" of the
# PIDs' cpu samples in the store $STORE over RANGE (a tree range, e.g.
# last-15m): all of them, those with a frame matching FRAME_ERE (the
# runtime's own frames), and those that ran the runtime's code (matching
# FRAME_ERE or CODE_ERE, its VM's loop in the native stack).
burst_samples() {
	local range=$1 b
	for b in "${@:4}"; do
		printf '%s\n' "$("$PROFFS" cat --store "$STORE" "/merged/cpu/pid=$b/$range/folded.txt" 2>/dev/null)"
	done | FRAME=$2 CODE=$3 awk '{ n = $NF; all += n }
		$0 ~ ENVIRON["FRAME"] { fr += n }
		$0 ~ ENVIRON["FRAME"] || $0 ~ ENVIRON["CODE"] { ran += n }
		END { print all + 0, fr + 0, ran + 0 }'
}

# trace_lines WHAT PID STEM SRC_ERE [PATH_ERE]: PID's profile.pb over $R
# read into STEM.pb (else fail "WHAT: read its profile.pb", return 1),
# its `go tool pprof -traces -lines` into STEM.traces, and each trace into
# STEM.lines as "name:line;..." leaf first, the frames of source file
# SRC_ERE only: pprof's "name (SRC) PATH_ERE SRC[:line]" (line 0 when it
# has none).
trace_lines() {
	local what=$1 pid=$2 stem=$3
	cp "$MP/merged/cpu/pid=$pid/$R/profile.pb" "$stem.pb" || { fail "$what: read its profile.pb"; return 1; }
	HOME=$WORK go tool pprof -traces -lines "$stem.pb" >"$stem.traces" 2>/dev/null || fail "$what: go tool pprof -traces -lines"
	SRC=$4 PRE=${5:-} awk 'BEGIN { src = ENVIRON["SRC"]; frame = " \\(" src "\\) " ENVIRON["PRE"] src "(:[0-9]+)?$"; tail = " \\(" src "\\) .*" }
		/^-+\+/ { if (t != "") print t; t = ""; next }
		$0 ~ frame { n = $0; sub(/^ *[0-9.]+[a-z]* +/, "", n); sub(/^ +/, "", n)
		  l = n ~ /:[0-9]+$/ ? n : "0"; sub(/.*:/, "", l); sub(tail, "", n)
		  t = t (t == "" ? "" : ";") n ":" l }
		END { if (t != "") print t }' "$stem.traces" >"$stem.lines"
}

# pct A B: 100*A/B with one decimal ("nan" if B is 0).
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "nan"; else printf "%.1f\n", 100 * a / b }'; }

# band PCT N [NT]: the half-width in pp of a 3-sigma band for a share of
# PCT% measured from N samples, at least 3 pp; NT > 0: the figure it is
# judged against is itself a sample of NT (a thread clock that advances
# by ticks), whose variance adds to the samples'.
band() { awk -v p="$1" -v n="$2" -v t="${3:-0}" 'BEGIN { v = n > 0 ? p * (100 - p) / n : 1e4; if (t > 0) v += p * (100 - p) / t; s = 3 * sqrt(v); if (s < 3) s = 3; printf "%.1f\n", s }'; }

# tick_ns: the scheduler tick (1 / CONFIG_HZ) in ns: the step by which
# /proc/PID/schedstat's run time of a thread that keeps running advances
# (its value is the one the last tick or switch wrote).
tick_ns() {
	local hz
	hz=$({ zcat /proc/config.gz 2>/dev/null || cat "/boot/config-$(uname -r)" 2>/dev/null; } | sed -n 's/^CONFIG_HZ=//p')
	[[ $hz =~ ^[0-9]+$ ]] || die "tick_ns: no CONFIG_HZ in /proc/config.gz or /boot/config-$(uname -r)"
	echo $((1000000000 / hz))
}

# within X LO HI: LO <= X <= HI (decimals).
within() { awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x != "nan" && x >= lo && x <= hi) }'; }

finish() {
	if ((FAILS)); then echo "$FAILS check(s) failed"; exit 1; fi
	echo "all checks passed"
	exit 0
}
