#!/usr/bin/env bash
# timeout: 480 (three times its longest run on a clean clone, stop 48)
# sampler_bounds: `proffs run --retention` and `--max-size` do what they
# say (SPEC §3), on the daemon's own path (every commit synced), each on a
# store that already holds older data (written by the test tool
# synth_batches, as if the daemon had run before):
#  - --retention 10m over a store holding the last two hours: at start the
#    daemon drops every minute older than ten minutes (the expiry runs at
#    once, then every minute); the newest old minutes and the daemon's own
#    stay, and a reopened store agrees;
#  - --max-size 24M over a store grown to ~22 MB of old data, sampling a
#    busy CPU at 499 Hz: the file never passes 24 MiB, the oldest data
#    goes first, the daemon's own minutes are all kept and complete, no
#    batch is refused, and proffs check passes.
# long: yes (two daemons of about a minute each)
source "$(dirname "$0")/sampler_lib.bash"

SYNTH=$TESTS_BIN/synth_batches
[[ -x $SYNTH ]] || die "$SYNTH not built"
minute() { date -u -d "@$1" +%Y-%m-%dT%H:%M; }
# oldest_minute MP: the first minute directory under cpu/ (sorted).
oldest_minute() { ls "$1/cpu" | grep -E '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}$' | head -1; }

# --- retention ---
S=$WORK/ret
MP=$WORK/mp-ret
mkdir -p "$MP"
now=$(date +%s)
start=$(((now - 7200) / 60 * 60))
# Two hours of old batches, one per minute (the tool's own switch skips
# the fsync: the daemon below syncs every commit).
PROFFS_STORE_NOSYNC=1 "$SYNTH" --store "$S" --batches 118 --interval 60 --start "$start" --samples 200 >/dev/null ||
	die "synth_batches (retention store)"
before=$("$PROFFS" cat --store "$S" /cpu | grep -c 'T..:..$')
run_start "$S" "$MP" --retention 10m
sleep 3
oldest=$(oldest_minute "$MP")
ot=$(date -u -d "${oldest}:00Z" +%s)
n=$(ls "$MP/cpu" | grep -c 'T..:..$')
log "retention 10m: $before minutes before, $n listed after the start; oldest $oldest ($(((now - ot) / 60)) min ago)"
if ((now - ot <= 600 + 60 && n >= 5 && n < before)); then
	ok "--retention 10m: minutes older than 10 min dropped at start ($before -> $n), the oldest kept is $(((now - ot) / 60)) min old"
else
	fail "--retention 10m: oldest minute $oldest is $(((now - ot) / 60)) min old, $n of $before minutes listed"
fi
sleep 12 # a batch of the daemon's own
run_stop "$RUN_PID" "$MP"
# Retention keeps running, once a minute: an expiry at time e keeps a
# minute that still holds data younger than e - 10m, so at the stop the
# oldest minute starts at most 10 min + the minute itself + the expiry
# period (under 60 s: the daemon lived ~15 s) before it, and never before
# the oldest read at the start.
o2=$("$PROFFS" cat --store "$S" /cpu | grep -E 'T..:..$' | head -1)
o2t=$(date -u -d "${o2}:00Z" +%s 2>/dev/null || echo 0)
stop_t=$(date +%s)
((o2t >= ot && stop_t - o2t < 600 + 60 + 60)) &&
	ok "--retention: the reopened store agrees (oldest $o2, read $oldest at the start; $(((stop_t - o2t) / 60)) min old at the stop)" ||
	fail "--retention: reopened store's oldest is $o2 ($(((stop_t - o2t) / 60)) min old at the stop), read $oldest at the start"
last=$("$PROFFS" cat --store "$S" /cpu | grep -E 'T..:..$' | tail -1)
lt=$(date -u -d "${last}:00Z" +%s)
((lt >= now - 60)) && ok "--retention: the daemon's own minutes are kept ($last)" || fail "--retention: newest minute $last"

# --- max-size ---
S=$WORK/max
MP=$WORK/mp-max
mkdir -p "$MP"
now=$(date +%s)
# Old, incompressible batches (~0.2 MB each) up to ~22 MB: over the
# daemon's threshold for dropping (75% of its bound) from its first batch.
PROFFS_STORE_NOSYNC=1 "$SYNTH" --store "$S" --batches 105 --interval 10 --start $((now - 86400)) --procs 200 --stacks 2000 \
	--depth 5-20 --samples 30000 --random-values --max-size 32M >/dev/null || die "synth_batches (max-size store)"
sz0=$(stat -c %s "$S/data.mdb")
first0=$("$PROFFS" cat --store "$S" /cpu | grep -E 'T..:..$' | head -1)
log "max-size: a store of $sz0 bytes, oldest minute $first0"
run_start "$S" "$MP" --max-size 24M --hz 499
T0=$(date +%s)
# A busy CPU (a deep recursion) at 499 Hz through the next whole minute:
# the bound is already passed, each batch makes the daemon drop old data.
M1=$(((T0 + 59) / 60 * 60))
busy=$((M1 + 60 - T0))
"$TESTS_BIN/deep" 120 $busy & PIDS+=($!)
maxsz=$sz0
# until the whole minute M1 is stored (its last batch, 10 s, and a margin)
while (($(date +%s) < M1 + 60 + 14)); do
	sz=$(stat -c %s "$S/data.mdb")
	((sz > maxsz)) && maxsz=$sz
	sleep 1
done
kill -0 "$RUN_PID" 2>/dev/null || die "the daemon died"
M=$WORK/metrics
cp "$MP/metrics" "$M"
errs=$(metric proffs_batch_errors_total "$M") batches=$(metric proffs_batches_total "$M")
first1=$(oldest_minute "$MP")
mine=$(ls "$MP/cpu" | grep -E 'T..:..$' | awk -v t="$(minute $((T0 + 60)))" '$0 >= t' | wc -l)
log "max-size: largest file $maxsz bytes; $batches batches, $errs refused; oldest minute now $first1"
((maxsz <= 24 * 1024 * 1024)) && ok "--max-size 24M: data.mdb stayed within 24 MiB (at most $maxsz bytes)" ||
	fail "--max-size 24M: data.mdb reached $maxsz bytes"
[[ $first1 > $first0 ]] && ok "--max-size: the oldest data went first ($first0 -> $first1)" ||
	fail "--max-size: the oldest minute is still $first1 (was $first0): nothing dropped"
((${errs:-1} == 0 && batches >= 6)) && ok "--max-size: $batches batches stored, none refused" ||
	fail "--max-size: $errs of $batches batches refused"
# The whole minute the daemon sampled is there and complete.
latest=$(readlink "$MP/cpu/latest")
[[ $latest == "$(minute $M1)" ]] && ok "--max-size: latest -> $latest, the whole minute sampled" ||
	fail "--max-size: latest -> '$latest', want $(minute $M1)"
n=$(awk '{ s += $NF } END { print s + 0 }' "$MP/cpu/$(minute $M1)/folded.txt" 2>/dev/null)
((${n:-0} > 20000)) && ok "--max-size: minute $(minute $M1) kept whole: $n samples (a busy CPU at 499 Hz: ~30,000)" ||
	fail "--max-size: minute $(minute $M1) has ${n:-no} samples"
run_stop "$RUN_PID" "$MP"
"$PROFFS" check --store "$S" >"$WORK/check.out" 2>&1 && ok "proffs check: store sound" || { cat "$WORK/check.out"; fail "proffs check"; }
finish
