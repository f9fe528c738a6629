#!/usr/bin/env bash
# timeout: 120 (three times its longest run on a clean clone, stop 48)
# store_maxsize: a store opened with --max-size 64M is fed about three times
# its size of incompressible synthetic batches (a bounded set of stacks, so
# symbols stop growing). No append may fail; the file stays within 64 MiB;
# the newest batch is present, the oldest are gone; proffs check passes.
set -u
: "${PROFFS:?}" "${TESTS_BIN:?}"
synth=$TESTS_BIN/synth_batches
[[ -x $synth ]] || { echo "missing $synth"; exit 1; }
dir=$(mktemp -d /tmp/store_maxsize.XXXXXX)
trap 'rm -rf "$dir"' EXIT
store=$dir/store
start=1700000000
batches=${MAXSIZE_BATCHES:-700}
interval=10
# Durability is not under test here; fsync per batch would only slow it.
if ! PROFFS_STORE_NOSYNC=1 "$synth" --store "$store" --max-size 64M --batches "$batches" \
	--interval "$interval" --procs 200 --stacks 2000 --depth 5-20 --samples 30000 \
	--random-values --start "$start" > "$dir/out" 2> "$dir/err"; then
	echo "appending failed:"; tail -20 "$dir/err"; exit 1
fi
cat "$dir/out"
grep -i error "$dir/err" && { echo "errors logged while appending"; exit 1; }
"$synth" --store "$store" --stat > "$dir/stat" || { echo "stat failed"; exit 1; }
cat "$dir/stat"
get() { sed -n "s/^$1=//p" "$dir/stat"; }
size=$(stat -c %s "$store/data.mdb")
last=$((start + (batches - 1) * interval))
last_min=$((last / 60 * 60))
FAILS=0
((size <= 64 * 1024 * 1024)) || { echo "FAIL data.mdb is $size bytes, over 64 MiB"; FAILS=$((FAILS + 1)); }
[[ $(get last_minute) == "$last_min" ]] || { echo "FAIL newest minute $(get last_minute), want $last_min"; FAILS=$((FAILS + 1)); }
(($(get first_minute) > start)) || { echo "FAIL oldest minute $(get first_minute) still there"; FAILS=$((FAILS + 1)); }
kept=$(get nblocks) dropped=$(get dropped)
((dropped >= 2 * kept)) || { echo "FAIL only $dropped blocks dropped for $kept kept: not filled far past the bound"; FAILS=$((FAILS + 1)); }
((kept >= 20)) || { echo "FAIL only $kept blocks kept: the bound deleted far too much"; FAILS=$((FAILS + 1)); }
# The newest batch is whole: its sample values sum to what was written.
echo "committed $last 0" > "$dir/last.log"
n=$("$synth" --store "$store" --verify "$dir/last.log" | sed -n 's/.*found \(-\?[0-9]*\)$/\1/p')
((n > 0)) || { echo "FAIL newest batch has no samples ($n)"; FAILS=$((FAILS + 1)); }
"$PROFFS" check --store "$store" || { echo "FAIL proffs check"; FAILS=$((FAILS + 1)); }
echo "data.mdb $size bytes, $kept blocks kept, $dropped dropped"
exit $((FAILS > 0))
