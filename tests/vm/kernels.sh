#!/usr/bin/env bash
# Fetches (once) the Debian 12 kernels the VM tests boot, unpacked (never
# installed) into $PROFFS_VM_CACHE/<package>/, and prints one line per kernel:
#
#   <series> <kernel release> <dir>      e.g. 6.1 6.1.0-57-amd64 /var/cache/proffs-vm/linux-image-6.1.0-57-amd64
#
# Usage: tests/vm/kernels.sh [SERIES...]   (SERIES: 6.1, 6.12; default both)
#
# Idempotent and quick when the cache is present: apt is only asked when a
# kernel's directory has no .done stamp. The versions below are pinned; if the
# archive no longer has a pinned one, the newest available package of that
# series is used instead (and said so on stderr).
#
# Only the generic amd64 flavour works: -cloud-amd64 has no 9p.
set -euo pipefail

PIN_6_1_PKG=linux-image-6.1.0-57-amd64
PIN_6_1_VER=6.1.192-3
PIN_6_12_PKG=linux-image-6.12.118+deb12-amd64
PIN_6_12_VER=6.12.118-1~deb12u1

CACHE=${PROFFS_VM_CACHE:-/var/cache/proffs-vm}

log() { echo "kernels.sh: $*" >&2; }

series_regex() {
  case $1 in
    6.1)  echo '^linux-image-6\.1\.0-[0-9]+-amd64$' ;;
    6.12) echo '^linux-image-6\.12\.[0-9]+\+deb12-amd64$' ;;
    *) log "unknown kernel series '$1' (known: 6.1 6.12)"; return 1 ;;
  esac
}

# Prints the release (lib/modules/<release>) of an unpacked kernel dir.
release_of() {
  local d=$1 r
  for r in "$d"/lib/modules/*/; do
    r=${r%/}; r=${r##*/}
    [[ -f $d/boot/vmlinuz-$r ]] && { echo "$r"; return 0; }
  done
  return 1
}

# Candidate version of a package in apt's lists, empty if none.
candidate() { apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2; exit}' | grep -v '(none)' || true; }

# Whether version $2 of package $1 is in apt's lists.
has_version() { apt-cache madison "$1" 2>/dev/null | awk -v v="$2" '$3 == v {f=1} END {exit !f}'; }

APT_UPDATED=0
apt_lists() {
  # apt-cache needs lists; run apt-get update once if the pinned packages
  # are unknown (fresh machine or stale lists).
  ((APT_UPDATED)) && return 0
  APT_UPDATED=1
  if [[ -z $(candidate "$PIN_6_1_PKG") || -z $(candidate "$PIN_6_12_PKG") ]]; then
    if [[ $(id -u) -eq 0 ]]; then
      log "running apt-get update"
      apt-get update -qq >&2 || log "apt-get update failed"
    fi
  fi
}

# Downloads and unpacks package $1 at version $2 into $CACHE/$1.
fetch() {
  local pkg=$1 ver=$2 dir=$CACHE/$1 tmp
  tmp=$(mktemp -d "$CACHE/.dl.XXXXXX")
  log "downloading $pkg=$ver"
  if ! (cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root "$pkg=$ver" >&2); then
    rm -rf "$tmp"; log "download of $pkg=$ver failed"; return 1
  fi
  mkdir "$tmp/x"
  dpkg-deb -x "$tmp"/*.deb "$tmp/x"
  # Keep only what the runner needs: the kernel image, config and modules.
  rm -rf "$tmp/x/usr" "$tmp/x/etc"
  rm -f "$tmp"/*.deb
  echo "$pkg=$ver" > "$tmp/x/.done"
  rm -rf "$dir"
  mv "$tmp/x" "$dir"
  rm -rf "$tmp"
}

# Ensures one kernel of series $1 is unpacked; prints "<series> <release> <dir>".
ensure() {
  local s=$1 re pin_pkg pin_ver pkg ver d rel pin
  re=$(series_regex "$s")
  case $s in
    6.1)  pin_pkg=$PIN_6_1_PKG;  pin_ver=$PIN_6_1_VER ;;
    6.12) pin_pkg=$PIN_6_12_PKG; pin_ver=$PIN_6_12_VER ;;
  esac
  # Fast path: the pinned kernel is already unpacked.
  if [[ -f $CACHE/$pin_pkg/.done ]] && rel=$(release_of "$CACHE/$pin_pkg"); then
    echo "$s $rel $CACHE/$pin_pkg"; return 0
  fi
  # Fast path 2: the pin was found gone before and a fallback unpacked.
  if [[ -f $CACHE/.fallback-$s ]] && read -r pin d <"$CACHE/.fallback-$s" &&
     [[ $pin == "$pin_pkg=$pin_ver" && -f $CACHE/$d/.done ]] && rel=$(release_of "$CACHE/$d"); then
    log "pinned $pin_pkg=$pin_ver is gone; using $(<"$CACHE/$d/.done")"
    echo "$s $rel $CACHE/$d"; return 0
  fi
  apt_lists
  pkg=$pin_pkg ver=$pin_ver
  if ! has_version "$pkg" "$ver"; then
    ver=$(candidate "$pkg")
    if [[ -z $ver ]]; then
      pkg=$(apt-cache pkgnames linux-image- 2>/dev/null | grep -E "$re" | sort -V | tail -n1 || true)
      [[ -n $pkg ]] && ver=$(candidate "$pkg")
    fi
    if [[ -n $pkg && -n $ver ]]; then
      log "pinned $pin_pkg=$pin_ver is gone from the archive; using $pkg=$ver"
    fi
  fi
  if [[ -n $pkg && -n $ver ]]; then
    if [[ -f $CACHE/$pkg/.done && $(<"$CACHE/$pkg/.done") == "$pkg=$ver" ]] ||
       fetch "$pkg" "$ver"; then
      if rel=$(release_of "$CACHE/$pkg"); then
        [[ $pkg=$ver != "$pin_pkg=$pin_ver" ]] && echo "$pin_pkg=$pin_ver $pkg" >"$CACHE/.fallback-$s"
        echo "$s $rel $CACHE/$pkg"; return 0
      fi
    fi
  fi
  # Offline or nothing downloadable: fall back to any kernel of the series
  # that is already unpacked.
  for d in $(ls -d "$CACHE"/linux-image-* 2>/dev/null | sort -V -r); do
    [[ -f $d/.done ]] && grep -qE "$re" <<<"${d##*/}" || continue
    rel=$(release_of "$d") || continue
    log "using cached ${d##*/} ($(<"$d/.done"))"
    echo "$s $rel $d"; return 0
  done
  log "no kernel of series $s available"
  return 1
}

main() {
  local series=("$@") s rc=0
  ((${#series[@]})) || series=(6.1 6.12)
  mkdir -p "$CACHE"
  # One downloader at a time (held only for a moment when all is cached).
  exec 9>"$CACHE/.lock"
  flock 9
  for s in "${series[@]}"; do ensure "$s" || rc=1; done
  return $rc
}

main "$@"
