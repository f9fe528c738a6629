#!/usr/bin/env bash
# timeout: 120 (three times its longest run on a clean clone, stop 48)
# sampler_crash: kill -9 of `proffs run` loses at most the open batch;
# the store stays sound, and the next `proffs run` on the same store and
# mountpoint (a stale FUSE mount left behind) starts, serves the old
# data and stops cleanly.
# san: yes
source "$(dirname "$0")/sampler_lib.bash"
# Its children are found by name on a whole-host daemon: the sanitizer
# run's have names of their own, so the two runs and the tests beside
# them (4 s of CPU at 99 Hz: a share of a CPU keeps the count's bounds
# many sigmas wide) can run at once.
KID=crashkid${SAN:+_san} KID2=secondrun${SAN:+_san}

HZ=99
PERIOD=$((1000000000 / HZ))
FOLDED_SCALE=$PERIOD # folded.txt counts samples
STORE=$WORK/store
MP=$WORK/mp
mkdir -p "$MP"

run_start "$STORE" "$MP" --hz $HZ --batch-interval 2s
# A child burning 4 s of CPU, then 1 s of quiet, then kill -9: at most
# the last 2 s interval is lost, and it holds at most 1 s of the child.
"$TESTS_BIN/forker" 1 4000 "$KID" >"$WORK/kid.out" || fail "forker"
sleep 1
kill -KILL "$RUN_PID"
wait "$RUN_PID" 2>/dev/null
cns=$(awk '{ print $2 }' "$WORK/kid.out")

if ls "$MP" >/dev/null 2>&1; then log "mountpoint readable after kill -9 (no stale mount?)"; else log "stale mount left by kill -9, as expected"; fi
"$PROFFS" check --store "$STORE" >"$WORK/check.out" 2>&1 && ok "proffs check after kill -9: store sound" ||
	{ cat "$WORK/check.out"; fail "proffs check after kill -9"; }
"$PROFFS" cat --store "$STORE" "/merged/cpu/comm=$KID/last-15m/folded.txt" >"$WORK/kid.folded" ||
	fail "proffs cat after kill -9"
got=$(fsum "$WORK/kid.folded")
# 4 s of CPU; losing at most 1 s of it leaves >= 75%, minus sampling noise.
within "$(pct "$got" "$cns")" 65 130 && ok "kill -9 kept $(pct "$got" "$cns")% of the child's CPU time ($((got / PERIOD)) samples)" ||
	fail "kill -9 lost more than one batch: $(pct "$got" "$cns")% of the child's CPU time kept"

# The next run on the same store and mountpoint.
run_start "$STORE" "$MP" --hz $HZ --batch-interval 2s
ok "restarted over the stale mount"
F=$MP/merged/cpu/comm=$KID/last-15m/folded.txt
[[ $(fsum "$F") == "$got" ]] && ok "the new run serves the old data" || fail "the new run serves $(fsum "$F") for $KID, want $got"
"$TESTS_BIN/forker" 1 1000 "$KID2" >"$WORK/kid2.out" || fail "forker 2"
sleep 2.5
F=$MP/merged/cpu/comm=$KID2/last-15m/folded.txt
(($(fsum "$F") > 0)) && ok "the new run samples and stores" || fail "no samples from the second run"
grep -Eq '^proffs_samples_total [1-9]' "$MP/metrics" && ok "metrics: samples counted" || fail "metrics: no proffs_samples_total"
for m in proffs_lost_samples_total proffs_processes_tracked proffs_symbol_cache_symbols proffs_cpu_seconds_total proffs_resident_memory_bytes; do
	grep -q "^$m" "$MP/metrics" || fail "metrics: $m missing"
done
run_stop "$RUN_PID" "$MP" && ok "SIGTERM: exit 0 in $RUN_STOP_S s, no mount left"
finish
