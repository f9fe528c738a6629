#!/bin/busybox sh
# /init of the VM runner's initramfs (tests/vm/run.sh builds it in; runs as
# PID 1 under busybox). Loads the 9p modules, mounts the host's root
# read-only at /newroot, sets up the writable and pseudo filesystems, runs the
# command the host put in the control share (tag vmctl) chrooted into the
# host root, reports its exit status, and powers off.
#
# Console (ttyS0): kernel messages and this script's own; the command's
# stdout+stderr go to ttyS1 alone. The exit status is written to the control
# share (file rc) and as a marker line "VM-RC=<n>" on ttyS0.

/bin/busybox mkdir -p /bin /proc /sys /dev /newroot
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1

R=/newroot
T0=$(cut -d' ' -f1 /proc/uptime)

off() {
	sync
	poweroff -f
	echo o >/proc/sysrq-trigger
	sleep 10
}
fail() {
	echo "vm-init: $*"
	echo "VM-INIT-FAIL: $*"
	[ -d $R/run/vm ] && echo "init: $*" >>$R/run/vm/init-error 2>/dev/null
	off
}

# 9p msize: bigger means fewer round trips; the kernel clamps it to the
# transport's maximum.
P9="trans=virtio,version=9p2000.L,msize=524288"

for m in $(cat /modules.list); do
	insmod /lib/modules/$m || fail "insmod $m"
done

ok=
for _ in 1 2 3 4 5 6 7 8 9 10; do
	# cache=loose: the host root does not change under a test run.
	if mount -t 9p -o $P9,ro,cache=loose hostroot $R 2>/dev/null; then ok=1; break; fi
	sleep 0.2
done
[ -n "$ok" ] || fail "cannot mount host root (9p tag hostroot)"

mount -t tmpfs -o mode=0755 tmpfs $R/run || fail "tmpfs /run"
mkdir -p $R/run/vm $R/run/lock $R/run/.ovl
mount -t 9p -o $P9,cache=none vmctl $R/run/vm || fail "cannot mount control share (vmctl)"
C=$R/run/vm

for d in /tmp /var/tmp; do
	mount -t tmpfs -o mode=1777 tmpfs $R$d || fail "tmpfs $d"
done
mount -t proc proc $R/proc
mount -t sysfs sysfs $R/sys
mount --move /dev $R/dev
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts -o newinstance,ptmxmode=0666 devpts $R/dev/pts
mount -t tmpfs -o mode=1777 tmpfs $R/dev/shm
ln -sf /proc/self/fd $R/dev/fd
ln -sf /proc/self/fd/0 $R/dev/stdin
ln -sf /proc/self/fd/1 $R/dev/stdout
ln -sf /proc/self/fd/2 $R/dev/stderr
mount -t debugfs debugfs $R/sys/kernel/debug
mount -t tracefs tracefs $R/sys/kernel/tracing 2>/dev/null
mount -t bpf -o mode=0700 bpf $R/sys/fs/bpf
mount -t cgroup2 cgroup2 $R/sys/fs/cgroup
[ -d $R/sys/kernel/security ] && mount -t securityfs securityfs $R/sys/kernel/security 2>/dev/null

# Extra modules the host resolved for this run (VM_MODULES), in dependency
# order, uncompressed, already in the control share.
if [ -s $C/modules.list ]; then
	for m in $(cat $C/modules.list); do
		insmod $C/modules/$m || fail "insmod $m (VM_MODULES)"
	done
fi

# Mounts asked for by the host, one per line, parents before children:
#   9p <tag> <ro|rw> <path>     a host dir shared at the same path
#   tmpfs - - <path>            an empty writable dir
#   overlay - - <path>          the host's content, writable, writes discarded
n=0
while read -r kind tag mode path; do
	[ -n "$path" ] || continue
	case $kind in
	9p)
		mkdir -p "$R$path" 2>/dev/null
		if [ $mode = rw ]; then o=cache=mmap; else o=ro,cache=loose; fi
		mount -t 9p -o $P9,$o "$tag" "$R$path" || fail "mount 9p $tag at $path"
		;;
	tmpfs)
		mkdir -p "$R$path" 2>/dev/null
		mount -t tmpfs -o mode=0755 tmpfs "$R$path" || fail "tmpfs at $path"
		;;
	overlay)
		n=$((n + 1))
		mkdir -p $R/run/.ovl/$n/u $R/run/.ovl/$n/w
		mount -t overlay -o lowerdir="$R$path",upperdir=$R/run/.ovl/$n/u,workdir=$R/run/.ovl/$n/w overlay "$R$path" ||
			fail "overlay at $path"
		;;
	esac
done <$C/mounts

ip link set lo up
hostname vm
echo 0 >/proc/sys/kernel/printk_ratelimit 2>/dev/null
ulimit -l unlimited
ulimit -n 65536 2>/dev/null

T1=$(cut -d' ' -f1 /proc/uptime)
echo "vm-init: boot ${T0}s, setup done ${T1}s; running command"
echo "$T1" >$C/t_start

# The command's output: raw bytes on ttyS1 (no \n -> \r\n).
stty -F $R/dev/ttyS1 -opost -echo
chroot $R /usr/bin/env -i /bin/bash /run/vm/cmd.sh </dev/null >$R/dev/ttyS1 2>&1
rc=$?
T2=$(cut -d' ' -f1 /proc/uptime)
echo "$T2" >$C/t_end
echo "$rc" >$C/rc
sync
echo "VM-RC=$rc"
off
