#!/usr/bin/env bash
# scripts/bench/run.sh - `make bench`: the benchmarks of issues 2 and 3.
#
# Generates a synthetic busy host (tests/tools/bench_gen.c), measures the
# store against its baselines in the same run, and writes BENCHMARKS.md at
# the repository root with every figure and the command that made it.
# Needs `make all` first (the Makefile's bench target does it). Takes a few
# minutes. Env: BUILD (default build), BENCH_DIR (scratch, default a fresh
# mktemp -d under /var/tmp, removed at the end unless KEEP=1), OUT (default
# $ROOT/BENCHMARKS.md), SKIP_DAY=1 / SKIP_MOUNT=1 to leave parts out,
# PERF=0 to skip the perf profiles of renders and ingest put in the report.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
[[ $BUILD = /* ]] || BUILD=$ROOT/$BUILD
PROFFS=$BUILD/proffs
TB=$BUILD/tests
OUT=${OUT:-$ROOT/BENCHMARKS.md}
source "$ROOT/scripts/bench/lib.sh"

for f in "$PROFFS" "$TB/bench_gen" "$TB/bench_fsread" "$TB/bench_render"; do
	[[ -x $f ]] || { echo "bench: $f missing; run make all first" >&2; exit 1; }
done

W=${BENCH_DIR:-$(mktemp -d /var/tmp/proffs-bench.XXXXXX)}
mkdir -p "$W"
MNT=""
MNT_PID=""
cleanup() {
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
CMD_GEN="bench_gen hour --start $HOUR --store DIR --pprof-dir PP --folded F.zst"

S=${R[gen_samples]}
set_kv store_bytes "$(du -sb "$W/hour" | cut -f1)"
set_kv store_apparent "$(du -sb --apparent-size "$W/hour" | cut -f1)"
set_kv pprof_bytes "$(du -sb "$W/pprof" | cut -f1)"
set_kv pprof_files "$(ls "$W/pprof" | wc -l)"
set_kv folded_bytes "$(stat -c %s "$W/folded.zst")"
if command -v mdb_copy >/dev/null; then
	mkdir -p "$W/hour.compact"
	if mdb_copy -c "$W/hour" "$W/hour.compact" 2>/dev/null; then
		set_kv store_compact "$(du -sb "$W/hour.compact" | cut -f1)"
	fi
fi

# ------------------------------------------------------ renders of the hour
log "rendering merged/cpu/$HOUR_NAME cold (page cache dropped, fresh process)"
for f in profile.pb folded.txt; do
	time_cmd "cat_hour_${f%%.*}" 5 cold "$W/hour_$f" \
		"$PROFFS" cat --store "$W/hour" "/merged/cpu/$HOUR_NAME/$f"
done
set_kv cat_hour_pb_bytes "$(stat -c %s "$W/hour_profile.pb")"
set_kv cat_hour_folded_bytes "$(stat -c %s "$W/hour_folded.txt")"
log "rendering in-process (bench_render)"
run_kv inproc "$TB/bench_render" --store "$W/hour" --repeat 5 \
	--from "$HOUR" --to $(( HOUR + 3600 )) \
	"/merged/cpu/$HOUR_NAME/profile.pb" "/merged/cpu/$HOUR_NAME/folded.txt"

log "baseline: go tool pprof -proto merging ${R[pprof_files]} per-batch files"
time_cmd pprof_merge 1 cold "$W/pprof_merged.pb" \
	go tool pprof -proto -symbolize=none "$W"/pprof/batch-*.pb.gz
CMD[pprof_merge]='go tool pprof -proto -symbolize=none $W/pprof/batch-*.pb.gz'
# The same totals on both sides, or the comparison means nothing.
check_totals "$W/hour_profile.pb" "$W/pprof_merged.pb" "$S"

log "perf profiles of the hour render and of ingest"
perf_top hour_render "$PROFFS" cat --store "$W/hour" "/merged/cpu/$HOUR_NAME/profile.pb"
perf_top ingest "$TB/bench_gen" day --start "$HOUR" --batches 90 --store "$W/perf-ingest"

# ---------------------------------------------------------------- the day
if [[ ${SKIP_DAY:-0} != 1 ]]; then
	log "generating a 24 h store ($DAY_NAME, 8640 batches)"
	run_kv day "$TB/bench_gen" day --start "$DAY" --store "$W/day"
	set_kv day_store_bytes "$(du -sb "$W/day" | cut -f1)"
	log "rendering merged/cpu/$DAY_NAME cold"
	for f in profile.pb folded.txt; do
		time_cmd "cat_day_${f%%.*}" 3 cold "$W/day_$f" \
			"$PROFFS" cat --store "$W/day" "/merged/cpu/$DAY_NAME/$f"
	done
	set_kv cat_day_pb_bytes "$(stat -c %s "$W/day_profile.pb")"
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

source "$ROOT/scripts/bench/report.sh"
log "wrote $OUT"
