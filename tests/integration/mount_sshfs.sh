#!/usr/bin/env bash
# timeout: 120 (three times its longest run on a clean clone, stop 48)
# mount_sshfs: the mount re-exported over sshfs (sshd bound to 127.0.0.1
# on a free port, host and user keys made by the test, root login by key
# in a temporary config): listings, the latest link and every file's
# bytes are identical to direct reads.
source "$(dirname "$0")/mount_lib.bash"

command -v sshfs >/dev/null || skip "sshfs not installed"
SSHD=$(command -v sshd || echo /usr/sbin/sshd)
[[ -x $SSHD ]] || skip "sshd not installed"
SFTP=/usr/lib/openssh/sftp-server
[[ -x $SFTP ]] || SFTP=internal-sftp

STORE=$WORK/store
make_dataset "$STORE"
MP=$(mnt_dir mp)
mnt_start "$STORE" "$MP"

# ---- sshd on 127.0.0.1:<free port> ----
K=$WORK/ssh
mkdir -p "$K" && chmod 700 "$K"
ssh-keygen -q -t ed25519 -N '' -f "$K/host" || die "ssh-keygen host"
ssh-keygen -q -t ed25519 -N '' -f "$K/user" || die "ssh-keygen user"
cp "$K/user.pub" "$K/authorized_keys"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p /run/sshd
cat >"$K/sshd_config" <<EOF
Port $PORT
ListenAddress 127.0.0.1
HostKey $K/host
PidFile $K/sshd.pid
AuthorizedKeysFile $K/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp $SFTP
LogLevel ERROR
EOF
"$SSHD" -t -f "$K/sshd_config" || die "sshd config rejected"
"$SSHD" -D -e -f "$K/sshd_config" 2>"$WORK/sshd.log" &
SSHD_PID=$!
PIDS+=("$SSHD_PID")
for i in $(seq 50); do
	python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 0.2)" 2>/dev/null && break
	sleep 0.1
done

# ---- sshfs of the proffs mount ----
SMP=$(mnt_dir sshfs)
MOUNTS+=("$SMP")
sshfs -f -o ro,port="$PORT",IdentityFile="$K/user",StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null,BatchMode=yes \
	"root@127.0.0.1:$MP" "$SMP" 2>"$WORK/sshfs.log" &
SSHFS_PID=$!
PIDS+=("$SSHFS_PID")
for i in $(seq 100); do is_mounted "$SMP" fuse.sshfs && break; kill -0 "$SSHFS_PID" 2>/dev/null || break; sleep 0.1; done
is_mounted "$SMP" fuse.sshfs || { cat "$WORK/sshfs.log" "$WORK/sshd.log"; die "sshfs did not mount"; }
ok "sshfs mounted the proffs mount over 127.0.0.1:$PORT"

# ---- listings and link ----
for d in "" cpu cpu/comm=api merged/cpu/2026-11-20 cpu/2026-11-20T10:00; do
	a=$(cd "$MP/$d" && LC_ALL=C ls -A)
	b=$(cd "$SMP/$d" && LC_ALL=C ls -A)
	[[ "$a" == "$b" && -n "$a" ]] && ok "ls /$d identical" || fail "ls /$d: direct [$a] sshfs [$b]"
done
l=$(readlink "$SMP/cpu/latest")
[[ $l == "$(readlink "$MP/cpu/latest")" ]] && ok "latest -> $l over sshfs" || fail "latest over sshfs: '$l'"

# ---- bytes ----
n=0
for d in cpu/2026-11-20T10:00 cpu/2026-11-20T11:01 cpu/comm=db/2026-11-20T10:01 merged/cpu/2026-11-20 \
	merged/cpu/2026-11-20T10:00..2026-11-20T10:03 diff/cpu/2026-11-20T10/vs/2026-11-20T11; do
	for f in profile.pb folded.txt flamegraph.svg top.txt; do
		if cmp -s "$MP/$d/$f" "$SMP/$d/$f"; then n=$((n + 1)); else fail "sshfs $d/$f differs"; fi
		s1=$(stat -c %s "$MP/$d/$f"); s2=$(stat -c %s "$SMP/$d/$f")
		[[ $s1 == "$s2" ]] || fail "sshfs $d/$f: size $s2, direct $s1"
	done
done
cmp -s "$MP/README" "$SMP/README" && n=$((n + 1)) || fail "README differs"
ok "$n files byte-identical over sshfs"
rm -rf "$WORK/x" && mkdir "$WORK/x"
(cd "$SMP/cpu" && tar cf - 2026-11-20T10:02) | (cd "$WORK/x" && tar xf -) &&
	diff -r "$WORK/x/2026-11-20T10:02" "$MP/cpu/2026-11-20T10:02" >/dev/null && ok "tar over sshfs identical" || fail "tar over sshfs"
if echo x >"$SMP/cpu/2026-11-20T10:00/top.txt" 2>/dev/null; then fail "write through sshfs succeeded"; else ok "write through sshfs refused"; fi

# ---- teardown: sshfs, then sshd, then the mount ----
fusermount3 -u "$SMP" || fail "fusermount3 -u sshfs"
wait "$SSHFS_PID" 2>/dev/null
kill "$SSHD_PID"; wait "$SSHD_PID" 2>/dev/null
mnt_stop "$MNT_PID" "$MP" && ok "clean stop"
finish
