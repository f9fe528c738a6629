#!/usr/bin/env bash
# mount_memory: what a walk of the tree leaves resident (issue 9 item 5).
# `proffs mount` with its defaults (render cache 32M) over 20 busy minutes
# of bench_gen's synthetic host; every file three levels down read once.
#  - the render cache fills (>= 16 MiB) but its bytes are in its file in
#    the store's directory, not the heap: RssAnon grows by <= 12 MiB (the
#    heap-held cache grew it by ~44 MiB)
#  - once the kernel drops its dentries (drop_caches=2) the inode table
#    holds the last 4096 forgotten inodes, not every path ever read
# san: no (RSS figures of an ASan build say nothing)
# alone: yes (drop_caches evicts every file's pages host-wide: a parallel
# test's python3 took 8.7 s to start once)
source "$(dirname "$0")/mount_lib.bash"

STORE=$WORK/store
"$TESTS_BIN/bench_gen" minutes --minutes 20 --start 1795474800 --store "$STORE" >/dev/null 2>&1 ||
	die "bench_gen minutes"
MP=$(mnt_dir mp)
mnt_start "$STORE" "$MP"

anon() { awk '/^RssAnon:/ { print $2 }' "/proc/$MNT_PID/status"; }
metric() { awk -v k="$1" '$1 == k { print $2 }' "$MP/metrics"; }

a0=$(anon)
find "$MP/cpu" "$MP/merged/cpu/last-1h" -maxdepth 3 -type f >"$WORK/files" || fail "find"
n=$(wc -l <"$WORK/files")
tr '\n' '\0' <"$WORK/files" | xargs -0 cat >/dev/null || fail "a read failed"
a1=$(anon)
cb=$(metric proffs_render_cache_bytes)
fb=$(metric proffs_render_cache_file_bytes)
log "walked $n files: RssAnon $a0 -> $a1 KiB; render cache $cb bytes ($fb in its file)"
((n > 2000)) || fail "only $n files walked"
((${cb:-0} >= 16 << 20 && ${fb:-0} >= 16 << 20)) && ok "the render cache holds ${cb} bytes, ${fb} of them in its file" ||
	fail "render cache ${cb:-?} bytes, ${fb:-none} in its file (want >= 16 MiB each)"
((a1 - a0 <= 12 << 10)) && ok "RssAnon grew by $(((a1 - a0) >> 10)) MiB (<= 12)" ||
	fail "RssAnon grew by $(((a1 - a0) >> 10)) MiB over the walk (want <= 12)"

i1=$(metric proffs_fuse_inodes)
sync
echo 2 >/proc/sys/vm/drop_caches
sleep 1
i2=$(metric proffs_fuse_inodes)
((i1 > 8000 && i2 <= 4096 + 64)) && ok "inodes: $i1 after the walk, $i2 once the kernel forgot them" ||
	fail "inodes: $i1 after the walk, $i2 after drop_caches (want <= 4160)"
# What the kernel forgot and was kept still serves (the table's ring).
cat "$MP/cpu/latest/profile.pb" >/dev/null || fail "a read after the forgets"
mnt_stop "$MNT_PID" "$MP"
finish
