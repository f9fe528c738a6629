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
  libcurl4-openssl-dev
  clang llvm bpftool libclang-rt-14-dev
  golang-go protobuf-compiler
  libxml2-utils
  sshfs openssh-server openssh-client
  nfs-ganesha nfs-ganesha-vfs libnfs-utils rpcbind
  linux-perf procps psmisc util-linux
  libdevel-nytprof-perl
  openjdk-17-jdk-headless
)

missing=()
for p in "${PKGS[@]}"; do
  st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$st" == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
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
