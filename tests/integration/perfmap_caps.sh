#!/usr/bin/env bash
# perfmap_caps: the perf-map bounds README states. JITs (tests/helpers/
# jitmap, its map written by the test, owned by root) under the default
# daemon:
#  - a map over 8 MB is refused, counted too_big, and names nothing;
#  - maps are held to 16 MB in all (what they take in memory, ~1.6 times
#    their file): of three 4 MB maps, the two that fit name their JIT
#    frames, the third is refused (too_big); proffs_perfmap_bytes stays
#    within 16 MB.
# About 30 s.
# timeout: 180
source "$(dirname "$0")/sampler_lib.bash"

MP=$WORK/mp
mkdir -p "$MP"
# jitmap under a name of its own: sampler_run selects comm=jitmap on the
# whole host beside this test.
cp "$TESTS_BIN/jitmap" "$WORK/jitcaps"
run_start "$WORK/s" "$MP" --batch-interval 2s
too0=$(metric 'proffs_files_refused_total{reason="too_big"}')

# jit NAME MB: a JIT whose map names its code jitted_NAME, padded with
# other entries to MB megabytes; its pid in JP[NAME].
declare -A JP
jit() {
	local name=$1 mb=$2 pid addr size map
	JITMAP_PRINT=1 "$WORK/jitcaps" 8 >"$WORK/jit-$name.out" & pid=$!; PIDS+=("$pid")
	for i in $(seq 100); do [[ -s $WORK/jit-$name.out ]] && break; sleep 0.02; done
	read -r addr size <"$WORK/jit-$name.out"
	map=/tmp/perf-$pid.map; PERFMAPS+=("$pid")
	{
		printf '%s %s jitted_%s\n' "$addr" "$size" "$name"
		# far above the code: entries that name nothing sampled
		awk -v t=$((mb * 1048576)) 'BEGIN { for (i = 0; s < t; i++) { l = sprintf("%x 10 filler_entry_%09d_xxxxxx\n", 0x7f0000000000 + i * 16, i); printf "%s", l; s += length(l) } }'
	} >"$map.new"
	mv "$map.new" "$map"
	JP[$name]=$pid
}
jit big 9
sleep 1.5
jit b 4
sleep 1.5
jit c 4
sleep 1.5
jit d 4
for n in big b c d; do wait "${JP[$n]}" || fail "jitmap $n failed"; done
stored
too1=$(metric 'proffs_files_refused_total{reason="too_big"}')
pb=$(metric proffs_perfmap_bytes)
named() { local c; c=$(grep -c "jitted_$1" "$MP/merged/cpu/pid=${JP[$1]}/last-15m/folded.txt" 2>/dev/null); echo "${c:-0}"; }
n=$(fsum "$MP/merged/cpu/pid=${JP[big]}/last-15m/folded.txt")
((n >= 10 && $(named big) == 0)) && ok "a 9 MB map names nothing ($n samples)" || fail "the 9 MB map: $n samples, named in $(named big) stacks"
(($(named b) > 0 && $(named c) > 0)) && ok "the first two 4 MB maps name their JIT frames" ||
	fail "4 MB maps: b named in $(named b) stacks, c in $(named c)"
(($(named d) == 0)) && ok "the third 4 MB map, past 16 MB in all, names nothing" || fail "the third 4 MB map named $(named d) stacks"
((too1 >= too0 + 2)) && ok "refusals counted too_big: $too0 -> $too1" || fail "too_big $too0 -> $too1 (want +2: the 9 MB map and the third 4 MB one)"
((pb <= 16 * 1048576)) && ok "perf maps held: $pb bytes (<= 16 MB)" || fail "perf maps held $pb bytes, over 16 MB"
run_stop "$RUN_PID" "$MP"
finish
