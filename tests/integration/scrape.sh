#!/usr/bin/env bash
# timeout: 420 (three times its longest run on a clean clone, stop 48)
# scrape: `proffs run --scrape` against a real Go service (tests/go/
# scrapetarget: net/http/pprof, allocLong 10 MiB/s, allocShort 1 MiB/s,
# holdHeap 8 MiB live, 25 goroutines in holdGoroutine) and four bad ones,
# every 2 s, checked through the mounted tree:
#  - one complete minute of alloc: allocLong is 90.9% +- 3 pp of the
#    workload's alloc_space (the stacks under main.allocate; the rest of
#    the total is the pprof handler answering our scrapes, reported), and
#    the workload's bytes per second are 11 MiB/s +- 10%
#  - heap of that minute: holdHeap's inuse_space 8 MiB +- 10% (a mean of
#    the minute's 30 snapshots, not their sum); goroutine: 25 in
#    holdGoroutine
#  - go tool pprof -top reads profile.pb of every type; flamegraph.pl
#    renders folded.txt
#  - the target killed and restarted: a restart is counted, no value is
#    negative, the rate after it shows no spike (and no hole)
#  - a listener that never answers, one that answers 500, one that answers
#    10 MB of garbage and a target that goes away: each counted under its
#    reason, up=0; the good target still scraped every interval, CPU
#    batches still stored every interval with the Go service's comm in them
#  - SIGTERM ends the daemon within 2 s although a transfer hangs
# long: yes (a complete minute of scrapes: started first). Its timings
# (scrapes per interval, CPU batches per wall-clock second, the stop
# latency) are the daemon's, which runs at nice -10 beside the other tests.
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
source "$(dirname "$0")/sampler_lib.bash"
source "$(dirname "$0")/flamegraph.bash"

command -v go >/dev/null || skip "golang-go is not installed"
IVL=2
MIB=1048576
STORE=$WORK/store
MP=$WORK/mp
mkdir -p "$MP"
export GOCACHE=$WORK/gocache GOPATH=$WORK/gopath GOTOOLCHAIN=local GOTELEMETRY=off
(cd "$ROOT/tests/go" && GOFLAGS=-mod=mod GOPROXY=off go build -o "$WORK/scrapetarget" ./scrapetarget) ||
	die "go build of tests/go/scrapetarget"

# start NAME ARGS...: runs scrapetarget, waits for "ready", sets ADDR_NAME
# (host:port it listens on) and PID_NAME.
start() {
	local name=$1 out=$WORK/$1.out i addr
	shift
	"$WORK/scrapetarget" "$@" >"$out" 2>&1 &
	PIDS+=($!)
	printf -v "PID_$name" %s $!
	# (up to 20 s: beside three other tests and the fuzzers, one restart
	# of app had printed nothing after 5 s)
	for i in $(seq 400); do grep -q ready "$out" && break; sleep 0.05; done
	addr=$(awk '/^ready/ { print $2 }' "$out")
	((i > 100)) && log "scrapetarget $name took $((i / 20)) s to be ready"
	[[ -n $addr ]] || die "scrapetarget $name did not start in 20 s: $(cat "$out"; ps -o pid,stat,wchan:20,etime,time -p "${PIDS[-1]}")"
	printf -v "ADDR_$name" %s "$addr"
}
start app -addr 127.0.0.1:0
start gone -addr 127.0.0.1:0 -long 1048576 -short 1048576
start hang -addr 127.0.0.1:0 -fault hang
start e500 -addr 127.0.0.1:0 -fault 500
start junk -addr 127.0.0.1:0 -fault garbage

url() { echo "http://$1/debug/pprof"; }
T0=$(date +%s)
run_start "$STORE" "$MP" --hz 49 --batch-interval 2s --scrape-interval ${IVL}s \
	--scrape "job=app@$(url "$ADDR_app")" --scrape "job=gone@$(url "$ADDR_gone")" \
	--scrape "job=hang@$(url "$ADDR_hang")" --scrape "job=e500@$(url "$ADDR_e500")" \
	--scrape "job=junk@$(url "$ADDR_junk")"

# metric NAME JOB TYPE [REASON]: the value in /prof/metrics (empty if none).
metric() {
	local sel="{job=\"$2\",instance=\"[^\"]*\",type=\"$3\"${4:+,reason=\"$4\"}}"
	grep -E "^$1$sel " "$MP/metrics" | awk '{ print $2 }'
}
minute() { date -u -d "@$1" +%Y-%m-%dT%H:%M; }
sleep_until() { local d=$(($1 - $(date +%s))); ((d > 0)) && sleep "$d"; }

# The first whole minute that starts after the first delta (T0 + 2
# intervals); it is complete a batch after its end.
M=$(((T0 + 2 * IVL + 1 + 59) / 60 * 60))
sleep_until $((T0 + 20))
kill -KILL "$PID_gone"; wait "$PID_gone" 2>/dev/null
log "job gone killed at +$(($(date +%s) - T0)) s; waiting for minute $(minute $M) to complete"
sleep_until $((M + 60 + 2 * IVL + 1))
NOW=$(date +%s)
ELAPSED=$((NOW - T0))
cp "$MP/metrics" "$WORK/metrics.1"

# --- one complete minute of the good target ---
RANGE="$(minute $M)..$(minute $((M + 60)))"
A=$MP/merged/alloc/job=app/$RANGE
cp "$A/folded.txt" "$WORK/alloc.folded" || die "no $A/folded.txt"
W=$(fsum "$WORK/alloc.folded" 'main\.allocate;')
L=$(fsum "$WORK/alloc.folded" 'main\.allocate;main\.allocLong')
S=$(fsum "$WORK/alloc.folded" 'main\.allocate;main\.allocShort')
TOT=$(fsum "$WORK/alloc.folded")
SHARE=$(pct "$L" "$W")
RATE=$(awk -v w="$W" -v m=$MIB 'BEGIN { printf "%.2f", w / 60 / m }')
log "alloc $RANGE: workload $W B (allocLong $L, allocShort $S) of $TOT B; the rest is the pprof handler ($(pct $((TOT - W)) "$TOT")%)"
within "$SHARE" 87.9 93.9 && ok "allocLong is $SHARE% of the workload's alloc_space (want 90.9 +- 3)" ||
	fail "allocLong is $SHARE% of the workload's alloc_space (want 90.9 +- 3)"
within "$RATE" 9.9 12.1 && ok "workload allocates $RATE MiB/s over the minute (want 11 +- 10%)" ||
	fail "workload allocates $RATE MiB/s over the minute (want 11 +- 10%)"
go tool pprof -top -sample_index=alloc_space "$A/profile.pb" >"$WORK/alloc.top" 2>&1 &&
	grep -q 'main.allocLong' "$WORK/alloc.top" && ok "go tool pprof -top reads alloc profile.pb" ||
	fail "go tool pprof -top on alloc: $(head -3 "$WORK/alloc.top")"
GOL=$(go tool pprof -top -nodefraction=0 -unit=B -sample_index=alloc_space "$A/profile.pb" 2>/dev/null |
	awk '$NF == "main.allocLong" { sub(/B$/, "", $1); print $1 }')
[[ $GOL == "$L" ]] && ok "pprof sees the same allocLong bytes as folded.txt ($GOL)" ||
	fail "pprof says allocLong $GOL, folded.txt $L"

H=$MP/heap/job=app/$(minute $M)
HOLD=$(fsum "$H/folded.txt" 'main\.holdHeap')
within "$HOLD" $((8 * MIB * 9 / 10)) $((8 * MIB * 11 / 10)) &&
	ok "heap $(minute $M): holdHeap $HOLD B live (want 8 MiB +- 10%)" ||
	fail "heap $(minute $M): holdHeap $HOLD B live (want 8 MiB +- 10%)"
[[ -L $MP/heap/job=app/latest ]] && ok "heap/job=app/latest -> $(readlink "$MP/heap/job=app/latest")" ||
	fail "no heap/job=app/latest"
HL=$(fsum "$MP/heap/job=app/latest/folded.txt" 'main\.holdHeap')
within "$HL" $((8 * MIB * 9 / 10)) $((8 * MIB * 11 / 10)) && ok "heap latest: holdHeap $HL B" ||
	fail "heap latest: holdHeap $HL B (want 8 MiB +- 10%)"
G=$MP/goroutine/job=app/$(minute $M)
NG=$(fsum "$G/folded.txt" 'main\.holdGoroutine')
[[ $NG == 25 ]] && ok "goroutine $(minute $M): 25 in holdGoroutine" ||
	fail "goroutine $(minute $M): $NG in holdGoroutine (want 25)"
for f in "$H/profile.pb" "$G/profile.pb" "$MP/merged/mutex/job=app/last-5m/profile.pb" \
	"$MP/merged/block/job=app/last-5m/profile.pb"; do
	if go tool pprof -top "$f" >"$WORK/t.top" 2>&1 && grep -q 'flat%' "$WORK/t.top" &&
		grep -q 'main\.' "$WORK/t.top"; then
		ok "go tool pprof -top reads ${f#$MP/} ($(grep -m1 '^Type:' "$WORK/t.top"))"
	else
		fail "go tool pprof -top ${f#$MP/}: $(head -3 "$WORK/t.top")"
	fi
done
if fg_have; then
	for t in alloc heap goroutine; do
		f=$MP/merged/$t/job=app/$RANGE/folded.txt
		fg "$f" >"$WORK/$t.svg" 2>"$WORK/fg.err" && grep -q '<svg' "$WORK/$t.svg" &&
			{ ! command -v xmllint >/dev/null || xmllint --noout "$WORK/$t.svg"; } &&
			ok "flamegraph.pl renders $t folded.txt" || fail "flamegraph.pl on $t: $(head -2 "$WORK/fg.err")"
	done
else
	fail "$(fg_have)"
fi

# --- the target restarts ---
RS=$(date +%s)
kill -KILL "$PID_app"; wait "$PID_app" 2>/dev/null
sleep 1
start app -addr "$ADDR_app"
log "job app restarted at +$((RS - T0)) s"
sleep_until $((RS + 15))
R1=$(($(date +%s)))
B=$MP/merged/alloc/job=app/$(minute $((M + 60)))..$(minute $((M + 180)))
cp "$B/folded.txt" "$WORK/after.folded"
NEG=$(awk '$NF !~ /^[0-9]+$/' "$WORK/after.folded" "$WORK/alloc.folded" | wc -l)
PNEG=$(go tool pprof -raw "$B/profile.pb" 2>/dev/null | awk '/^Samples:/ { s = 1; getline; next }
	/^Locations/ { s = 0 } s && /^ *-?[0-9]+( +-?[0-9]+)*:/ && /-[0-9]/ { n++ } END { print n + 0 }')
((NEG == 0 && PNEG == 0)) && ok "no negative value in alloc after the restart" ||
	fail "$NEG negative folded counts, $PNEG negative pprof samples"
WA=$(fsum "$WORK/after.folded" 'main\.allocate;')
RA=$(awk -v w="$WA" -v s=$((R1 - M - 60)) -v m=$MIB 'BEGIN { printf "%.2f", w / s / m }')
# Over [M+60, now) the service was down about a second: a spike (the old
# process's whole total, or the new one's stored twice) is far above 11,
# a lost restart (deltas clamped to 0) far below.
within "$RA" 6 12.1 && ok "alloc since $(minute $((M + 60))) across the restart: $RA MiB/s (no spike, no hole)" ||
	fail "alloc since $(minute $((M + 60))) across the restart: $RA MiB/s (want 6..12.1)"
cp "$MP/metrics" "$WORK/metrics.2"
RST=$(metric proffs_scrape_restarts_total app alloc)
((${RST:-0} >= 1)) && ok "restart counted (proffs_scrape_restarts_total $RST)" || fail "restart not counted ($RST)"

# --- faults, and everybody else on time ---
ELAPSED=$(($(date +%s) - T0))
chk_fail() { # JOB REASON
	local t v bad=0
	for t in heap alloc goroutine mutex block; do
		v=$(metric proffs_scrape_failures_total "$1" $t "$2")
		((${v:-0} >= 1)) || bad=1
		[[ $(metric proffs_scrape_up "$1" $t) == 0 ]] || bad=1
	done
	((bad == 0)) && ok "job $1: every type counted as $2 ($(metric proffs_scrape_failures_total "$1" heap "$2") heap), up 0" ||
		fail "job $1: failures $2 not counted for every type"
}
chk_fail hang timeout
chk_fail e500 http_status
chk_fail junk bad_profile
chk_fail gone connect
GS=$(metric proffs_scrape_stored_total gone heap)
((${GS:-0} >= 3)) && ok "job gone was scraped before it went away ($GS heaps)" || fail "job gone: $GS heaps stored"
NA=$(metric proffs_scrape_attempts_total app heap)
WANT=$((ELAPSED / IVL * 85 / 100))
((NA >= WANT)) && ok "job app scraped on time beside the faults: $NA heaps in $ELAPSED s (>= $WANT)" ||
	fail "job app: $NA heap scrapes in $ELAPSED s (want >= $WANT)"
for t in heap alloc goroutine mutex block; do
	D=$(metric proffs_scrape_duration_seconds app $t)
	# Within its interval: a round never runs into the next one.
	within "$D" 0 $IVL || fail "job app $t took $D s"
done
NB=$(awk '/^proffs_batches_total/ { print $2 }' "$MP/metrics")
WANTB=$((ELAPSED / 2 * 80 / 100))
((NB >= WANTB)) && ok "cpu: $NB batches in $ELAPSED s (>= $WANTB)" || fail "cpu: $NB batches in $ELAPSED s"
CS=$(fsum "$MP/merged/cpu/comm=scrapetarget/last-5m/folded.txt")
((CS > 0)) && ok "cpu: the Go service is sampled (folded total $CS)" || fail "cpu: no samples of comm=scrapetarget"

t1=$(date +%s%N)
run_stop "$RUN_PID" "$MP" && {
	ms=$((($(date +%s%N) - t1) / 1000000))
	lim=2000
	[[ -n ${SAN:-} ]] && lim=5000 # the sanitizers slow the last flush down
	((ms < lim)) && ok "SIGTERM: exited in $ms ms with a hanging transfer" || fail "SIGTERM took $ms ms"
}
finish
