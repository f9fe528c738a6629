#!/usr/bin/env bash
# timeout: 360 (three times its longest run on a clean clone, stop 48)
# push: `proffs run --push URL` against a receiver of ours that speaks
# Pyroscope's push API (tests/integration/push_receiver.py: protoc
# --decode with sampler/push/push.proto, __name__ and service_name on
# every series, the raw profiles gunzipped and read by go tool pprof).
#  - the store holds imported minutes 40 min back (due at once) and one
#    70 min back (too old for the server: never sent); the daemon adds its
#    own sampled minutes
#  - the receiver answers 503 (20 s), then 429 with Retry-After: 5 (15 s;
#    no retry comes sooner than 5 s after a 429), then dies (15 s) while
#    the daemon is restarted, then accepts
#  - in the end every minute with data younger than an hour, up to the
#    pusher's cursor, arrived, each series of it once (no ID twice, no
#    (minute, series) twice); the too-old minute did not
#  - pushed totals (go tool pprof -raw over the minute's profiles) equal
#    the mount's totals of those minutes, exactly, for the imported
#    minutes and the daemon's own
#  - __name__ is process_cpu; service_name is the unit, else the
#    container, else the comm
#  - /prof/metrics counts minutes, bytes, retries and the lag
# long: yes (minutes of wall clock, mostly waiting: started first)
source "$(dirname "$0")/sampler_lib.bash"
command -v go >/dev/null || skip "go is needed for go tool pprof"
command -v protoc >/dev/null || skip "protoc is needed"
command -v python3 >/dev/null || skip "python3 is needed for the receiver"
export GOCACHE=$WORK/gocache GOPATH=$WORK/gopath GOTOOLCHAIN=local
RECV=$ROOT/tests/integration/push_receiver.py
OUT=$WORK/recv
MODE=$WORK/mode
mkdir -p "$OUT"

recv_start() { # [PORT]
	rm -f "$WORK/port"
	python3 "$RECV" "$WORK/port" "$MODE" "$OUT" "$ROOT/sampler/push" "$@" 2>>"$WORK/recv.err" &
	RPID=$!
	PIDS+=("$RPID")
	for i in $(seq 100); do [[ -s $WORK/port ]] && break; sleep 0.05; done
	[[ -s $WORK/port ]] || { cat "$WORK/recv.err"; die "receiver did not start"; }
	PORT=$(cat "$WORK/port")
}
# stop_daemon: run_stop, with the daemon's threads shown if it hangs.
stop_daemon() {
	local pid=$RUN_PID
	( sleep 8; kill -0 "$pid" 2>/dev/null && command -v gdb >/dev/null &&
		gdb -p "$pid" -batch -ex "thread apply all bt" 2>/dev/null | grep -E "^#|^Thread" >"$WORK/hang.txt" ) &
	run_stop "$pid" "$MP"
	local rc=$?
	# A hung daemon must not push beside its successor.
	((rc)) && { kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; fusermount3 -u -z "$MP" 2>/dev/null; }
	[[ -s $WORK/hang.txt ]] && { echo "--- daemon threads while it hung"; head -80 "$WORK/hang.txt"; }
	return $rc
}

NOW=$(date +%s)
M0=$(( (NOW / 60 - 40) * 60 ))
OLD=$(( (NOW / 60 - 70) * 60 ))
STORE=$WORK/store
for i in 0 1 2; do
	"$TESTS_BIN/mkprof" --time $((M0 + 60 * i + 5)) --seed $((30 + i)) --series api:100 --series db:200 "$WORK/imp$i.pb" || die mkprof
done
"$TESTS_BIN/mkprof" --time $((OLD + 5)) --seed 9 --series old:1 "$WORK/old.pb" || die mkprof
"$PROFFS" import --store "$STORE" --type cpu "$WORK"/imp*.pb "$WORK/old.pb" >/dev/null || die import

echo 503 >"$MODE"
recv_start
MP=$WORK/mp
mkdir -p "$MP"
export PROFFS_PUSH_SETTLE_S=6 PROFFS_PUSH_BACKOFF_MAX_S=4
run_start "$STORE" "$MP" --batch-interval 2s --push "http://127.0.0.1:$PORT"
sleep 20
grep -q ' 503$' "$OUT/attempts" && ok "503 phase: the daemon tried and was told to retry" || fail "no attempt during the 503 phase"
[[ -s $OUT/index ]] && fail "something was accepted during 503" || true
echo 429 >"$MODE"
sleep 15
kill -TERM "$RPID"; wait "$RPID" 2>/dev/null
# No retry sooner than Retry-After: 5 s after any 429.
awk 'prev429 && $1 - t < 4.9 { bad++ } { prev429 = ($2 == 429); t = $1 } END { exit bad > 0 }' "$OUT/attempts" &&
	ok "429 phase: every retry came >= 5 s after a 429 ($(grep -c ' 429$' "$OUT/attempts") x 429)" || fail "a retry came sooner than Retry-After"
sleep 5
# Restart the daemon while the receiver is down.
t0=$(date +%s.%N)
stop_daemon && ok "daemon stops on SIGTERM while pushes fail ($(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s)"
run_start "$STORE" "$MP" --batch-interval 2s --push "http://127.0.0.1:$PORT"
sleep 10
echo ok >"$MODE"
recv_start "$PORT"
BACK=$(date +%s)
# Wait for the pusher to pass the minute that was open when the server came back.
WANT=$(( (BACK / 60 + 1) * 60 ))
for i in $(seq 120); do
	nm=$(metric proffs_push_next_minute)
	[[ -n $nm ]] && ((nm >= WANT)) && break
	sleep 1
done
((nm >= WANT)) && ok "the pusher caught up (next minute $nm)" || fail "the pusher is at $nm, want >= $WANT"
cp "$MP/metrics" "$WORK/metrics"
CUR=$nm
stop_daemon || true
[[ -s $OUT/bad ]] && { fail "the receiver refused requests:"; head -3 "$OUT/bad"; }

# Minutes of the store younger than an hour (at the first start) and
# below the cursor, against minutes received.
FIRST=$(( (NOW - 3600 + 30 + 59) / 60 * 60 ))
"$PROFFS" cat --store "$STORE" /cpu/ | grep -E '^[0-9]{4}-' | while read -r m; do
	t=$(date -u -d "${m}:00Z" +%s); ((t >= FIRST && t < CUR)) && echo "$t"
done | sort -n >"$WORK/want"
cut -d' ' -f1 "$OUT/index" | sort -nu >"$WORK/got"
if cmp -s "$WORK/want" "$WORK/got"; then
	ok "every minute with data younger than an hour arrived ($(wc -l <"$WORK/want") minutes)"
else
	fail "minutes differ (store vs received):"; diff "$WORK/want" "$WORK/got" | head
fi
grep -q "^$OLD " "$OUT/index" && fail "the 70-minute-old minute was sent" || ok "the too-old minute was not sent"
dupid=$(awk '{ print $3 }' "$OUT/index" | sort | uniq -d | head -3)
dupser=$(awk '{ print $1, $6 }' "$OUT/index" | sort | uniq -d | head -3)
[[ -z $dupid && -z $dupser ]] && ok "nothing arrived twice ($(wc -l <"$OUT/index") profiles)" || fail "duplicates: ids [$dupid] series [$dupser]"
awk '$4 != "process_cpu" { bad++ } END { exit bad > 0 }' "$OUT/index" && ok "__name__ is process_cpu" || fail "__name__"
awk '{ u = c = k = ""; n = split($6, kv, ",")
	for (i = 1; i <= n; i++) {
		if (kv[i] ~ /^unit=/) u = substr(kv[i], 6)
		if (kv[i] ~ /^container=/) c = substr(kv[i], 11)
		if (kv[i] ~ /^comm=/) k = substr(kv[i], 6)
	}
	want = u != "" ? u : c != "" ? c : k
	if ($5 != want) { bad++; if (bad < 4) print "service_name " $5 " for " $6 } else if (u != "") units++
} END { exit bad > 0 }' "$OUT/index" && ok "service_name is the unit, else container, else comm ($(grep -c 'unit=' "$OUT/index") profiles with a unit)" || fail "service_name"

# Totals per minute: pushed (pprof over the received profiles) = mount.
rawsum() {
	go tool pprof -raw "$@" 2>>"$WORK/pprof.err" |
		awk '/^Samples:/ { p = 1; next } /^Locations/ { p = 0 } p && /^ *-?[0-9]+ +-?[0-9]+:/ { s += $1 } END { printf "%d\n", s }'
}
checked=0
for t in $M0 $((M0 + 60)) $((M0 + 120)) $(tail -n 3 "$WORK/want"); do
	files=$(awk -v m="$t" -v d="$OUT/prof" '$1 == m { printf "%s/%s.pb ", d, $2 }' "$OUT/index")
	[[ -n $files ]] || { fail "minute $t: nothing received"; continue; }
	got=$(rawsum $files)
	mn=$(date -u -d "@$t" +%Y-%m-%dT%H:%M)
	"$PROFFS" cat --store "$STORE" "/cpu/$mn/profile.pb" >"$WORK/m.pb"
	want=$(rawsum "$WORK/m.pb")
	if ((got > 0 && got == want)); then checked=$((checked + 1)); else fail "minute $mn: pushed $got samples, mount $want"; fi
done
((checked >= 4)) && ok "pushed totals = mount totals for $checked minutes (imported and sampled)" || fail "only $checked minutes matched"

for m in proffs_push_minutes_total proffs_push_bytes_total proffs_push_retries_total proffs_push_lag_seconds proffs_push_dropped_too_old_minutes_total; do
	v=$(metric "$m" "$WORK/metrics")
	[[ -n $v ]] && log "metrics: $m $v" || fail "metrics lack $m"
done
v=$(metric proffs_push_bytes_total "$WORK/metrics")
((v > 0)) && ok "metrics count pushed bytes" || fail "pushed bytes $v"
finish
