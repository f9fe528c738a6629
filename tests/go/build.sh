# build.sh - sourced by integration tests: builds tests/go (profgen) with
# Debian's golang-go into $1, offline, with every Go cache inside $1 so a
# test leaves nothing behind. Sets PROFGEN. Returns non-zero on failure.
build_profgen() {
	local dir=$1 root=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}

	command -v go >/dev/null || return 77
	(cd "$root/tests/go" &&
		GOFLAGS=-mod=mod GOCACHE="$dir/gocache" GOPATH="$dir/gopath" GOPROXY=off \
		GOTOOLCHAIN=local GOTELEMETRY=off go build -o "$dir/profgen" .) || return 1
	PROFGEN=$dir/profgen
}
