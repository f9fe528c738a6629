#!/usr/bin/env bash
# timeout: 120 (three times its longest run on a clean clone, stop 48)
# pprof_import_bad.sh - `proffs import` refuses every crafted malformed
# file (tests/unit/pprof_bad.h) with "FILE: reason" and a non-zero exit,
# stores nothing of the run (the store files stay byte-identical, even when
# a good file is in the same command), and the flags behave: --help exits
# 0, a bad flag prints one line and exits 2.
# san: yes
. "$(dirname "$0")/lib.bash"

need_bins "$PROFFS" "$TESTS_BIN/pprofbad"
tmp_dir pprof_import_bad
mkdir -p "$T/bad"
"$TESTS_BIN/pprofbad" "$T/bad" >"$T/bad.list" || { echo "FAIL: pprofbad"; exit 1; }

# Flags.
out=$("$PROFFS" import --help 2>&1); rc=$?
[[ $rc == 0 && $out == *"usage: proffs import"* ]] && ok "--help exits 0 with usage" || fail "--help: rc $rc"
out=$("$PROFFS" import --bogus 2>&1); rc=$?
[[ $rc == 2 && $(echo "$out" | wc -l) == 1 ]] && ok "bad flag: one line, exit 2 ($out)" || fail "bad flag: rc $rc '$out'"
out=$("$PROFFS" import "$T/bad/good.pb" 2>&1); rc=$?
[[ $rc == 2 && $out == *"--store"* ]] && ok "missing --store: exit 2 ($out)" || fail "missing --store: rc $rc '$out'"
out=$("$PROFFS" import --store "$S" 2>&1); rc=$?
[[ $rc == 2 ]] && ok "no files: exit 2 ($out)" || fail "no files: rc $rc"
out=$("$PROFFS" import --store "$S" --type 'a/b' "$T/bad/good.pb" 2>&1); rc=$?
[[ $rc == 2 && ! -e $S ]] && ok "fail --type refused before touching the store ($out)" || fail "fail --type: rc $rc"
out=$("$PROFFS" import --store "$S" --label novalue "$T/bad/good.pb" 2>&1); rc=$?
[[ $rc == 2 ]] && ok "fail --label refused ($out)" || fail "fail --label: rc $rc"

# A store with one good import.
out=$("$PROFFS" import --store "$S" "$T/bad/good.pb" 2>&1); rc=$?
[[ $rc == 0 && $out == *"cpu"* ]] && ok "good file imported as cpu ($out)" || { fail "good import: rc $rc '$out'"; exit 1; }
snap() { (cd "$S" && find . -type f | sort | xargs sha256sum); }
before=$(snap)

n=0
while IFS=$'\t' read -r name expect; do
	n=$((n + 1))
	f=$T/bad/$name.pb
	out=$("$PROFFS" import --store "$S" "$T/bad/good.pb" "$f" 2>&1); rc=$?
	line=$(echo "$out" | grep -F "$f: " | head -1)
	if [[ $rc != 0 && $line == "$f: "*"$expect"* && $(echo "$line" | wc -l) == 1 ]]; then
		ok "$name: exit $rc, '${line#"$T"/bad/}'"
	else
		fail "$name: rc $rc, output '$out' (want '$f: ...$expect...')"
	fi
	[[ $(snap) == "$before" ]] || fail "$name: the store changed although the import was refused"
done <"$T/bad.list"
((n >= 20)) && ok "$n crafted fail files, store byte-identical after each" || fail "only $n fail files"

# A file that does not exist is named too.
out=$("$PROFFS" import --store "$S" "$T/nope.pb" 2>&1); rc=$?
[[ $rc != 0 && $out == *"$T/nope.pb: "* ]] && ok "missing file named: ${out%%$'\n'*}" || fail "missing file: rc $rc '$out'"
[[ $(snap) == "$before" ]] || fail "store changed after a missing file"

out=$("$PROFFS" check --store "$S" 2>&1); rc=$?
[[ $rc == 0 ]] && ok "proffs check passes afterwards" || fail "proffs check: rc $rc: $out"

finish
