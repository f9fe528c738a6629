#!/usr/bin/env bash
# timeout: 120 (three times its longest run on a clean clone, stop 48)
# mount_nfs: the mount re-exported by nfs-ganesha (FSAL VFS, which reaches
# files by kernel file handles: name_to_handle_at/open_by_handle_at, so the
# FUSE side must support exports). Ganesha and rpcbind run inside
# `unshare --net --mount` with only loopback up, bound to 127.0.0.1, with a
# config written here; files read back with libnfs' nfs-cat (NFSv4 through
# the pseudo path and NFSv3 through the export path) must be identical to
# direct reads. Ganesha is torn down before the FUSE mount.
source "$(dirname "$0")/mount_lib.bash"

command -v ganesha.nfsd >/dev/null || skip "nfs-ganesha not installed"
command -v nfs-cat >/dev/null || skip "nfs-cat (libnfs-utils) not installed"
command -v rpcbind >/dev/null || skip "rpcbind not installed"
ls /usr/lib/*/ganesha/libfsalvfs.so >/dev/null 2>&1 || skip "nfs-ganesha-vfs (FSAL VFS) not installed"
unshare --net --mount true 2>/dev/null || skip "cannot unshare net+mount namespaces here"

STORE=$WORK/store
make_dataset "$STORE"
MP=$(mnt_dir mp)
mnt_start "$STORE" "$MP"

# What NFS servers need first: handles that resolve after the kernel has
# forgotten the inodes (lookups of "." and ".." by node id).
if "$TESTS_BIN/fhandle" "$MP" cpu cpu/2026-11-20T10:00 cpu/2026-11-20T10:00/top.txt \
	merged/cpu/comm=api/2026-11-20/profile.pb diff/cpu/2026-11-20T10/vs/2026-11-20T11 \
	diff/cpu/2026-11-20T10/vs/2026-11-20T11/folded.txt README >"$WORK/fhandle.out" 2>&1; then
	ok "file handles resolve after the kernel dropped its caches ($(grep -c '^ok' "$WORK/fhandle.out") handles)"
	h=$(awk '/^proffs_fuse_handle_lookups_total/ { print $2 }' "$MP/metrics")
	[[ ${h:-0} -gt 0 ]] && ok "$h lookups by handle (. and ..) answered" || fail "no lookups by handle reached the filesystem"
elif [[ $? == 77 ]]; then
	log "note: handle check not possible here: $(tail -1 "$WORK/fhandle.out")"
else
	fail "file handles"; cat "$WORK/fhandle.out"
fi

N=$WORK/nfs
mkdir -p "$N/rec"
cat >"$N/ganesha.conf" <<EOF
NFS_CORE_PARAM {
	Bind_addr = 127.0.0.1;
	Protocols = 3, 4;
	Enable_NLM = false;
	Enable_RQUOTA = false;
}
NFSV4 {
	RecoveryBackend = fs;
	RecoveryRoot = "$N/rec";
	Graceless = true;
	Lease_Lifetime = 10;
}
NFS_KRB5 { Active_krb5 = false; }
LOG { Default_Log_Level = EVENT; }
EXPORT {
	Export_Id = 1;
	Path = "$MP";
	Pseudo = "/prof";
	Access_Type = RO;
	Squash = No_Root_Squash;
	SecType = sys;
	Protocols = 3, 4;
	Transports = TCP;
	FSAL { Name = VFS; }
}
EOF

# The files to compare (paths without '%': nfs-cat takes them in a URL).
FILES=(README)
for d in cpu/2026-11-20T10:00 cpu/2026-11-20T11:01 cpu/comm=api/2026-11-20T10:01 merged/cpu/2026-11-20 \
	"merged/cpu/comm=~a.*/2026-11-20T10" diff/cpu/2026-11-20T10/vs/2026-11-20T11; do
	for f in profile.pb folded.txt flamegraph.svg top.txt; do FILES+=("$d/$f"); done
done
printf '%s\n' "${FILES[@]}" >"$N/files"

# Runs inside the namespaces. Ganesha's getaddrinfo (AI_ADDRCONFIG)
# finds no address for 127.0.0.1 unless some address other than
# 127.0.0.1 exists, so lo gets a second loopback address 127.0.0.2.
# A private tmpfs on /run keeps rpcbind's and ganesha's sockets, locks and
# pid files away from the host's.
cat >"$N/inner.sh" <<'EOF'
set -u
N=$1 MP=$2
ip link set lo up && ip addr add 127.0.0.2/8 dev lo || { echo "SETUP: loopback"; exit 3; }
mount -t tmpfs proffs-test-run /run || { echo "SETUP: tmpfs /run"; exit 3; }
mkdir -p /run/ganesha
rpcbind -w -f & echo $! >"$N/rpcbind.pid"
for i in $(seq 50); do [[ -S /run/rpcbind.sock ]] && break; sleep 0.1; done
ganesha.nfsd -F -f "$N/ganesha.conf" -L "$N/ganesha.log" -p "$N/ganesha.pid" -N NIV_EVENT &
G=$!
echo $G >"$N/ganesha.pid2"
up=0
for i in $(seq 100); do
	if (exec 3<>/dev/tcp/127.0.0.1/2049) 2>/dev/null; then up=1; break; fi
	kill -0 $G 2>/dev/null || break
	sleep 0.1
done
if ((up)); then
	# NFSv4 through the pseudo path, NFSv3 through the export path
	i=0
	while read -r f; do
		nfs-cat "nfs://127.0.0.1/prof/$f?version=4" >"$N/v4.$i" 2>"$N/v4.$i.err"; echo "v4 $? $f"
		nfs-cat "nfs://127.0.0.1$MP/$f" >"$N/v3.$i" 2>"$N/v3.$i.err"; echo "v3 $? $f"
		i=$((i + 1))
	done <"$N/files"
	nfs-ls "nfs://127.0.0.1/prof/cpu?version=4" >"$N/ls.cpu" 2>&1; echo "ls $?"
	# Make the kernel forget the FUSE dentries and inodes: ganesha's
	# cached handles must now be resolved by inode number through FUSE
	# (lookup of "." and ".." on a node id: export support).
	sync; echo 2 >/proc/sys/vm/drop_caches
	i=0
	while read -r f; do
		nfs-cat "nfs://127.0.0.1/prof/$f?version=4" >"$N/again.$i" 2>"$N/again.$i.err"; echo "again $? $f"
		i=$((i + 1))
	done <"$N/files"
else
	echo "SETUP: ganesha did not start"
fi
# ganesha first, then rpcbind: before the FUSE mount goes away
kill -TERM $G 2>/dev/null
for i in $(seq 100); do kill -0 $G 2>/dev/null || break; sleep 0.1; done
kill -KILL $G 2>/dev/null
wait $G 2>/dev/null
kill "$(cat "$N/rpcbind.pid")" 2>/dev/null
wait
exit 0
EOF
CLEANUP_HOOKS+=("kill -KILL \$(cat '$N/ganesha.pid2') \$(cat '$N/rpcbind.pid')")

timeout 120 unshare --net --mount bash "$N/inner.sh" "$N" "$MP" >"$N/inner.out" 2>&1
rc=$?
if grep -q '^SETUP:' "$N/inner.out" || ((rc != 0)); then
	cat "$N/inner.out"; tail -20 "$N/ganesha.log" 2>/dev/null
	die "ganesha setup failed (rc $rc): $(grep '^SETUP:' "$N/inner.out")"
fi
ok "ganesha served inside unshare --net --mount on 127.0.0.1"

i=0 n4=0 n3=0 na=0
while read -r f; do
	read -r v r4 _ < <(grep -F " $f" "$N/inner.out" | grep '^v4' | head -1)
	read -r v r3 _ < <(grep -F " $f" "$N/inner.out" | grep '^v3' | head -1)
	if [[ ${r4:-x} == 0 ]] && cmp -s "$N/v4.$i" "$MP/$f"; then n4=$((n4 + 1)); else
		fail "NFSv4 $f: rc ${r4:-?}, $(head -c 200 "$N/v4.$i.err"), $(stat -c %s "$N/v4.$i") vs $(stat -c %s "$MP/$f") bytes"; fi
	read -r v ra _ < <(grep -F " $f" "$N/inner.out" | grep '^again' | head -1)
	if [[ ${ra:-x} == 0 ]] && cmp -s "$N/again.$i" "$MP/$f"; then na=$((na + 1)); else
		fail "NFSv4 after drop_caches $f: rc ${ra:-?}, $(head -c 200 "$N/again.$i.err")"; fi
	if [[ ${r3:-x} == 0 ]] && cmp -s "$N/v3.$i" "$MP/$f"; then n3=$((n3 + 1)); else
		fail "NFSv3 $f: rc ${r3:-?}, $(head -c 200 "$N/v3.$i.err")"; fi
	i=$((i + 1))
done <"$N/files"
ok "$n4 files byte-identical over NFSv4, $n3 over NFSv3, $na over NFSv4 after the kernel dropped its caches (of ${#FILES[@]})"
got=$(awk '{ print $NF }' "$N/ls.cpu" | grep -v '^\.\.\?$' | LC_ALL=C sort | tr '\n' ' ')
want=$(ls -A "$MP/cpu" | LC_ALL=C sort | tr '\n' ' ')
[[ "$got" == "$want" ]] && ok "nfs-ls /prof/cpu matches ls" || fail "nfs-ls: [$got] want [$want]"
grep -qi 'stale\|ESTALE' "$N/ganesha.log" && fail "ganesha logged stale handles: $(grep -i -m1 stale "$N/ganesha.log")"

mnt_stop "$MNT_PID" "$MP" && ok "clean stop after ganesha"
finish
