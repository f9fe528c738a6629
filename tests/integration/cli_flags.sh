#!/usr/bin/env bash
# timeout: 120 (three times its longest run on a clean clone, stop 48)
# cli_flags: SPEC §1 - bad flags print one line saying what is wrong and
# exit 2, for every subcommand; nothing goes to stdout and no store is
# created or touched.
. "$(dirname "$0")/lib.bash"
# san: yes
need_bins "$PROFFS"
tmp_dir proffs-flags

# expect_bad WHAT ARGS...: one line on stderr, none on stdout, exit 2.
expect_bad() {
	local what=$1 rc n
	shift
	"$PROFFS" "$@" >"$T/out" 2>"$T/err" </dev/null
	rc=$?
	n=$(grep -c '' "$T/err")
	if [[ $rc == 2 && $n == 1 && ! -s $T/out ]]; then
		ok "$what: exit 2, '$(cat "$T/err")'"
	else
		fail "$what: exit $rc, $n stderr line(s), $(wc -c <"$T/out") stdout bytes: $(head -c 300 "$T/err" | tr '\n' '|')"
	fi
}

expect_bad "no command" 
expect_bad "unknown command" frobnicate
for cmd in run mount import cat check copy; do
	expect_bad "$cmd --no-such-flag" "$cmd" --store "$S" --no-such-flag
	expect_bad "$cmd -Q" "$cmd" --store "$S" -Q
	expect_bad "$cmd --store (no value)" "$cmd" --store
done
expect_bad "version --no-such-flag" version --no-such-flag
expect_bad "version extra" version extra
# Values and arguments each command checks before doing anything.
expect_bad "run --hz x" run --store "$S" --hz x
expect_bad "run --hz (no value)" run --store "$S" --hz
expect_bad "run --retention x" run --store "$S" --retention x
expect_bad "run --max-size 1" run --store "$S" --max-size 1
expect_bad "run --cache-size x" run --store "$S" --cache-size x
expect_bad "run --label x" run --store "$S" --label x
expect_bad "run extra argument" run --store "$S" extra
expect_bad "mount without a mountpoint" mount --store "$S"
expect_bad "mount two mountpoints" mount --store "$S" "$T/a" "$T/b"
expect_bad "mount --cache-size x" mount --store "$S" --cache-size x "$T/a"
expect_bad "import without files" import --store "$S"
expect_bad "import --type (no value)" import --store "$S" --type
expect_bad "import --label x" import --store "$S" --label x f.pb
expect_bad "cat without a path" cat --store "$S"
expect_bad "cat two paths" cat --store "$S" /a /b
expect_bad "check extra argument" check --store "$S" extra
# Flags after operands are flags (GNU getopt order), as in every command.
expect_bad "import FILE --bad-flag" import --store "$S" f.pb --bad-flag
expect_bad "cat PATH --bad-flag" cat --store "$S" /cpu --bad-flag
expect_bad "mount MOUNTPOINT --bad-flag" mount --store "$S" "$T/a" --bad-flag
expect_bad "copy DEST --bad-flag" copy --store "$S" "$T/c" --bad-flag
[[ ! -e $S ]] && ok "no store was created by a refused command" || fail "a refused command created $S"
# --help is not an error: usage on stdout, exit 0.
for cmd in run mount import cat check version; do
	"$PROFFS" "$cmd" --help >"$T/out" 2>"$T/err"
	rc=$?
	[[ $rc == 0 && -s $T/out && ! -s $T/err ]] && ok "$cmd --help: exit 0, usage on stdout" ||
		fail "$cmd --help: exit $rc"
done
# proffs version: what it was built from and the libraries it runs with.
"$PROFFS" version >"$T/version" 2>&1 || fail "proffs version: exit $?"
if git -C "$ROOT" rev-parse 2>/dev/null; then
	want=$(git -C "$ROOT" describe --always --dirty)
	got=$(awk '$1 == "proffs" { print $2 }' "$T/version")
	[[ $got == "$want" ]] && ok "proffs version: $got, the tree it was built from" ||
		fail "proffs version says '$got', the tree is $want (a stale build?)"
fi
for lp in libbpf:libbpf libfuse:fuse3 lmdb:lmdb zstd:libzstd zlib:zlib protobuf-c:libprotobuf-c elfutils:libdw; do
	l=${lp%%:*} pc=${lp##*:}
	got=$(awk -v l="$l" '$1 == l { print $2 }' "$T/version")
	want=$(pkg-config --modversion "$pc" 2>/dev/null)
	[[ -n $got && $want == "$got"* ]] && ok "proffs version: $l $got (installed: $want)" ||
		fail "proffs version: $l '$got', installed $pc is '$want'"
done
# libcurl (and its 28 libraries) is mapped on first use, not at start-up.
if command -v ldd >/dev/null; then
	ldd "$PROFFS" | grep -q libcurl && fail "proffs links libcurl at start-up: $(ldd "$PROFFS" | wc -l) libraries" ||
		ok "proffs starts without libcurl ($(ldd "$PROFFS" | wc -l) libraries)"
fi
finish
