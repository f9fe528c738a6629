#!/usr/bin/env bash
# push_too_old: a minute whose pushes fail until it is older than the
# server takes is dropped and counted (README), not sent late and not
# retried forever. The server's age limit is set to 10 minutes
# (PROFFS_PUSH_MAX_AGE_S=600, the 3600 of Pyroscope shortened); a store
# holds an imported minute the pusher starts at, too old within 65 s, and
# the receiver (tests/integration/push_receiver.py) answers 503 for 80 s,
# then accepts:
#  - proffs_push_dropped_too_old_minutes_total counts the old minute(s);
#  - nothing of them arrives; a minute imported 4 min back does.
# About 2 min.
# long: yes (mostly waiting)
# timeout: 300
source "$(dirname "$0")/sampler_lib.bash"
RECV=$ROOT/tests/integration/push_receiver.py
OUT=$WORK/recv
MODE=$WORK/mode
mkdir -p "$OUT"
recv_start() {
	rm -f "$WORK/port"
	python3 "$RECV" "$WORK/port" "$MODE" "$OUT" "$ROOT/sampler/push" 2>>"$WORK/recv.err" &
	RPID=$!; PIDS+=("$RPID")
	for i in $(seq 100); do [[ -s $WORK/port ]] && break; sleep 0.05; done
	[[ -s $WORK/port ]] || { cat "$WORK/recv.err"; die "receiver did not start"; }
	PORT=$(cat "$WORK/port")
}

NOW=$(date +%s)
# The pusher starts at the oldest minute the server still takes,
# ceil((start - 600 + 30) / 60) minutes; the daemon starts within 5 s, so
# this minute is at or after it, and too old within 65 s.
OLD=$(( (NOW + 5 - 570 + 59) / 60 * 60 ))
NEW=$(( (NOW / 60 - 4) * 60 ))
STORE=$WORK/store
"$TESTS_BIN/mkprof" --time $((OLD + 5)) --seed 3 --series old:2 "$WORK/old.pb" || die mkprof
"$TESTS_BIN/mkprof" --time $((NEW + 5)) --seed 4 --series new:2 "$WORK/new.pb" || die mkprof
"$PROFFS" import --store "$STORE" --type cpu "$WORK/old.pb" "$WORK/new.pb" >/dev/null || die import
echo 503 >"$MODE"
recv_start
MP=$WORK/mp
mkdir -p "$MP"
PROFFS_PUSH_MAX_AGE_S=600 PROFFS_PUSH_SETTLE_S=6 PROFFS_PUSH_BACKOFF_MAX_S=4 \
	run_start "$STORE" "$MP" --batch-interval 2s --push "http://127.0.0.1:$PORT"
sleep 80
grep -q ' 503$' "$OUT/attempts" && ok "the old minute was tried and refused with 503 ($(grep -c ' 503$' "$OUT/attempts") tries)" ||
	fail "no push attempt during the 503 phase"
echo ok >"$MODE"
for i in $(seq 60); do grep -q "^$NEW " "$OUT/index" 2>/dev/null && break; sleep 1; done
d=$(metric proffs_push_dropped_too_old_minutes_total)
((d >= 1)) && ok "proffs_push_dropped_too_old_minutes_total counts it ($d)" || fail "dropped too old: '$d', want >= 1"
grep -q "^$OLD " "$OUT/index" 2>/dev/null && fail "the too-old minute arrived" || ok "the too-old minute never arrived"
grep -q "^$NEW " "$OUT/index" 2>/dev/null && ok "the minute 4 min back arrived once the server took it" ||
	fail "the minute 4 min back never arrived"
run_stop "$RUN_PID" "$MP"
finish
