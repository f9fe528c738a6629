# lib.bash - shared prologue of the integration scripts that need no mount
# (cat_*.sh, pprof_*.sh, import_roundtrip.sh). Sourced, not run:
#   . "$(dirname "$0")/lib.bash"
# Sets ROOT, PROFFS, TESTS_BIN (env wins) and the check counter FAILS;
# gives ok/fail (the same words as mount_lib.bash and sampler_lib.bash),
# need_tools, need_bins, tmp_dir, go_env, cat_ and the
# `go tool pprof` readers several scripts compare against.
set -u
ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
PROFFS=${PROFFS:-$ROOT/build/proffs}
TESTS_BIN=${TESTS_BIN:-$ROOT/build/tests}
FAILS=0
ok() { printf 'ok: %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*"; FAILS=$((FAILS + 1)); }

# need_tools CMD...: fails the test unless every CMD is on PATH
# (scripts/deps.sh installs them all).
need_tools() {
	local t
	for t; do
		command -v "$t" >/dev/null || { echo "FAIL: $t not installed (scripts/deps.sh installs it)"; exit 1; }
	done
}

# need_bins FILE...: fails the test unless every FILE is executable.
need_bins() {
	local f
	for f; do
		[[ -x $f ]] || { echo "FAIL: $f not built"; exit 1; }
	done
}

# tmp_dir NAME: T is a new /tmp/NAME.XXXXXX removed at exit, S the store
# path inside it (not created).
tmp_dir() {
	T=$(mktemp -d "/tmp/$1.XXXXXX") || { echo "FAIL: mktemp"; exit 1; }
	trap 'rm -rf "$T"' EXIT
	S=$T/store
}

# go_env [VAR=VALUE...]: Go's caches (for go tool pprof) inside $T, offline.
go_env() { export GOCACHE=$T/gocache GOPATH=$T/gopath GOTOOLCHAIN=local "$@"; }

# build_profgen_or_fail: builds tests/go into $T (sets PROFGEN) and sets
# go_env, or fails the test.
build_profgen_or_fail() {
	. "$ROOT/tests/go/build.sh"
	build_profgen "$T" || { echo "FAIL: go build of tests/go"; exit 1; }
	go_env
}

# pb_decode: protoc's text form of the perftools Profile on stdin.
pb_decode() { protoc --decode perftools.profiles.Profile --proto_path="$ROOT/store/profile" profile.proto; }

# finish: says whether every check passed and exits with the verdict.
finish() {
	((FAILS == 0)) && echo "all passed" || echo "$FAILS checks FAILED"
	((FAILS == 0))
	exit
}

# cat_ ARGS...: `proffs cat` of the test's store $S.
cat_() { "$PROFFS" cat --store "$S" "$@"; }

# raw_totals FILE: sums each value column of `go tool pprof -raw` samples:
# "v1 v2 ...".
raw_totals() {
	go tool pprof -raw "$1" 2>/dev/null | awk '
		/^Samples:/ { s = 1; getline; next }
		/^Locations/ { s = 0 }
		s && /^ *-?[0-9]+( +-?[0-9]+)*:/ {
			sub(/:.*/, ""); n = split($0, f, " ")
			for (i = 1; i <= n; i++) t[i] += f[i]; nt = n
		}
		END { for (i = 1; i <= nt; i++) printf "%s%.0f", (i > 1 ? " " : ""), t[i]; print "" }'
}

# top_rows [UNIT [INLINE]]: a pprof -top text (stdin, ours or pprof's) as
# sorted "name<TAB>flat<TAB>cum" rows; UNIT is cut off the numbers, and
# INLINE=1 drops pprof's " (inline)" mark off names.
top_rows() {
	awk -v u="${1:-}" -v inl="${2:-0}" '
		f {
			flat = $1; cum = $4
			if (u != "") { sub(u "$", "", flat); sub(u "$", "", cum) }
			name = $0; sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+  /, "", name)
			if (inl) sub(/ \(inline\)$/, "", name)
			printf "%s\t%s\t%s\n", name, flat, cum
		}
		/^ +flat +flat%/ { f = 1 }' | sort
}

# go_top FILE UNIT [SAMPLE_INDEX]: `go tool pprof -top` rows of FILE as
# "name<TAB>flat<TAB>cum" in raw UNITs, inlined functions unmarked.
go_top() {
	go tool pprof -top -nodefraction=0 -edgefraction=0 -nodecount=1000000 -unit="$2" \
		${3+-sample_index="$3"} "$1" 2>/dev/null | top_rows "$2" 1
}

# pprof_top FILE [ARGS...]: `go tool pprof -top` exactly as a user runs it
# (default flags), times in UTC: what top.txt must equal byte for byte.
pprof_top() { local f=$1; shift; TZ=UTC go tool pprof -top "$@" "$f" 2>/dev/null; }

# same_top WHAT PPROF_INPUT OUR_TOP: top.txt == pprof -top, or a diff.
same_top() {
	if [[ -s $3 ]] && cmp -s <(pprof_top "$2") "$3"; then
		ok "$1: top.txt equals go tool pprof -top, header and $(($(wc -l <"$3"))) lines"
	else
		fail "$1: top.txt differs from go tool pprof -top"
		diff <(pprof_top "$2") "$3" | head -20
	fi
}

# our_top FILE: our top.txt in go_top's shape.
our_top() { top_rows <"$1"; }
