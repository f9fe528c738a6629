#!/usr/bin/env bash
# timeout: 120 (three times its longest run on a clean clone, stop 48)
# store_copy: `proffs copy --store DIR DEST` of a store being written.
#  - while an appender (tests/tools/synth_batches) commits batches as fast
#    as it can, 5 copies are taken: each passes `proffs check`, and holds
#    exactly a prefix of what the appender logged as committed (its block
#    count N, and the first N logged batches verify with their exact
#    sample counts): one consistent snapshot, never half a batch
#  - the copy is compacted: after deleting data (retention), the copy's
#    file is smaller than the source's
#  - refused: a DEST already holding a store, a missing source, bad usage
#  - a running `proffs run --label node=web-1` is copied; the daemon goes
#    on (its mount still answers, it exits 0 on SIGTERM) and the copy
#    passes check and lists cpu/node=web-1/
source "$(dirname "$0")/sampler_lib.bash"
synth=$TESTS_BIN/synth_batches
[[ -x $synth ]] || die "missing $synth"

# --- usage ---
"$PROFFS" copy --help | grep -q 'usage: proffs copy' || fail "copy --help"
"$PROFFS" copy --bogus >"$WORK/out" 2>&1; rc=$?
((rc == 2)) && [[ $(wc -l <"$WORK/out") == 1 ]] && ok "bad flag: exit 2, one line" || fail "bad flag: rc $rc"
"$PROFFS" copy --store "$WORK/none" >"$WORK/out" 2>&1; rc=$?
((rc == 2)) && ok "missing DEST: exit 2" || fail "missing DEST: rc $rc"
"$PROFFS" copy --store "$WORK/none" "$WORK/x" >"$WORK/out" 2>&1 && fail "copy of a missing store succeeded" || ok "copy of a missing store refused: $(head -1 "$WORK/out")"

# --- copies under a writer ---
src=$WORK/src
log=$WORK/committed.log
: >"$log"
PROFFS_STORE_NOSYNC=1 "$synth" --store "$src" --batches 0 --interval 10 --samples 300 --log "$log" &
SYN=$!
PIDS+=("$SYN")
for i in $(seq 100); do [[ -s $log ]] && break; sleep 0.05; done
[[ -s $log ]] || die "appender logged nothing"
# Copy first, check after the appender stopped (verifying is slow).
for i in 1 2 3 4 5; do
	sleep 0.3
	"$PROFFS" copy --store "$src" "$WORK/copy$i" || fail "copy $i failed"
	kill -0 "$SYN" 2>/dev/null || fail "appender died during copy $i"
done
kill -TERM "$SYN"; wait "$SYN" 2>/dev/null
logged=$(wc -l <"$log")
prev=0
for i in 1 2 3 4 5; do
	dst=$WORK/copy$i
	[[ -f $dst/data.mdb ]] || continue
	"$PROFFS" check --store "$dst" >"$WORK/check" 2>&1 || { fail "check of copy $i:"; cat "$WORK/check"; continue; }
	n=$("$synth" --store "$dst" --stat | sed -n 's/^nblocks=//p')
	if ((n < 1 || n > logged || n < prev)); then fail "copy $i: $n blocks, $logged logged, previous copy $prev"; continue; fi
	prev=$n
	head -n "$n" "$log" >"$WORK/prefix"
	if "$synth" --store "$dst" --verify "$WORK/prefix" >"$WORK/verify" 2>&1; then
		ok "copy $i: check passes; exactly the first $n of $logged committed batches"
	else
		fail "copy $i: prefix of $n batches does not verify:"; head -5 "$WORK/verify"
	fi
done
"$PROFFS" copy --store "$src" "$WORK/copy1" >"$WORK/out" 2>&1 && fail "copy over an existing store succeeded" ||
	{ grep -q "already holds a store" "$WORK/out" && ok "copy over an existing store refused" || fail "copy over a store: $(cat "$WORK/out")"; }

# --- compaction: drop most data, then copy ---
"$synth" --store "$src" --batches 1 --interval 10 --retention 1m >/dev/null 2>&1 || fail "expiring append"
"$PROFFS" copy --store "$src" "$WORK/compact" || fail "copy after expiry"
a=$(stat -c %s "$src/data.mdb"); b=$(stat -c %s "$WORK/compact/data.mdb")
((b < a)) && ok "compacted: copy $b bytes < source $a bytes" || fail "not compacted: copy $b, source $a"
"$PROFFS" check --store "$WORK/compact" >/dev/null 2>&1 && ok "compacted copy passes check" || fail "compacted copy check"

# --- a live daemon ---
if [[ $(id -u) == 0 && -r /sys/kernel/btf/vmlinux ]]; then
	store=$WORK/daemon
	mp=$WORK/mp
	mkdir -p "$mp"
	run_start "$store" "$mp" --batch-interval 1s --label node=web-1
	pid=$RUN_PID
	for i in $(seq 100); do [[ -d $mp/cpu ]] && break; sleep 0.1; done
	[[ -d $mp/cpu ]] || die "the daemon stored no cpu data"
	"$PROFFS" copy --store "$store" "$WORK/dcopy" && ok "copied a running daemon's store" || fail "copy of the daemon's store"
	sleep 1.5
	kill -0 "$pid" && [[ -d $mp/cpu/node=web-1 ]] && ok "daemon runs on and serves after the copy" || fail "daemon after copy"
	"$PROFFS" check --store "$WORK/dcopy" >"$WORK/check" 2>&1 && ok "daemon copy passes check" || { fail "daemon copy check"; cat "$WORK/check"; }
	"$PROFFS" cat --store "$WORK/dcopy" /cpu/ | grep -qx 'node=web-1' && ok "daemon copy lists cpu/node=web-1" || fail "daemon copy listing"
	run_stop "$pid" "$mp" && ok "daemon exits 0 on SIGTERM after the copy"
else
	echo "note: not root or no BTF: the live-daemon part is skipped"
fi
finish
