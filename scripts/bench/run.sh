#!/usr/bin/env bash
# scripts/bench/run.sh - `make bench`: the benchmarks of issues 2 and 3.
#
# Generates a synthetic busy host (tests/tools/bench_gen.c), measures the
# store against its baselines in the same run, and writes BENCHMARKS.md at
# the repository root with every figure and the command that made it.
# Needs `make all` first (the Makefile's bench target does it). Takes a few
# minutes. Env: BUILD (default build), BENCH_DIR (scratch, default a fresh
# mktemp -d under /var/tmp, removed at the end unless KEEP=1), OUT (default
# $ROOT/BENCHMARKS.md), SKIP_DAY=1 / SKIP_MOUNT=1 / SKIP_EXTRA=1 (the other
# scripts/bench/*.sh, e.g. sampler.sh) to leave parts out, ONLY_EXTRA="unwind
# memory" to run only those of them (sections not run are carried over
# from the BENCHMARKS.md being rewritten: report.sh),
# PERF=0 to skip the perf profiles of renders and ingest put in the report,
# REPORT_ONLY=1 (with the BENCH_DIR of a KEEP=1 run) to rewrite the report.
set -euo pipefail

# The ingest figures are of a store that syncs every commit, as the daemon's.
unset PROFFS_STORE_NOSYNC
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
[[ $BUILD = /* ]] || BUILD=$ROOT/$BUILD
PROFFS=$BUILD/proffs
TB=$BUILD/tests
OUT=${OUT:-$ROOT/BENCHMARKS.md}
source "$ROOT/scripts/bench/lib.sh"

if [[ ${REPORT_ONLY:-0} = 1 ]]; then
	W=${BENCH_DIR:?REPORT_ONLY needs BENCH_DIR}
	source "$W/results.sh"
	source "$ROOT/scripts/bench/report.sh"
	log "rewrote $OUT from $W"
	exit 0
fi

for f in "$PROFFS" "$TB/bench_gen" "$TB/bench_fsread" "$TB/bench_render"; do
	[[ -x $f ]] || { echo "bench: $f missing; run make all first" >&2; exit 1; }
done

W=${BENCH_DIR:-$(mktemp -d /var/tmp/proffs-bench.XXXXXX)}
mkdir -p "$W"
MNT=""
MNT_PID=""
SHM_DAY=""
cleanup() {
	[[ -n $SHM_DAY ]] && rm -rf "$SHM_DAY"
	if [[ -n $MNT_PID ]]; then
		fusermount3 -u -z "$MNT" 2>/dev/null || true
		kill "$MNT_PID" 2>/dev/null || true
		wait "$MNT_PID" 2>/dev/null || true
	fi
	[[ -n $MNT ]] && rmdir "$MNT" 2>/dev/null
	[[ ${KEEP:-0} = 1 ]] || rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "scratch dir $W"
set_kv load_start "$(cut -d' ' -f1-3 /proc/loadavg)"
# The scratch disk's synchronous write latency, for reading the ingest
# figures (LMDB syncs every commit).
set_kv dsync_ms "$(dd if=/dev/zero of="$W/dsync.test" bs=4096 count=200 oflag=dsync 2>&1 |
	awk '/copied/ { for (i = 1; i <= NF; i++) if ($i == "s,") print $(i-1) * 1000 / 200 }')"
rm -f "$W/dsync.test"
NOW=$(date +%s)
HOUR=$(( NOW / 3600 * 3600 - 3 * 3600 ))   # a closed hour, 3 h ago
DAY=$(( NOW / 86400 * 86400 - 86400 ))     # yesterday, UTC
WEEK=$(( DAY - 6 * 86400 ))                # the 7 days ending yesterday
HOUR_NAME=$(date -u -d "@$HOUR" +%Y-%m-%dT%H)
DAY_NAME=$(date -u -d "@$DAY" +%Y-%m-%d)

# ---------------------------------------------------------------- the hour
log "generating the synthetic hour ($HOUR_NAME): store, gzip pprof per batch, zstd folded"
run_kv gen "$TB/bench_gen" hour --start "$HOUR" --store "$W/hour" \
	--pprof-dir "$W/pprof" --folded "$W/folded.zst"

S=${R[gen_samples]}
set_kv pprof_bytes "$(du -sb "$W/pprof" | cut -f1)"
set_kv pprof_files "$(ls "$W/pprof" | wc -l)"
set_kv folded_bytes "$(stat -c %s "$W/folded.zst")"

# store_sizes PREFIX: apparent bytes of the store dir (data.mdb + lock.mdb),
# of an mdb_copy -c compacted copy, and pages per database.
store_sizes() {
	set_kv "$1_bytes" "$(du -sb "$W/hour" | cut -f1)"
	rm -rf "$W/hour.compact"
	mkdir -p "$W/hour.compact"
	if mdb_copy -c "$W/hour" "$W/hour.compact" 2>/dev/null; then
		set_kv "$1_compact" "$(du -sb "$W/hour.compact" | cut -f1)"
	fi
	rm -rf "$W/hour.compact"
	db_sizes "$W/hour" "$W/dbsizes.$1.md"
}

# render_hour PREFIX [STORE]: proffs cat cold (5 runs each), then in-process
# (STORE: the hour's store, default $W/hour, whose files are $W/hour_*).
render_hour() {
	local f st=${2:-$W/hour} out
	for f in profile.pb folded.txt; do
		out=$W/hour_$f
		[[ -n ${2:-} ]] && out=$W/$1_$f
		time_cmd "$1_cat_${f%%.*}" 5 cold "$out" \
			"$PROFFS" cat --store "$st" "/merged/cpu/$HOUR_NAME/$f"
		set_kv "$1_cat_${f%%.*}_bytes" "$(stat -c %s "$out")"
	done
	drop_caches
	run_kv "$1_in" "$TB/bench_render" --store "$st" --repeat 5 \
		--from "$HOUR" --to $(( HOUR + 3600 )) \
		"/merged/cpu/$HOUR_NAME/profile.pb" "/merged/cpu/$HOUR_NAME/folded.txt"
}

# The hour as it stands right after its last batch (raw blocks only)...
log "the hour, raw blocks only: sizes and cold renders of merged/cpu/$HOUR_NAME"
store_sizes raw
render_hour raw
# ...and once the next batch has arrived and the store rolled the hour up,
# as it is in a running daemon ten seconds later.
log "closing the hour (one 1-sample batch at its end) and measuring again"
run_kv close "$TB/bench_gen" close --start $(( HOUR + 3600 )) --store "$W/hour"
store_sizes closed
render_hour closed
# What part of a cold `proffs cat` is the process itself: start-up with the
# page cache dropped (binary and libraries read from disk), and the same
# render with a warm page cache.
time_cmd startup 5 cold /dev/null "$PROFFS" version
time_cmd closed_warm_cat_profile 5 warm "$W/hour_warm.pb" \
	"$PROFFS" cat --store "$W/hour" "/merged/cpu/$HOUR_NAME/profile.pb"

log "baseline: go tool pprof -proto merging ${R[pprof_files]} per-batch files"
time_cmd pprof_merge 1 cold "$W/pprof_merged.pb" \
	go tool pprof -proto -symbolize=none "$W"/pprof/batch-*.pb.gz
CMD[pprof_merge]='go tool pprof -proto -symbolize=none $W/pprof/batch-*.pb.gz'
# The same totals on both sides, or the comparison means nothing.
check_totals "$W/hour_profile.pb" "$W/pprof_merged.pb" "$S"

# The same hour as a user brings it: `proffs import` of the per-batch
# files into a store of its own (issue 26 item 4). Import builds the
# rollups of the hours it filled that ended, as a later batch would.
log "the hour imported from its ${R[pprof_files]} pprof files"
time_cmd import 1 cold /dev/null "$PROFFS" import --store "$W/imported" "$W"/pprof/batch-*.pb.gz
render_hour imported "$W/imported"
R[imported_totals]=$( [[ $(pprof_total "$W/imported_profile.pb") == "$(pprof_total "$W/pprof_merged.pb")" ]] &&
	echo "yes ($(pprof_total "$W/imported_profile.pb"))" || echo "NO: $(pprof_total "$W/imported_profile.pb") vs $(pprof_total "$W/pprof_merged.pb")")

# Steady state: a second hour into the same store (on disk, fsync on),
# where the symbols and stacks are known already, as in a running daemon.
log "ingest, steady state: a second hour appended to the hour's store"
run_kv steady "$TB/bench_gen" day --start $(( HOUR + 3600 )) --batches 360 --store "$W/hour"

log "perf profiles of the hour render and of ingest"
perf_top hour_render "$PROFFS" cat --store "$W/hour" "/merged/cpu/$HOUR_NAME/profile.pb"
perf_top ingest "$TB/bench_gen" day --start "$HOUR" --batches 90 --store "$W/perf-ingest"
rm -rf "$W/perf-ingest"

# ---------------------------------------------------------------- the day
if [[ ${SKIP_DAY:-0} != 1 ]]; then
	# Built on tmpfs (fsync is free there: 8640 commits on a disk take
	# many minutes more and measure nothing we report), then copied to
	# the scratch disk, where the renders below read it cold.
	log "generating a 24 h store ($DAY_NAME, 8640 batches) on tmpfs"
	SHM_DAY=$(mktemp -d /dev/shm/proffs-bench-day.XXXXXX)
	run_kv day "$TB/bench_gen" day --start "$DAY" --store "$SHM_DAY/day"
	run_kv dayclose "$TB/bench_gen" close --start $(( DAY + 86400 )) --store "$SHM_DAY/day"
	cp -a "$SHM_DAY/day" "$W/day"
	rm -rf "$SHM_DAY"
	SHM_DAY=""
	set_kv day_store_bytes "$(du -sb "$W/day" | cut -f1)"
	log "rendering merged/cpu/$DAY_NAME cold"
	for f in profile.pb folded.txt; do
		time_cmd "cat_day_${f%%.*}" 3 cold "$W/day_$f" \
			"$PROFFS" cat --store "$W/day" "/merged/cpu/$DAY_NAME/$f"
	done
	set_kv cat_day_pb_bytes "$(stat -c %s "$W/day_profile.pb")"
	drop_caches
	run_kv dayin "$TB/bench_render" --store "$W/day" --repeat 3 \
		--from "$DAY" --to $(( DAY + 86400 ))
	perf_top day_render "$PROFFS" cat --store "$W/day" "/merged/cpu/$DAY_NAME/profile.pb"
fi

# ---------------------------------------------------------------- the mount
MOUNT_OK=0
if [[ ${SKIP_MOUNT:-0} != 1 ]] && "$PROFFS" mount --help >/dev/null 2>&1; then
	MOUNT_OK=1
fi
if ((MOUNT_OK)); then
	log "generating a week of minutes (10,080 one-minute batches)"
	run_kv week "$TB/bench_gen" minutes --start "$WEEK" --store "$W/week"
	source "$ROOT/scripts/bench/mount.sh"
fi

# ------------------------------------------------- the other bench scripts
# Every other executable scripts/bench/*.sh prints a Markdown section on
# stdout (e.g. sampler.sh, the daemon's figures of issue 4); each runs
# alone, after ours, and its section goes into BENCHMARKS.md as printed.
EXTRA=()
for f in "$ROOT"/scripts/bench/*.sh; do
	n=$(basename "$f" .sh)
	case $n in run|lib|mount|report|compare) continue ;; esac
	[[ -x $f ]] || continue
	[[ ${SKIP_EXTRA:-0} = 1 ]] && continue
	[[ -z ${ONLY_EXTRA:-} || " $ONLY_EXTRA " == *" $n "* ]] || continue
	log "running scripts/bench/$n.sh"
	rc=0
	BUILD=$BUILD "$f" > "$W/extra.$n.md" 2> "$W/extra.$n.err" || rc=$?
	if ((rc != 0)); then
		{
			echo "## scripts/bench/$n.sh"
			echo
			echo "not measured: scripts/bench/$n.sh exited $rc: $(tail -1 "$W/extra.$n.err")"
		} > "$W/extra.$n.md"
	fi
	EXTRA+=("$n")
done

set_kv load_end "$(cut -d' ' -f1-3 /proc/loadavg)"
set_kv date "$(date -u +%Y-%m-%dT%H:%MZ)"
set_kv commit "$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)"
# Everything the report needs, so REPORT_ONLY=1 BENCH_DIR=... can rewrite
# BENCHMARKS.md from a kept scratch dir (KEEP=1) without measuring again.
{
	declare -p R CMD
	declare -p HOUR HOUR_NAME DAY DAY_NAME MOUNT_OK CAN_DROP BUILD EXTRA
} > "$W/results.sh"
source "$ROOT/scripts/bench/report.sh"
log "wrote $OUT"
