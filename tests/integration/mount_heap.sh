#!/usr/bin/env bash
# timeout: 120 (three times its longest run on a clean clone, stop 48)
# mount_heap: while reads go on, renders reuse the heap (issue 13).
# `proffs mount` over an hour of bench_gen's busy host (a minute's
# profile.pb is ~1.3 MB, ~4,500 samples over ~16k locations):
#  - ten distinct minutes read one after another: after the first, each
#    render costs the daemon at most half the page faults of the first
#    (~1,400 a render when every render handed its blocks back to the
#    kernel and faulted them in again, ~150 when all were kept, ~650 now
#    that blocks over 1 MiB are mapped at each render: they fragmented
#    the kept heap of busy windows' renders, issue 26)
#  - once reads stop, the kept blocks go back: 10 s later RssAnon is
#    within 4 MiB of its figure before the reads
# san: no (ASan's allocator is not glibc's: nothing to keep)
source "$(dirname "$0")/mount_lib.bash"

STORE=$WORK/store
START=1795518000 # 2026-11-24T11:00Z
"$TESTS_BIN/bench_gen" hour --start "$START" --store "$STORE" >/dev/null 2>&1 || die "bench_gen hour"
MP=$(mnt_dir mp)
mnt_start "$STORE" "$MP"

minflt() { awk '{ print $10 }' "/proc/$MNT_PID/stat"; }
minute() { date -u -d "@$((START + $1 * 60))" +%Y-%m-%dT%H:%M; }

ls "$MP/cpu" >/dev/null || die "list cpu/"
# Nothing read yet: the daemon at rest (its start-up trim is 5 s in).
sleep 6
a0=$(anon)
fa=$(minflt)
cat "$MP/cpu/$(minute 1)/profile.pb" >"$WORK/first.pb" || die "read a minute"
sz=$(stat -c %s "$WORK/first.pb")
((sz > 500000)) || die "a minute's profile.pb is $sz bytes (want a busy minute, > 500 kB)"
f0=$(minflt)
first=$((f0 - fa))
for i in $(seq 2 10); do
	cat "$MP/cpu/$(minute $((i * 5)))/profile.pb" >/dev/null || die "read minute $((i * 5))"
done
per=$((($(minflt) - f0) / 9))
a1=$(anon)
log "page faults of the daemon: the first render $first, each after it $per; RssAnon $a0 -> $a1 KiB"
((per * 2 <= first)) && ok "renders reuse the heap: $per page faults a render after the first's $first (<= half)" ||
	fail "$per page faults a render after the first's $first (want <= half: the heap is not kept between renders)"

# Reads stop: 5-7 s later (the wait ticks each second) the daemon hands
# the kept blocks back.
sleep 10
a2=$(anon)
log "reads stopped 10 s: RssAnon $a2 KiB"
((a2 - a0 <= 4 << 10)) && ok "once reads stopped, RssAnon is $(((a2 - a0) >> 10)) MiB over its figure at rest (<= 4)" ||
	fail "once reads stopped, RssAnon is $(((a2 - a0) >> 10)) MiB over its figure at rest (want <= 4)"
mnt_stop "$MNT_PID" "$MP"
finish
