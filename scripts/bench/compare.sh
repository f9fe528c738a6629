#!/usr/bin/env bash
# scripts/bench/compare.sh - the store and mount figures of `make bench`
# (run.sh without the other scripts and without perf) for an older commit
# and for this tree, measured in turn in one run, side by side: what a
# change that should not move them (a refactor) is held to.
#
#   scripts/bench/compare.sh COMMIT [ROUNDS]
#
# COMMIT is built in a scratch worktree (`make all`) and measured by its
# own run.sh; this tree's build/ is used as it is (run `make all` first). ROUNDS (default 2) alternates the
# two builds A B A B..., so drift in the host's load hits both; a figure is
# the median of its rounds. Prints a Markdown table on stdout: every timed
# figure (median ms of run.sh's time_cmd runs) and the ingest rates, with
# new/old and whether the difference exceeds the spread seen between
# rounds of the same build (noise). Needs root (page cache drops).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BASE=${1:?usage: compare.sh COMMIT [ROUNDS]}
ROUNDS=${2:-2}
W=$(mktemp -d /var/tmp/proffs-compare.XXXXXX)
WT=$W/base
cleanup() {
	git -C "$ROOT" worktree remove --force "$WT" 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log() { printf 'compare: %s\n' "$*" >&2; }

[[ -x $ROOT/build/proffs ]] || { log "build/ missing: run make all first"; exit 1; }
git -C "$ROOT" worktree add -q --detach "$WT" "$BASE"
log "building $BASE in $WT"
make -C "$WT" -s all >"$W/base-build.log" 2>&1 || { log "base build failed: $(tail -3 "$W/base-build.log")"; exit 1; }

run_one() { # NAME TREE ROUND: TREE's run.sh with TREE's build/
	local d=$W/$1.$3
	log "round $3: $1"
	mkdir -p "$d"
	BUILD=$2/build BENCH_DIR=$d KEEP=1 OUT=$d/report.md SKIP_EXTRA=1 PERF=0 \
		"$2/scripts/bench/run.sh" >"$d/log" 2>&1 || { log "$1 round $3 failed: $(tail -2 "$d/log")"; exit 1; }
	# The figures, one "key value" per line: timed medians and rates.
	(
		source "$d/results.sh"
		for k in "${!R[@]}"; do
			case $k in
			*_median_ms | *rate* | *per_s*) [[ ${R[$k]} =~ ^[0-9.]+$ ]] && echo "$k ${R[$k]}" ;;
			esac
		done
	) | sort >"$W/$1.$3.kv"
}
for ((i = 1; i <= ROUNDS; i++)); do
	run_one old "$WT" "$i"
	run_one new "$ROOT" "$i"
done
# The same work without run.sh (whose steps differ between the commits and
# shift what runs before a timed step): each build ingests the same
# synthetic hour (bench_gen, seeded) and renders it in process
# (bench_render), three rounds alternating.
H=$(( $(date +%s) / 3600 * 3600 - 3 * 3600 ))
for ((i = 1; i <= 3; i++)); do
	for side in old new; do
		tree=$ROOT
		[[ $side == old ]] && tree=$WT
		rm -rf "$W/ab-store"
		{
			"$tree/build/tests/bench_gen" hour --start "$H" --store "$W/ab-store" 2>/dev/null |
				grep -E '^ingest_samples_per_(s|cpu_s)='
			"$tree/build/tests/bench_render" --store "$W/ab-store" --repeat 5 --from "$H" --to $((H + 3600)) 2>/dev/null |
				grep -E '^(merge|encode|folded)_median_ms='
		} | sed 's/^/ab_/; s/per_cpu_s/cpu_per_s/; s/=/ /' >"$W/$side.ab$i.kv"
	done
done

echo "## Layout refactor: store and mount figures, $BASE against $(git -C "$ROOT" describe --always --dirty)"
echo
echo "Command: \`scripts/bench/compare.sh $BASE $ROUNDS\` ($(date -u +%Y-%m-%dT%H:%MZ), load at end $(cut -d' ' -f1-3 /proc/loadavg));"
echo "each side is run.sh (SKIP_EXTRA=1 PERF=0) built from its commit, rounds alternating old/new;"
echo "a value is the median over rounds; noise is the larger spread (max/min - 1) of the two sides' rounds."
echo "Rows ab_*: the same seeded hour ingested (bench_gen) and rendered in process (bench_render) by each build, 3 rounds."
echo
echo "| figure | old | new | new / old | noise | verdict |"
echo "|---|---:|---:|---:|---:|---|"
cat "$W"/old.*.kv "$W"/new.*.kv | cut -d' ' -f1 | sort -u | while read -r k; do
	o=$(grep -h "^$k " "$W"/old.*kv | cut -d' ' -f2 | sort -g)
	n=$(grep -h "^$k " "$W"/new.*kv | cut -d' ' -f2 | sort -g)
	[[ -n $o && -n $n ]] || continue
	awk -v k="$k" -v o="$(echo $o)" -v n="$(echo $n)" 'function med(s, a, c) {
		c = split(s, a, " "); return c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2 }
	function spread(s, a, c) { c = split(s, a, " "); return a[1] > 0 ? a[c] / a[1] - 1 : 0 }
	BEGIN {
		mo = med(o); mn = med(n); r = mo > 0 ? mn / mo : 0
		nz = spread(o) > spread(n) ? spread(o) : spread(n)
		if (nz < 0.05) nz = 0.05  # one-shot timings on a shared host
		worse = (k ~ /rate|per_s/) ? (r < 1 - nz) : (r > 1 + nz)
		better = (k ~ /rate|per_s/) ? (r > 1 + nz) : (r < 1 - nz)
		printf "| %s | %s | %s | %.2f | %.0f%% | %s |\n", k, mo, mn, r, nz * 100,
			worse ? "WORSE" : better ? "better" : "within noise"
	}'
done
