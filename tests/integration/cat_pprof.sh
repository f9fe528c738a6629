#!/usr/bin/env bash
# timeout: 120 (three times its longest run on a clean clone, stop 48)
# cat_pprof.sh - what `proffs cat` serves, judged by the real tools:
#   - minute, merged and diff profile.pb pass protoc --decode and
#     go tool pprof -top; time_nanos/duration_nanos are the window's, the
#     sample labels comm and pid are there;
#   - merged/<hour>/profile.pb gives, per function, the same flat and cum
#     as `go tool pprof -proto` merging the imported files (both sample
#     types), and a label selection the same as pprof's -tagfocus;
#   - diff/.../profile.pb read by `go tool pprof -top` equals
#     `go tool pprof -top -diff_base A B` of the two sides served as
#     minute files, for a time diff and for a label-replacing diff;
#   - top.txt equals pprof -top of the same profile.pb; flamegraph.svg is
#     well-formed XML naming the heaviest function.
. "$(dirname "$0")/lib.bash"

need_tools go protoc xmllint
need_bins "$TESTS_BIN/mkprof"
tmp_dir cat_pprof
go_env GOPROXY=off HOME="$T"

T0=1697022660 # 2023-10-11T11:11
"$TESTS_BIN/mkprof" --time $T0 --seed 1 --samples 60 --series api:1 --series db:2 "$T/p1.pb" &&
"$TESTS_BIN/mkprof" --time $((T0 + 60)) --seed 2 --samples 60 --series api:1 --series db:2 "$T/p2.pb" &&
"$TESTS_BIN/mkprof" --time $((T0 + 120)) --seed 3 --samples 60 --series api:1 "$T/p3.pb" ||
	{ echo "FAIL: mkprof"; exit 1; }
"$PROFFS" import --store "$S" "$T/p1.pb" "$T/p2.pb" "$T/p3.pb" >/dev/null || { echo "FAIL: import"; exit 1; }

# `go tool pprof -top` rows "name<TAB>flat<TAB>cum", raw units, sorted.
# Extra pprof flags follow the file.
pp_top() {
	local f=$1 si=$2; shift 2
	go tool pprof -top -nodefraction=0 -edgefraction=0 -nodecount=1000000 -sample_index="$si" -unit=ns "$@" "$f" 2>/dev/null |
		top_rows ns
}
# pp_top for the samples/count index (pprof prints bare numbers).
pp_top_n() {
	local f=$1; shift
	go tool pprof -top -nodefraction=0 -edgefraction=0 -nodecount=1000000 -sample_index=samples "$@" "$f" 2>/dev/null |
		top_rows
}
# Compares two row sets; says how many rows matched.
same() { # what, file_a, file_b
	if [[ -s $2 ]] && cmp -s "$2" "$3"; then ok "$1 ($(wc -l <"$2") functions)"
	else fail "$1"; diff "$2" "$3" | head -n 10; fi
}

# 1. protoc and pprof read every kind of profile.pb.
for p in /cpu/2023-10-11T11:11 /cpu/comm=api/pid=1/2023-10-11T11:12 /merged/cpu/2023-10-11T11 \
	/merged/cpu/comm=~a.*/2023-10-11T11:10..2023-10-11T11:13 /merged/cpu/2020-01-01 \
	/diff/cpu/2023-10-11T11:11/vs/2023-10-11T11:12 /diff/cpu/comm=api/2023-10-11T11/vs/comm=db/2023-10-11T11; do
	cat_ "$p/profile.pb" >"$T/x.pb" || { fail "cat $p/profile.pb"; continue; }
	if pb_decode <"$T/x.pb" >"$T/x.txt" 2>"$T/x.err" &&
		grep -q '^string_table: ""' "$T/x.txt"; then ok "protoc decodes $p/profile.pb"
	else fail "protoc on $p/profile.pb: $(head -c 300 "$T/x.err")"; fi
	go tool pprof -top "$T/x.pb" >"$T/x.top" 2>&1 && ok "go tool pprof -top reads $p/profile.pb" ||
		{ fail "pprof on $p/profile.pb"; head -5 "$T/x.top"; }
done

# 2. Window and labels of a minute.
cat_ /cpu/2023-10-11T11:11/profile.pb >"$T/m.pb"
pb_decode <"$T/m.pb" >"$T/m.txt"
grep -q "^time_nanos: ${T0}000000000\$" "$T/m.txt" && ok "minute time_nanos is the minute's start" || fail "time_nanos: $(grep time_nanos "$T/m.txt")"
grep -q '^duration_nanos: 60000000000$' "$T/m.txt" && ok "minute duration_nanos is 60 s" || fail "duration_nanos: $(grep duration_nanos "$T/m.txt")"
tags=$(go tool pprof -tags "$T/m.pb" 2>/dev/null)
[[ $tags == *comm:* && $tags == *api* && $tags == *db* && $tags == *pid:* ]] && ok "sample labels comm and pid" || fail "labels: $tags"

# 3. merged/ equals pprof's own merge of the imported files.
go tool pprof -proto "$T/p1.pb" "$T/p2.pb" "$T/p3.pb" >"$T/want.pb" 2>/dev/null || fail "pprof -proto merge"
cat_ /merged/cpu/2023-10-11T11/profile.pb >"$T/hour.pb"
pp_top "$T/want.pb" cpu >"$T/a"; pp_top "$T/hour.pb" cpu >"$T/b"
same "merged hour: cpu flat/cum per function equal pprof's merge" "$T/a" "$T/b"
pp_top_n "$T/want.pb" >"$T/a"; pp_top_n "$T/hour.pb" >"$T/b"
same "merged hour: samples flat/cum per function equal pprof's merge" "$T/a" "$T/b"
cat_ /merged/cpu/comm=db/2023-10-11T11:00..2023-10-11T12:00/profile.pb >"$T/db.pb"
pp_top "$T/want.pb" cpu -tagfocus=comm=db >"$T/a"; pp_top "$T/db.pb" cpu >"$T/b"
same "merged comm=db equals pprof -tagfocus=comm=db" "$T/a" "$T/b"
go tool pprof -proto "$T/p1.pb" "$T/p2.pb" >"$T/want12.pb" 2>/dev/null
cat_ /merged/cpu/2023-10-11T11:11..2023-10-11T11:13/profile.pb >"$T/span.pb"
pp_top "$T/want12.pb" cpu >"$T/a"; pp_top "$T/span.pb" cpu >"$T/b"
same "merged A..B excludes B's minute" "$T/a" "$T/b"

# 4. diff/ equals pprof's -diff_base of the two sides.
diff_check() { # what, diff dir, side A path, side B path
	cat_ "$2/profile.pb" >"$T/d.pb"; cat_ "$3" >"$T/A.pb"; cat_ "$4" >"$T/B.pb"
	go tool pprof -top -nodefraction=0 -edgefraction=0 -nodecount=1000000 -unit=ns -diff_base="$T/A.pb" "$T/B.pb" 2>/dev/null |
		sed -n '/^ *flat  *flat%/,$p' | sort >"$T/a"
	go tool pprof -top -nodefraction=0 -edgefraction=0 -nodecount=1000000 -unit=ns "$T/d.pb" 2>/dev/null |
		sed -n '/^ *flat  *flat%/,$p' | sort >"$T/b"
	if [[ $(wc -l <"$T/a") -gt 1 ]] && cmp -s "$T/a" "$T/b"; then ok "$1: pprof -top equals -diff_base ($(($(wc -l <"$T/a") - 1)) rows)"
	else fail "$1"; diff "$T/a" "$T/b" | head; fi
}
diff_check "time diff" /diff/cpu/comm=api/2023-10-11T11:11/vs/2023-10-11T11:13 \
	/cpu/comm=api/2023-10-11T11:11/profile.pb /cpu/comm=api/2023-10-11T11:13/profile.pb
diff_check "label diff (B replaces comm)" /diff/cpu/comm=api/2023-10-11T11:11/vs/comm=db/2023-10-11T11:12 \
	/cpu/comm=api/2023-10-11T11:11/profile.pb /cpu/comm=db/2023-10-11T11:12/profile.pb
diff_check "merged-range diff" /diff/cpu/2023-10-11T11:11..2023-10-11T11:12/vs/2023-10-11T11:12..2023-10-11T11:14 \
	/cpu/2023-10-11T11:11/profile.pb /merged/cpu/2023-10-11T11:12..2023-10-11T11:14/profile.pb

# 5. top.txt and flamegraph.svg of the merged hour.
cat_ /merged/cpu/2023-10-11T11/top.txt >"$T/top.txt"
same_top "merged hour" "$T/hour.pb" "$T/top.txt"
pp_top "$T/hour.pb" cpu >"$T/a"
cat_ /merged/cpu/2023-10-11T11/flamegraph.svg >"$T/f.svg"
xmllint --noout "$T/f.svg" 2>/dev/null && ok "flamegraph.svg is well-formed" || fail "svg not well-formed"
heavy=$(sort -t$'\t' -k2,2nr "$T/a" | head -1 | cut -f1)
grep -q "$heavy" "$T/f.svg" && ok "svg names the heaviest function $heavy" || fail "svg lacks $heavy"
cat_ /diff/cpu/2023-10-11T11:11/vs/2023-10-11T11:12/flamegraph.svg >"$T/d.svg"
xmllint --noout "$T/d.svg" 2>/dev/null && ok "diff flamegraph.svg is well-formed" || fail "diff svg not well-formed"

finish
