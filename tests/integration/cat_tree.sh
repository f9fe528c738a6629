#!/usr/bin/env bash
# timeout: 120 (three times its longest run on a clean clone, stop 48)
# cat_tree.sh - `proffs cat` over a known store: listings exactly as SPEC
# section 2 describes them (types, label pairs, minutes, latest, merged
# suggestions, diff's vs), percent-encoding, symlinks followed inside a
# path, ENOENT for every kind of bad path, usage errors, identical bytes on
# a second read, README and metrics.
# san: yes
. "$(dirname "$0")/lib.bash"
# expect DESCRIPTION EXPECTED ACTUAL
expect() {
	if [[ "$2" == "$3" ]]; then ok "$1"; else
		fail "$1"; echo "  want: $(printf '%s' "$2" | tr '\n' '|')"; echo "  got:  $(printf '%s' "$3" | tr '\n' '|')"
	fi
}

need_bins "$TESTS_BIN/mkprof"
tmp_dir cat_tree

# Dataset: 2023-10-11T11:11 api:1 + db:2, 11:12 api:1, 12:11 "we b/x":3.
T0=1697022660
"$TESTS_BIN/mkprof" --time $T0 --seed 1 --series api:1 --series db:2 "$T/p1.pb" &&
"$TESTS_BIN/mkprof" --time $((T0 + 60)) --seed 2 --series api:1 "$T/p2.pb" &&
"$TESTS_BIN/mkprof" --time $((T0 + 3600)) --seed 3 --series 'we b/x:3' "$T/p3.pb" ||
	{ echo "FAIL: mkprof"; exit 1; }
"$PROFFS" import --store "$S" "$T/p1.pb" "$T/p2.pb" "$T/p3.pb" >/dev/null || { echo "FAIL: import"; exit 1; }

# Listings.
expect "root lists README, metrics, merged, diff, binaries, the types" \
	"$(printf 'README\nmetrics\nmerged\ndiff\nbinaries\ncpu')" "$(cat_ /)"
expect "a type lists pairs (encoded), minutes and latest" \
	"$(printf 'comm=api\ncomm=db\ncomm=we b%%2Fx\npid=1\npid=2\npid=3\n2023-10-11T11:11\n2023-10-11T11:12\n2023-10-11T12:11\nlatest')" \
	"$(cat_ /cpu)"
expect "a selection lists only what still matches" \
	"$(printf 'pid=1\n2023-10-11T11:11\n2023-10-11T11:12\nlatest')" "$(cat_ /cpu/comm=api)"
expect "narrowings AND together, in any order" "$(cat_ /cpu/comm=api/pid=1)" "$(cat_ /cpu/pid=1/comm=api)"
expect "a %2F value selects its series" \
	"$(printf 'pid=3\n2023-10-11T12:11\nlatest')" "$(cat_ '/cpu/comm=we b%2Fx')"
expect "lower-case escapes decode too" "$(cat_ '/cpu/comm=we b%2Fx')" "$(cat_ '/cpu/comm=we%20b%2fx')"
expect "!= excludes" "$(printf 'comm=db\ncomm=we b%%2Fx\npid=2\npid=3\n2023-10-11T11:11\n2023-10-11T12:11\nlatest')" \
	"$(cat_ '/cpu/comm!=api')"
expect "=~ is an anchored ERE" "$(printf 'comm=api\ncomm=db\npid=1\npid=2\n2023-10-11T11:11\n2023-10-11T11:12\nlatest')" \
	"$(cat_ '/cpu/comm=~(api|db)')"
expect "=~ must match the whole value" "" "$(cat_ '/cpu/comm=~ap')"
expect "no match: an empty directory" "" "$(cat_ /cpu/comm=nobody)"
expect "a minute lists the four files" "$(printf 'profile.pb\nfolded.txt\nflamegraph.svg\ntop.txt')" \
	"$(cat_ /cpu/2023-10-11T11:11)"
expect "latest is the newest complete minute" "2023-10-11T12:11" "$(cat_ /cpu/latest)"
expect "latest per selection" "2023-10-11T11:12" "$(cat_ /cpu/comm=api/latest)"
expect "a path through latest is followed" "$(cat_ /cpu/comm=api/2023-10-11T11:12/folded.txt)" \
	"$(cat_ /cpu/comm=api/latest/folded.txt)"
expect "merged/ lists types" "cpu" "$(cat_ /merged)"
expect "merged/<type> lists pairs, last-N, days and hours with data" \
	"$(printf 'pid=1\nlast-15m\nlast-1h\nlast-6h\nlast-24h\nlast-7d\n2023-10-11\n2023-10-11T11')" \
	"$(cat_ /merged/cpu/comm=api)"
expect "diff range A lists vs" "vs" "$(cat_ /diff/cpu/comm=api/2023-10-11T11)"
expect "a range dir lists the four files" "$(printf 'profile.pb\nfolded.txt\nflamegraph.svg\ntop.txt')" \
	"$(cat_ /diff/cpu/comm=api/2023-10-11T11/vs/comm=db/2023-10-11T11)"
expect "trailing slash and no leading slash are accepted" "$(cat_ /cpu/comm=api)" "$(cat_ cpu/comm=api/)"

# ENOENT: exit 1 and a message naming the path.
for p in /heap /cpu/2023-02-30T00:00 /cpu/2023-13-01T00:00 /cpu/2023-10-11T24:00 \
	/cpu/2023-10-11T11:11/nope.txt '/cpu/comm=%zz' '/cpu/comm=%' '/cpu/comm=~(a+)+' '/cpu/comm=~(' \
	/cpu/../cpu /cpu//comm=api /merged/cpu/2023-10-11T12:00..2023-10-11T11:00 \
	/merged/cpu/2023-10-11T11:00..2023-10-11T11:00 /merged/cpu/last-0m /diff/cpu/last-1h/profile.pb \
	/cpu/comm=nobody/latest /cpu/2023-10-11T11 /merged/cpu/2023-10-11T11:11/top.txt/x /nope; do
	out=$(cat_ "$p" 2>&1 >/dev/null); rc=$?
	if ((rc == 1)) && [[ $out == *"No such file"* && $out == *"$p"* ]]; then ok "ENOENT: $p"
	else fail "ENOENT: $p (rc $rc: $out)"; fi
done

# Usage errors: one line, exit 2; --help exit 0.
out=$("$PROFFS" cat --bogus 2>&1); rc=$?
((rc == 2)) && [[ $(printf '%s\n' "$out" | wc -l) == 1 ]] && ok "bad flag: one line, exit 2" || fail "bad flag (rc $rc: $out)"
"$PROFFS" cat / >/dev/null 2>&1; rc=$?; ((rc == 2)) && ok "missing --store: exit 2" || fail "missing --store: rc $rc"
"$PROFFS" cat --store "$S" >/dev/null 2>&1; rc=$?; ((rc == 2)) && ok "missing PATH: exit 2" || fail "missing PATH: rc $rc"
"$PROFFS" cat --store "$S" / /cpu >/dev/null 2>&1; rc=$?; ((rc == 2)) && ok "two PATHs: exit 2" || fail "two PATHs: rc $rc"
out=$("$PROFFS" cat --help); rc=$?
((rc == 0)) && [[ $out == *"usage: proffs cat"* ]] && ok "--help" || fail "--help (rc $rc)"
"$PROFFS" cat --store "$T/none" / >/dev/null 2>&1; rc=$?; ((rc == 1)) && ok "no store: exit 1" || fail "no store: rc $rc"

# Files: same bytes twice, sizes non-zero where data exists, empty valid
# files where none does.
for f in profile.pb folded.txt flamegraph.svg top.txt; do
	for d in /cpu/2023-10-11T11:11 /merged/cpu/comm=api/2023-10-11 /diff/cpu/2023-10-11T11:11/vs/2023-10-11T11:12; do
		cat_ "$d/$f" >"$T/a" && cat_ "$d/$f" >"$T/b" || { fail "read $d/$f"; continue; }
		if [[ -s $T/a ]] && cmp -s "$T/a" "$T/b"; then ok "$d/$f: same bytes twice"; else fail "$d/$f: differs or empty"; fi
	done
done
cat_ /merged/cpu/2020-01-01/folded.txt >"$T/e"; rc=$?
((rc == 0)) && [[ ! -s $T/e ]] && ok "no data: empty folded.txt" || fail "no data folded (rc $rc)"
cat_ /merged/cpu/2020-01-01/profile.pb >"$T/e"; rc=$?
((rc == 0)) && [[ -s $T/e ]] && ok "no data: a (non-empty) profile.pb" || fail "no data profile.pb (rc $rc)"
expect "folded.txt lines: stack count" "" "$(cat_ /cpu/2023-10-11T11:11/folded.txt | grep -Ev '^(.*) ([0-9]+)$')"
expect "diff folded.txt lines: stack countA countB" "" \
	"$(cat_ /diff/cpu/comm=api/2023-10-11T11:11/vs/2023-10-11T11:12/folded.txt | grep -Ev '^(.*) ([0-9]+) ([0-9]+)$')"
n=$(cat_ /diff/cpu/comm=api/2023-10-11T11:11/vs/2023-10-11T11:12/folded.txt | wc -l)
((n > 0)) && ok "diff folded has $n lines" || fail "diff folded is empty"

# README and metrics.
out=$(cat_ /README)
[[ $out == *"last-15m"* && $out == *"vs"* && $out == *"%2F"* ]] && ok "README documents the grammar" || fail "README"
out=$(cat_ /metrics)
[[ $out == *"proffs_store_series 3"* && $out == *"# TYPE proffs_renders_total counter"* ]] && ok "metrics" || fail "metrics: $out"

finish
