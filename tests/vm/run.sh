#!/usr/bin/env bash
# Boots one of Debian 12's own kernels under qemu (TCG) with this machine's
# root filesystem shared read-only over 9p, runs one command in it as root,
# and exits with the command's exit status.
#
# Usage: tests/vm/run.sh KERNEL -- COMMAND [ARG...]
#   KERNEL: 6.1 or 6.12 (a prefix of the release is enough: 6.1.0, 6.12.118)
#   e.g.    tests/vm/run.sh 6.1 -- uname -r
#
# In the guest: cwd is the host's cwd; PATH is the host's; VM_ENV_FOO=bar on
# the host becomes FOO=bar; HOME=/root; VM=1. Writable: /tmp, /var/tmp, /run
# (empty tmpfs each), VM_SHARE (a host dir shared read-write at the same
# path: the place to leave results for the host), plus what the variables
# below ask for. Mounted: proc, sysfs, devtmpfs, devpts, debugfs, tracefs,
# bpffs (/sys/fs/bpf), cgroup2 (/sys/fs/cgroup). Loaded: 9p, virtio, fuse
# (/dev/fuse), overlay. Loopback is up; there is no other network.
# `ulimit -l unlimited`.
#
# Environment:
#   VM_TIMEOUT  seconds, default 300; on expiry qemu is killed and the exit
#               status is 124
#   VM_SHARE    host dir shared read-write (default: a fresh mktemp -d under
#               /tmp, removed afterwards unless VM_KEEP=1); exported into the
#               guest as VM_SHARE
#   VM_RW       more host dirs shared read-write, space-separated
#   VM_TMPFS    guest dirs to cover with an empty tmpfs, space-separated
#   VM_OVERLAY  guest dirs made writable over the host's content, writes
#               discarded at the end (overlayfs on tmpfs), space-separated
#   VM_MODULES  more kernel modules to insmod (names; deps are resolved)
#   VM_MEM      guest memory, default 2G;  VM_SMP  vCPUs, default 2
#   VM_APPEND   extra kernel command line
#   VM_VERBOSE  1: copy the guest console (kernel log) to stderr afterwards
#   VM_KEEP     1: keep the run dir (console.log, out.log, control files)
#
# Exit status: the command's; 124 on timeout; 125 if the guest never
# reported one (boot failure: the console log is printed to stderr).
# Files: kernels and per-kernel initramfs are cached in /var/cache/proffs-vm
# (tests/vm/kernels.sh).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)

die() { echo "vm/run.sh: $*" >&2; exit 125; }
usage() { echo "usage: $0 6.1|6.12 -- COMMAND [ARG...]" >&2; exit 125; }

(($# >= 1)) || usage
KWANT=$1; shift
[[ ${1:-} == -- ]] && shift
(($# >= 1)) || usage

case $KWANT in
  6.12*) SERIES=6.12 ;;
  6.1|6.1.*) SERIES=6.1 ;;
  *) die "unknown kernel '$KWANT' (6.1 or 6.12)" ;;
esac

for t in qemu-system-x86_64 busybox cpio; do
  command -v $t >/dev/null || die "$t missing (scripts/deps.sh installs qemu-system-x86 busybox-static cpio)"
done
BUSYBOX=$(command -v busybox)
readelf -l "$BUSYBOX" 2>/dev/null | grep -q 'Requesting program interpreter' &&
  die "$BUSYBOX is dynamically linked: install busybox-static"

read -r _ KREL KDIR < <("$HERE/kernels.sh" "$SERIES") || die "no $SERIES kernel"
[[ $KREL == "$KWANT"* ]] || die "kernel $KREL does not match '$KWANT'"
MODDIR=$KDIR/lib/modules/$KREL
VMLINUZ=$KDIR/boot/vmlinuz-$KREL

# ---- the kernel: an uncompressed ELF vmlinux if we can get one ----
# TCG is slow at the bzImage's own decompression (xz/zstd: 3-5 s); qemu boots
# an ELF vmlinux straight through its PVH entry (CONFIG_PVH=y in Debian), so
# unpack it once from the bzImage into the cache. Falls back to vmlinuz.
VMLINUX=$KDIR/boot/vmlinux-$KREL
extract_vmlinux() {
  local magic dec off tmp
  tmp=$(mktemp "$KDIR/boot/.vmlinux.XXXXXX")
  for magic in '\xfd7zXZ\x00:xz' '\x28\xb5\x2f\xfd:zstd' '\x1f\x8b\x08:gzip'; do
    dec=${magic##*:}; magic=${magic%:*}
    case $dec in
      xz) if command -v xz >/dev/null; then dec="xz -dcq --single-stream"; else dec="busybox xz -dc"; fi ;;
      zstd) command -v zstd >/dev/null || continue; dec="zstd -dcq" ;;
      gzip) dec="gzip -dcq" ;;
    esac
    for off in $(LC_ALL=C grep -obUaP "$magic" "$VMLINUZ" 2>/dev/null | cut -d: -f1 | head -n 3); do
      tail -c +$((off + 1)) "$VMLINUZ" | $dec >"$tmp" 2>/dev/null || true
      if [[ $(head -c 4 "$tmp" | od -An -tx1 | tr -d ' ') == 7f454c46 ]] &&
         readelf -n "$tmp" 2>/dev/null | grep -q 'Xen.*0x00000012\|Unknown note type: (0x00000012)'; then
        chmod 0644 "$tmp"; mv -f "$tmp" "$VMLINUX"; return 0
      fi
    done
  done
  rm -f "$tmp"
  return 1
}
KERNEL=$VMLINUZ
if [[ -s $VMLINUX ]] || extract_vmlinux; then
  KERNEL=$VMLINUX
else
  echo "vm/run.sh: could not unpack vmlinux from $VMLINUZ; booting the bzImage (slower)" >&2
fi

# ---- modules: name -> file, dependencies from each module's .modinfo ----

declare -A MODFILE=() BUILTIN=() SEEN=()
ORDER=()
index_modules() {
  local f n
  while IFS= read -r f; do
    n=${f##*/}; n=${n%%.ko*}; n=${n//-/_}
    MODFILE[$n]=$f
  done < <(find "$MODDIR/kernel" -name '*.ko*')
  if [[ -f $MODDIR/modules.builtin ]]; then
    while IFS= read -r f; do
      n=${f##*/}; n=${n%%.ko*}; n=${n//-/_}
      BUILTIN[$n]=1
    done <"$MODDIR/modules.builtin"
  fi
}
# Writes module $1 uncompressed to $2.
unpack_module() {
  case $1 in
    *.ko.xz)  xz -dc "$1" >"$2" ;;
    *.ko.zst) zstd -qdc "$1" >"$2" ;;
    *.ko.gz)  gzip -dc "$1" >"$2" ;;
    *)        cp "$1" "$2" ;;
  esac
}
# Depth-first: dependencies first. Unpacks into $OUTDIR, appends to ORDER.
add_module() {
  local n=${1//-/_} f tmp dep deps
  [[ -n ${SEEN[$n]:-} || -n ${BUILTIN[$n]:-} ]] && return 0
  SEEN[$n]=1
  f=${MODFILE[$n]:-}
  [[ -n $f ]] || die "module $n not found in $MODDIR"
  tmp=$OUTDIR/$n.ko
  unpack_module "$f" "$tmp"
  deps=$(tr '\0' '\n' <"$tmp" | sed -n 's/^depends=//p' | head -n1)
  for dep in ${deps//,/ }; do add_module "$dep"; done
  ORDER+=("$n.ko")
}

# ---- the initramfs, cached per kernel and content ----

BASE_MODULES=(virtio_pci 9pnet_virtio 9p fuse overlay)
KEY=$( { cat "$HERE/init.sh"; echo "${BASE_MODULES[*]}"; sha256sum "$BUSYBOX"; cat "$KDIR/.done"; } |
       sha256sum | cut -c1-16)
INITRD=$KDIR/initramfs-$KEY.cpio.gz
if [[ ! -s $INITRD ]]; then
  build=$(mktemp -d "$KDIR/.initramfs.XXXXXX")
  trap 'rm -rf "$build"' EXIT
  mkdir -p "$build/root/bin" "$build/root/lib/modules" "$build/root/dev"
  cp "$BUSYBOX" "$build/root/bin/busybox"
  install -m 0755 "$HERE/init.sh" "$build/root/init"
  mknod -m 600 "$build/root/dev/console" c 5 1 2>/dev/null || true
  index_modules
  OUTDIR=$build/root/lib/modules
  for m in "${BASE_MODULES[@]}"; do add_module "$m"; done
  printf '%s\n' "${ORDER[@]}" >"$build/root/modules.list"
  (cd "$build/root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 | gzip -1) >"$build/img"
  mv -f "$build/img" "$INITRD"
  rm -rf "$build"; trap - EXIT
  # Drop initramfs images of older keys.
  find "$KDIR" -maxdepth 1 -name 'initramfs-*.cpio.gz' ! -name "${INITRD##*/}" -delete
  echo "vm/run.sh: built ${INITRD} (${ORDER[*]})" >&2
fi

# ---- this run: control share, mounts, environment, command ----

RUN=$(mktemp -d /tmp/proffs-vm-run.XXXXXX)
CTL=$RUN/ctl
mkdir -p "$CTL/modules"
OWN_SHARE=0
if [[ -z ${VM_SHARE:-} ]]; then
  VM_SHARE=$(mktemp -d /tmp/proffs-vm-share.XXXXXX)
  OWN_SHARE=1
fi
mkdir -p "$VM_SHARE"
VM_SHARE=$(cd "$VM_SHARE" && pwd -P)

QPID=
# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
  local p
  # qemu runs under timeout(1): kill both, qemu by the pid it wrote.
  if [[ -s $RUN/qemu.pid ]]; then
    p=$(<"$RUN/qemu.pid")
    kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null
  fi
  if [[ -n $QPID ]] && kill -0 "$QPID" 2>/dev/null; then kill -KILL "$QPID" 2>/dev/null || true; fi
  [[ -n ${TAILPID:-} ]] && { kill "$TAILPID" 2>/dev/null || true; wait "$TAILPID" 2>/dev/null || true; }
  if [[ ${VM_KEEP:-0} == 1 ]]; then
    echo "vm/run.sh: kept $RUN and $VM_SHARE" >&2
  else
    rm -rf "$RUN"
    if ((OWN_SHARE)); then rm -rf "$VM_SHARE"; fi
  fi
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ -n ${VM_MODULES:-} ]]; then
  index_modules
  # Don't load twice what the initramfs already has.
  for m in "${BASE_MODULES[@]}"; do SEEN[$m]=1; done
  for m in virtio virtio_ring virtio_pci_modern_dev virtio_pci_legacy_dev 9pnet netfs fscache; do SEEN[$m]=1; done
  OUTDIR=$CTL/modules
  for m in $VM_MODULES; do add_module "$m"; done
  printf '%s\n' "${ORDER[@]}" >"$CTL/modules.list"
fi

# Guest mounts: 9p shares get tags s0, s1, ...
QSHARES=()
MOUNTS=()
nshare=0
under() { [[ $1 == "$2" || $1 == "$2"/* ]]; }   # is $1 at or under $2
share() { # path ro|rw
  local tag=s$nshare ro=
  nshare=$((nshare + 1))
  [[ $2 == ro ]] && ro=,readonly=on
  QSHARES+=(-fsdev "local,id=$tag,path=$1,security_model=none,multidevs=remap$ro"
            -device "virtio-9p-pci,fsdev=$tag,mount_tag=$tag")
  MOUNTS+=("9p $tag $2 $1")
}
RWDIRS=("$VM_SHARE")
for d in ${VM_RW:-}; do mkdir -p "$d"; RWDIRS+=("$(cd "$d" && pwd -P)"); done
for d in "${RWDIRS[@]}"; do share "$d" rw; done
# The guest covers /tmp, /var/tmp and /run with tmpfs: a cwd or repo below
# them would vanish, so share those read-only (unless already shared).
CWD=$(pwd -P)
for d in "$CWD" "$REPO"; do
  under "$d" /tmp || under "$d" /var/tmp || under "$d" /run || continue
  covered=0
  for s in "${RWDIRS[@]}"; do under "$d" "$s" && covered=1; done
  ((covered)) || { share "$d" ro; RWDIRS+=("$d"); }
done
for d in ${VM_TMPFS:-}; do MOUNTS+=("tmpfs - - $d"); done
for d in ${VM_OVERLAY:-}; do MOUNTS+=("overlay - - $d"); done
for m in "${MOUNTS[@]}"; do
  [[ $m == *[[:space:]]*[[:space:]]*[[:space:]]*[[:space:]]* ]] && die "paths with spaces can't be shared: $m"
done
# Parents before children.
printf '%s\n' "${MOUNTS[@]}" | sort -t' ' -k4,4 >"$CTL/mounts"

{
  echo "# generated by tests/vm/run.sh: the command's environment"
  printf 'export PATH=%q\n' "$PATH"
  echo "export HOME=/root USER=root LOGNAME=root SHELL=/bin/bash VM=1"
  printf 'export VM_SHARE=%q VM_KERNEL=%q\n' "$VM_SHARE" "$KREL"
  while IFS='=' read -r -d '' k v; do
    [[ $k == VM_ENV_?* && ${k#VM_ENV_} =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
    printf 'export %s=%q\n' "${k#VM_ENV_}" "$v"
  done < <(env -0)
} >"$CTL/env.sh"
{
  echo "# generated by tests/vm/run.sh: the command"
  echo ". /run/vm/env.sh"
  printf 'cd -- %q 2>/dev/null || { echo "vm: %q is not in the guest; cwd is /" >&2; cd /; }\n' "$CWD" "$CWD"
  printf 'exec'; printf ' %q' "$@"; printf '\n'
} >"$CTL/cmd.sh"

# ---- boot ----

APPEND="console=ttyS0 quiet loglevel=4 panic=-1 oops=panic mitigations=off rdinit=/init ${VM_APPEND:-}"
: >"$RUN/console.log"
: >"$RUN/out.log"
TIMEOUT=${VM_TIMEOUT:-300}
T0=$(date +%s.%N)
timeout -k 5 "$TIMEOUT" qemu-system-x86_64 \
  -machine q35 -accel tcg,thread=multi -smp "${VM_SMP:-2}" -m "${VM_MEM:-2G}" \
  -nodefaults -no-user-config -display none -no-reboot \
  -pidfile "$RUN/qemu.pid" \
  -kernel "$KERNEL" -initrd "$INITRD" -append "$APPEND" \
  -serial "file:$RUN/console.log" -serial "file:$RUN/out.log" \
  -fsdev "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap" \
  -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
  -fsdev "local,id=vmctl,path=$CTL,security_model=none,multidevs=remap" \
  -device virtio-9p-pci,fsdev=vmctl,mount_tag=vmctl \
  "${QSHARES[@]}" \
  </dev/null >"$RUN/qemu.log" 2>&1 &
QPID=$!
# The command's output, as it comes.
tail -c +1 -s 0.2 -F --pid="$QPID" "$RUN/out.log" 2>/dev/null &
TAILPID=$!
set +e
wait "$QPID"
qrc=$?
set -e
QPID=
wait "$TAILPID" 2>/dev/null || true
TAILPID=
T1=$(date +%s.%N)

if [[ -s $CTL/rc ]]; then
  rc=$(<"$CTL/rc")
elif grep -qa '^VM-RC=' "$RUN/console.log"; then
  rc=$(grep -a '^VM-RC=' "$RUN/console.log" | tail -n1 | tr -dc 0-9)
elif ((qrc == 124 || qrc == 137)); then
  echo "vm/run.sh: timed out after ${TIMEOUT}s (VM_TIMEOUT); guest console follows" >&2
  tail -n 40 "$RUN/console.log" | tr -d '\r' >&2
  rc=124
else
  echo "vm/run.sh: the guest reported no exit status (qemu exit $qrc); console follows" >&2
  tail -n 60 "$RUN/console.log" | tr -d '\r' >&2
  [[ -s $RUN/qemu.log ]] && { echo "--- qemu:" >&2; cat "$RUN/qemu.log" >&2; }
  [[ -s $CTL/init-error ]] && cat "$CTL/init-error" >&2
  rc=125
fi
if [[ ${VM_VERBOSE:-0} == 1 ]]; then
  echo "--- guest console:" >&2
  tr -d '\r' <"$RUN/console.log" >&2
fi
if [[ -s $CTL/t_start ]]; then
  printf 'vm/run.sh: %s: boot-to-command %ss (guest), command %ss, total %.1fs (host)\n' \
    "$KREL" "$(<"$CTL/t_start")" \
    "$(awk -v a="$(<"$CTL/t_start")" -v b="$(cat "$CTL/t_end" 2>/dev/null)" 'BEGIN{if (b == "") print "-"; else printf "%.2f", b-a}')" \
    "$(awk -v a="$T0" -v b="$T1" 'BEGIN{print b-a}')" >&2
fi
exit "$rc"
