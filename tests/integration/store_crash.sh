#!/usr/bin/env bash
# timeout: 120 (three times its longest run on a clean clone, stop 48)
# store_crash: an appender (tests/tools/synth_batches) writes batches
# continuously and is kill -9'ed at a random moment, 12 times over. After
# each kill the store must reopen, `proffs check` must pass, and every batch
# the appender logged as committed (it logs only after store__append
# returned) must be there with its exact sample count.
# san: yes
set -u
: "${PROFFS:?}" "${TESTS_BIN:?}"
synth=$TESTS_BIN/synth_batches
[[ -x $synth ]] || { echo "missing $synth"; exit 1; }
dir=$(mktemp -d /tmp/store_crash.XXXXXX)
pid=
cleanup() {
	if [[ -n $pid ]]; then kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; fi
	rm -rf "$dir"
}
trap cleanup EXIT
store=$dir/store
log=$dir/committed.log

# The command line of `proffs check` first.
"$PROFFS" check --help | grep -q 'usage: proffs check' || { echo "check --help"; exit 1; }
"$PROFFS" check --bogus > "$dir/out" 2>&1; rc=$?
((rc == 2)) && [[ $(wc -l < "$dir/out") == 1 ]] || { echo "bad flag: rc $rc, want 2 and one line:"; cat "$dir/out"; exit 1; }
"$PROFFS" check --store "$dir/none" > "$dir/out" 2>&1 && { echo "check of a missing store passed"; exit 1; }

: > "$log"
prev=0
for i in $(seq 1 12); do
	start=$((1700000000 + i * 1000000))
	"$synth" --store "$store" --batches 0 --interval 10 --procs 30 --stacks 300 \
		--depth 5-25 --samples 500 --start "$start" --seed "$i" --log "$log" \
		>/dev/null 2>"$dir/err.$i" &
	pid=$!
	# A random moment between 0.3 and 1.6 s after the start.
	sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.2f", 0.3 + (r % 131) / 100 }')"
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "round $i: the appender died by itself:"; cat "$dir/err.$i"; exit 1
	fi
	kill -9 "$pid"
	wait "$pid" 2>/dev/null
	pid=
	n=$(wc -l < "$log")
	if ! "$PROFFS" check --store "$store" > "$dir/check.$i" 2>&1; then
		echo "round $i: proffs check failed after kill -9:"; head -20 "$dir/check.$i"; exit 1
	fi
	# This round's batches all, plus a random 50 of the earlier ones
	# (verified when they were new; a later crash must not lose them).
	{ tail -n +"$((prev + 1))" "$log"; head -n "$prev" "$log" | shuf -n 50; } > "$dir/check.log"
	if ! "$synth" --store "$store" --verify "$dir/check.log" > "$dir/verify.$i" 2>&1; then
		echo "round $i: committed batches missing:"; tail -20 "$dir/verify.$i"; exit 1
	fi
	echo "round $i: killed; $((n - prev)) batches committed this round, $n in all;" \
		"check ok; $(tail -n 1 "$dir/verify.$i")"
	if ((n <= prev)); then
		echo "round $i: the appender committed nothing (too slow?)"; exit 1
	fi
	prev=$n
done
if ! "$synth" --store "$store" --verify "$log" > "$dir/verify.all" 2>&1; then
	echo "final: committed batches missing:"; tail -20 "$dir/verify.all"; exit 1
fi
echo "store_crash: 12 kill -9 rounds; $(tail -n 1 "$dir/verify.all")"
