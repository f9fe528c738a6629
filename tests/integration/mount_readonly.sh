#!/usr/bin/env bash
# timeout: 120 (three times its longest run on a clean clone, stop 48)
# mount_readonly: every mutation fails with EROFS (opens for writing with
# EROFS or EACCES) and the tree is unchanged afterwards.
# san: yes
# long: yes (minutes of wall clock, mostly waiting: started first)
source "$(dirname "$0")/mount_lib.bash"

STORE=$WORK/store
make_dataset "$STORE"
MP=$(mnt_dir mp)
mnt_start "$STORE" "$MP"

snapshot() { (cd "$MP" && find README cpu/2026-11-20T10:00 cpu/latest merged/cpu/2026-11-20T10 -printf '%p %s %m %y\n' | LC_ALL=C sort
	sha256sum README cpu/2026-11-20T10:00/* merged/cpu/2026-11-20T10/*; ls -A . cpu) 2>&1; }
snapshot >"$WORK/before"

F=$MP/cpu/2026-11-20T10:00/top.txt
D=$MP/cpu/2026-11-20T10:00
# Each python probe prints the errno name of the failing call, or "OK".
probe() { # label expected-errnos python-statement
	local got
	got=$(python3 - "$MP" "$3" <<'EOF'
import errno, os, sys
mp, stmt = sys.argv[1], sys.argv[2]
try:
    exec(stmt)
    print("OK")
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e.errno)))
EOF
)
	if [[ " $2 " == *" $got "* ]]; then ok "$1: $got"; else fail "$1: got $got, want one of $2"; fi
}
probe "open O_WRONLY" "EROFS EACCES" "os.open('$F', os.O_WRONLY)"
probe "open O_RDWR" "EROFS EACCES" "os.open('$F', os.O_RDWR)"
probe "open O_TRUNC" "EROFS EACCES" "os.open('$F', os.O_RDONLY|os.O_TRUNC)"
probe "open O_APPEND" "EROFS EACCES" "os.open('$F', os.O_WRONLY|os.O_APPEND)"
probe "create file" "EROFS" "os.open('$D/new.txt', os.O_WRONLY|os.O_CREAT, 0o644)"
probe "create at root" "EROFS" "os.open(mp + '/new', os.O_WRONLY|os.O_CREAT|os.O_EXCL, 0o644)"
probe "mkdir" "EROFS" "os.mkdir('$D/sub')"
probe "mkdir type" "EROFS" "os.mkdir(mp + '/heap')"
probe "rmdir" "EROFS EBUSY ENOTEMPTY" "os.rmdir('$D')"
probe "unlink" "EROFS" "os.unlink('$F')"
probe "rename" "EROFS" "os.rename('$F', '$D/x.txt')"
probe "rename dir" "EROFS" "os.rename('$D', mp + '/cpu/x')"
probe "link" "EROFS" "os.link('$F', '$D/hard')"
probe "symlink" "EROFS" "os.symlink('x', '$D/sym')"
probe "chmod" "EROFS" "os.chmod('$F', 0o666)"
probe "chown" "EROFS" "os.chown('$F', 1, 1)"
probe "utime" "EROFS" "os.utime('$F', (0, 0))"
probe "truncate" "EROFS" "os.truncate('$F', 0)"
probe "setxattr" "EROFS ENOTSUP EOPNOTSUPP" "os.setxattr('$F', 'user.x', b'1')"
probe "mknod fifo" "EROFS" "os.mkfifo('$D/fifo')"
probe "unlink latest" "EROFS" "os.unlink(mp + '/cpu/latest')"

# shell clients too
if echo x >"$F" 2>/dev/null; then fail "shell write succeeded"; else ok "shell write refused"; fi
if touch "$D/touched" 2>/dev/null; then fail "touch succeeded"; else ok "touch refused"; fi
if cp /etc/hostname "$D/" 2>/dev/null; then fail "cp into the tree succeeded"; else ok "cp into the tree refused"; fi

snapshot >"$WORK/after"
if cmp -s "$WORK/before" "$WORK/after"; then ok "tree unchanged"; else fail "tree changed"; diff "$WORK/before" "$WORK/after" | head; fi
grep -q '\bro\b' <(awk -v d="$MP" '$2 == d { print $4 }' /proc/mounts | tr ',' ' ') && ok "mounted ro" || fail "not mounted ro"
awk -v d="$MP" '$2 == d { print $1, $3, $4 }' /proc/mounts | grep -q '^proffs fuse.proffs .*default_permissions' &&
	ok "fsname/subtype proffs, default_permissions" || fail "mount options: $(grep " $MP " /proc/mounts)"
grep " $MP " /proc/mounts | grep -q allow_other && fail "allow_other without --allow-other"

mnt_stop "$MNT_PID" "$MP" && ok "clean stop"
finish
