#!/usr/bin/env bash
# timeout: 120 (three times its longest run on a clean clone, stop 48)
# mount_signal: SIGTERM while a reader holds a file open exits 0 with no
# mount left; SIGINT likewise; after kill -9 (a stale mount: "Transport
# endpoint is not connected") a new `proffs mount` on the same mountpoint
# detaches the stale one and serves.
# san: yes
source "$(dirname "$0")/mount_lib.bash"

STORE=$WORK/store
make_dataset "$STORE"
MP=$(mnt_dir mp)

# 1. SIGTERM with an open file
mnt_start "$STORE" "$MP"
F=$MP/merged/cpu/2026-11-20/flamegraph.svg
exec 7<"$F" || die "open $F"
head -c 100 <&7 >/dev/null
t0=$(date +%s%N)
mnt_stop "$MNT_PID" "$MP" && ok "SIGTERM with an open file: exit 0, no mount left ($((($(date +%s%N) - t0) / 1000000)) ms)"
exec 7<&-
grep -q "unmounted" "$MNT_LOG" || fail "no 'unmounted' in the log"
if stat "$MP" >/dev/null 2>&1 && [[ -z "$(ls -A "$MP")" ]]; then ok "mountpoint is an empty dir again"; else fail "mountpoint unusable"; fi

# 2. SIGINT, and a reader cd'ed into the tree
mnt_start "$STORE" "$MP"
(cd "$MP/cpu/2026-11-20T10:00" && sleep 30) &
CDPID=$!
PIDS+=("$CDPID")
sleep 0.3
kill -INT "$MNT_PID"
for i in $(seq 100); do kill -0 "$MNT_PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$MNT_PID" 2>/dev/null; then fail "no exit on SIGINT"; else
	wait "$MNT_PID"; rc=$?
	[[ $rc == 0 ]] && ok "SIGINT: exit 0" || fail "SIGINT: exit $rc"
fi
grep -q " $MP " /proc/mounts && fail "mount left after SIGINT" || ok "no mount left after SIGINT"
kill "$CDPID" 2>/dev/null; wait "$CDPID" 2>/dev/null

# 3. kill -9 leaves a stale mount; a new mount replaces it
mnt_start "$STORE" "$MP"
cat "$MP/cpu/2026-11-20T10:00/top.txt" >"$WORK/top1" || fail "read before kill -9"
kill -KILL "$MNT_PID"; wait "$MNT_PID" 2>/dev/null
if stat "$MP" 2>&1 | grep -q 'not connected'; then ok "kill -9 left a stale mount (ENOTCONN)"; else
	log "note: no stale mount after kill -9 (kernel cleaned it up)"; fi
mnt_start "$STORE" "$MP" --allow-other
cat "$MP/cpu/2026-11-20T10:00/top.txt" >"$WORK/top2" || fail "read after remount"
cmp -s "$WORK/top1" "$WORK/top2" && ok "remount after kill -9 serves the same bytes" || fail "bytes differ after remount"
n=$(grep -c " $MP " /proc/mounts)
[[ $n == 1 ]] && ok "exactly one mount at the mountpoint" || fail "$n mounts at $MP"
grep " $MP " /proc/mounts | grep -q allow_other && ok "--allow-other sets allow_other" || fail "allow_other missing"
grep -q 'stale mount' "$MNT_LOG" && ok "stale mount detached (logged)"
mnt_stop "$MNT_PID" "$MP" && ok "final SIGTERM clean"
n=$(grep -c " $MP " /proc/mounts)
[[ $n == 0 ]] || fail "$n mounts left at $MP"

# 4. unmounted from outside: the daemon notices and exits 0
mnt_start "$STORE" "$MP"
# (One try: mnt_start returns once the daemon's own stat of its
# mountpoint is done; that stat in flight was the EBUSY seen once.)
fusermount3 -u "$MP" 2>"$WORK/fusermount.err" && ok "fusermount3 -u" ||
	{ fail "fusermount3 -u: $(cat "$WORK/fusermount.err")"; fuser -vm "$MP" 2>&1 | head -5; }
for i in $(seq 100); do kill -0 "$MNT_PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$MNT_PID" 2>/dev/null; then fail "still running after an outside unmount"; else
	wait "$MNT_PID"; rc=$?
	[[ $rc == 0 ]] && ok "outside unmount: exit 0" || fail "outside unmount: exit $rc"
fi

# 5. SIGTERM while 8 readers hammer the mount (small cache: renders,
# evictions, releases racing with reads)
mnt_start "$STORE" "$MP" --cache-size 8K
RP=()
for i in $(seq 8); do
	(while cat "$MP/merged/cpu/2026-11-20T10:0$((i % 4))..2026-11-20T11:01/flamegraph.svg" >/dev/null 2>&1 &&
		ls "$MP/cpu" >/dev/null 2>&1; do :; done) &
	RP+=($!)
	PIDS+=($!)
done
sleep 1.5
mnt_stop "$MNT_PID" "$MP" && ok "SIGTERM under 8 busy readers: exit 0, no mount left"
for p in "${RP[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done

# 6. root only by default: another user cannot enter the mount
if command -v setpriv >/dev/null; then
	chmod 711 "$WORK" # mktemp -d made it 0700: let uid 65534 reach the mountpoint
	mnt_start "$STORE" "$MP"
	if setpriv --reuid=65534 --regid=65534 --clear-groups ls "$MP" >/dev/null 2>&1; then
		fail "uid 65534 can list the mount without --allow-other"
	else
		ok "uid 65534 refused without --allow-other"
	fi
	mnt_stop "$MNT_PID" "$MP"
	mnt_start "$STORE" "$MP" --allow-other
	if setpriv --reuid=65534 --regid=65534 --clear-groups cat "$MP/cpu/2026-11-20T10:00/top.txt" >/dev/null 2>&1; then
		ok "uid 65534 reads with --allow-other"
	else
		fail "uid 65534 cannot read with --allow-other"
	fi
	mnt_stop "$MNT_PID" "$MP"
fi
finish
