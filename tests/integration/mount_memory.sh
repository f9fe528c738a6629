#!/usr/bin/env bash
# timeout: 180 (three times its longest run on a clean clone, stop 48)
# mount_memory: what a walk of the tree leaves resident (issue 9 item 5).
# `proffs mount` with its defaults (render cache 32M) over 20 busy minutes
# of bench_gen's synthetic host; every file three levels down read once.
#  - the render cache fills (>= 16 MiB) but its bytes are in its file in
#    the store's directory, not the heap: RssAnon grows by <= 12 MiB (the
#    heap-held cache grew it by ~44 MiB)
#  - once reads stop (5 s), the daemon asks the kernel to drop the dentries
#    nobody uses: the inode table then holds what is in use (a working
#    directory at /prof/cpu itself, one in a minute, an open file), not
#    every path walked; those keep working: no "(deleted)" working
#    directory (getcwd would fail), the open file reads the same bytes,
#    and RssAnon is back within 8 MiB of its figure before the walk
# san: no (RSS figures of an ASan build say nothing)
# alone: no (the figures are this daemon's own; it once dropped the
# kernel's caches host-wide, which slowed every other test)
source "$(dirname "$0")/mount_lib.bash"

STORE=$WORK/store
"$TESTS_BIN/bench_gen" minutes --minutes 20 --start 1795474800 --store "$STORE" >/dev/null 2>&1 ||
	die "bench_gen minutes"
MP=$(mnt_dir mp)
mnt_start "$STORE" "$MP"

metric() { awk -v k="$1" '$1 == k { print $2 }' "$MP/metrics"; }

# Users of the tree while it is pruned: a working directory at a child of
# the root (the one level the prune unhashes), one deeper, an open file.
M=$(ls "$MP/cpu" | grep -E '^[0-9]{4}-' | head -1)
(cd "$MP/cpu" && exec sleep 60) &
CWD1=$!
(cd "$MP/cpu/$M" && exec sleep 60) &
CWD2=$!
PIDS+=("$CWD1" "$CWD2")
cp "$MP/cpu/$M/folded.txt" "$WORK/held.txt" || die "copy"
exec 3<"$MP/cpu/$M/folded.txt"

a0=$(anon)
find "$MP/cpu" "$MP/merged/cpu/last-1h" -maxdepth 3 -type f >"$WORK/files" || fail "find"
n=$(wc -l <"$WORK/files")
tr '\n' '\0' <"$WORK/files" | xargs -0 cat >/dev/null || fail "a read failed"
a1=$(anon)
cb=$(metric proffs_render_cache_bytes)
fb=$(metric proffs_render_cache_file_bytes)
i1=$(metric proffs_fuse_inodes_held)
log "walked $n files: RssAnon $a0 -> $a1 KiB; render cache $cb bytes ($fb in its file)"
((n > 2000)) || fail "only $n files walked"
((${cb:-0} >= 16 << 20 && ${fb:-0} >= 16 << 20)) && ok "the render cache holds ${cb} bytes, ${fb} of them in its file" ||
	fail "render cache ${cb:-?} bytes, ${fb:-none} in its file (want >= 16 MiB each)"
((a1 - a0 <= 12 << 10)) && ok "RssAnon grew by $(((a1 - a0) >> 10)) MiB (<= 12)" ||
	fail "RssAnon grew by $(((a1 - a0) >> 10)) MiB over the walk (want <= 12)"

# Hands off the mount: reads stop; the prune comes 5 s later.
sleep 8
i2=$(metric proffs_fuse_inodes_held)
all=$(metric proffs_fuse_inodes)
pr=$(metric proffs_fuse_prunes_total)
a2=$(anon)
log "inodes held: $i1 after the walk, $i2 after reads stopped ($all with the forgotten kept); prunes $pr; RssAnon $a2 KiB"
((a2 - a0 <= 8 << 10)) && ok "once reads stopped, RssAnon is $(((a2 - a0) >> 10)) MiB over its figure before the walk (<= 8)" ||
	fail "once reads stopped, RssAnon is $(((a2 - a0) >> 10)) MiB over its figure before the walk (want <= 8)"
((i1 > 8000 && i2 <= 64 && all <= 4096 + 64)) && ok "inodes held: $i1 after the walk, $i2 once reads stopped" ||
	fail "inodes held: $i1 after the walk, $i2 after reads stopped, $all in the table (want > 8000, <= 64, <= 4160)"
for p in "$CWD1" "$CWD2"; do
	c=$(readlink "/proc/$p/cwd")
	[[ $c == "$MP/cpu"* && $c != *deleted* ]] && ok "a working directory survives: $c" ||
		fail "working directory now '$c'"
done
cmp -s <(cat <&3) "$WORK/held.txt" && ok "a file open across the prune reads the same bytes" ||
	fail "the open file reads differently"
exec 3<&-
# What the kernel forgot and was kept still serves (the table's ring).
cat "$MP/cpu/latest/profile.pb" >/dev/null || fail "a read after the forgets"
[[ $(ls "$MP/cpu/$M") == *profile.pb* ]] || fail "a listing after the prune"

# More inodes in use than the prune's bound (every file of the walk held
# open): a prune once reads stop, not one every 5 s for as long as they
# stay open (its own lookups are not reads).
python3 - "$WORK/files" "$WORK/opened" <<'PY' &
import resource, sys, time
resource.setrlimit(resource.RLIMIT_NOFILE, (16384, 16384))
fs = [open(l.rstrip("\n"), "rb") for l in open(sys.argv[1])]
open(sys.argv[2], "w").write(str(len(fs)))
time.sleep(120)
PY
HOLD=$!
PIDS+=("$HOLD")
for _ in $(seq 600); do [[ -s $WORK/opened ]] && break; sleep 0.1; done
[[ -s $WORK/opened ]] || die "could not hold the files open"
sleep 8
p1=$(metric proffs_fuse_prunes_total)
h1=$(metric proffs_fuse_inodes_held)
# That read of metrics was a read: one more prune may follow it, 5 s on.
sleep 15
p2=$(metric proffs_fuse_prunes_total)
log "$(cat "$WORK/opened") files held open: $h1 inodes held; prunes $pr, then $p1, 15 s later $p2"
((h1 > 4096 && p1 > pr && p2 - p1 <= 1)) && ok "inodes in use past the bound: one prune per pause in reads ($pr, $p1, $p2)" ||
	fail "held $h1, prunes $pr -> $p1 -> $p2 (want held > 4096, then at most one prune per pause)"
kill "$HOLD" 2>/dev/null
wait "$HOLD" 2>/dev/null
mnt_stop "$MNT_PID" "$MP"
finish
