#!/usr/bin/env bash
# scripts/bench/churn.sh - renders on a host with process churn (issue 13).
#
# bench_gen's busy host (200 steady processes, 99 Hz x 2 CPUs) plus 83
# short-lived pids per 10 s batch (~5,000 in ten minutes, each its own
# series: a fork storm), one hour of it. Measured: `proffs cat` cold (a
# fresh process, the page cache dropped) of the last 15 minutes of data and
# of the whole hour, profile.pb and folded.txt, and the same renders
# in-process (bench_render: first render of a fresh store handle, then the
# median of 5). Baseline, same run: `go tool pprof -proto` merging the same
# batches' pprof files (the totals are checked equal).
# Prints a Markdown section on stdout. Usage: scripts/bench/churn.sh
# (BUILD=dir, CHURN=pids per batch).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
PROFFS=$BUILD/proffs
TB=$BUILD/tests
CHURN=${CHURN:-83}
source "$ROOT/scripts/bench/lib.sh"
W=$(mktemp -d /var/tmp/proffs-churn.XXXXXX)
trap 'rm -rf "$W"' EXIT

# An hour of batches ending at the last whole minute (closed minutes: the
# hour is rolled up by a later batch, as in a running daemon).
START=$(( $(date +%s) / 60 * 60 - 3600 - 120 ))
mname() { date -u -d "@$1" +%Y-%m-%dT%H:%M; }
log "churn: generating an hour from $(mname "$START") with $CHURN new pids per batch"
PROFFS_STORE_NOSYNC=1 run_kv gen "$TB/bench_gen" hour --start "$START" --churn "$CHURN" \
	--store "$W/store" --pprof-dir "$W/pprof"
PROFFS_STORE_NOSYNC=1 run_kv close "$TB/bench_gen" close --start $((START + 3600)) --store "$W/store"

# Windows: the last 15 minutes of the data, and all of it (A..B: B excluded).
W15=$((START + 3600 - 900))
declare -A FROM=([15m]=$W15 [1h]=$START) TO=([15m]=$((START + 3600)) [1h]=$((START + 3600)))
for w in 15m 1h; do
	dir="/merged/cpu/$(mname "${FROM[$w]}")..$(mname "${TO[$w]}")"
	for f in profile.pb folded.txt; do
		time_cmd "cat${w}_${f%%.*}" 5 cold "$W/out$w.$f" "$PROFFS" cat --store "$W/store" "$dir/$f"
	done
	drop_caches
	run_kv "in$w" "$TB/bench_render" --store "$W/store" --repeat 5 "$dir/profile.pb" "$dir/folded.txt"
	# The baseline: the same batches' files.
	files=()
	for ((i = (FROM[$w] - START) / 10; i < (TO[$w] - START) / 10; i++)); do
		files+=("$(printf '%s/pprof/batch-%04d.pb.gz' "$W" "$i")")
	done
	time_cmd "pprof$w" 1 cold "$W/pprof$w.pb" go tool pprof -proto -symbolize=none "${files[@]}"
	CMD[pprof$w]="go tool pprof -proto -symbolize=none \$W/pprof/batch-NNNN.pb.gz (the ${#files[@]} batches of the window)"
	a=$(pprof_total "$W/out$w.profile.pb")
	b=$(pprof_total "$W/pprof$w.pb")
	R[tot$w]=$([[ $a == "$b" ]] && echo "yes ($a samples)" || echo "NO (proffs $a, pprof $b)")
	R[dir$w]=$dir
done

row() { # window file
	local w=$1 f=$2 n=cat$1_${2%%.*} k
	k=in${w}_$(printf '%s' "${R[dir$w]}/$f" | tr -c 'a-z0-9' '_')
	printf '| %s `%s` | %s ms (first %s) | %s ms (first %s) | %s |\n' "$w" "$f" "$(v ${n}_median_ms)" \
		"$(v ${n}_first_ms)" "$(v ${k}_median_ms)" "$(v ${k}_first_ms)" \
		"$(ratio "$(v pprof${w}_first_ms)" "$(v ${n}_median_ms)")x"
}
cat <<EOF
## Churn: renders on a host with a fork storm (issue 13): scripts/bench/churn.sh

An hour of bench_gen's busy host plus $CHURN short-lived pids per 10 s batch
(\`$(v gen_processes)\` processes in the hour, each new pid its own series;
$(v gen_samples) samples), ending $(mname $((START + 3600))) UTC. Generated with
\`$(shortcmd "${CMD[gen]}")\`. Cold: a fresh \`proffs cat\`, page cache dropped
before each of 5 runs (median). In-process: \`bench_render\`, median of 5 after
the first. pprof: \`go tool pprof -proto\` over the window's batch files, once,
cold. Totals equal: 15m $(v tot15m); 1h $(v tot1h).

| window, file | proffs cat cold | in-process | pprof -proto / proffs cat |
|---|---|---|---|
$(row 15m profile.pb)
$(row 15m folded.txt)
$(row 1h profile.pb)
$(row 1h folded.txt)

pprof -proto: 15m $(v pprof15m_first_ms) ms, 1h $(v pprof1h_first_ms) ms. Goal (issue 13): the last 15
minutes <= 200 ms cold on an idle machine: $(goal "$(v cat15m_profile_median_ms)" "<=" 200) for
profile.pb, $(goal "$(v cat15m_folded_median_ms)" "<=" 200) for folded.txt. Paths:
\`$(v dir15m)/\`, \`$(v dir1h)/\`.
EOF
