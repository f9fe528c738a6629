#!/usr/bin/env bash
# timeout: 120 (three times its longest run on a clean clone, stop 48)
# pprof_formats.sh - proffs' pprof decoder, encoder and renderers against
# real profiles written by Go's runtime/pprof, checked with the real tools:
# go tool pprof (-top, -raw, -diff_base), protoc --decode, xmllint.
#   - the Go program's CPU and heap profiles decode;
#   - encode(decode(x)) passes go tool pprof -top/-raw and protoc --decode,
#     and pprof reads exactly the same numbers from it as from x;
#   - totals per sample type equal those go tool pprof -raw reads from x;
#   - folded lines match ^(.*) ([0-9]+)$, frames are real function names,
#     counts sum to the total in the type's counting unit (samples for
#     cpu); the diff folded has two count columns, in the same unit;
#   - top.txt is byte for byte what go tool pprof -top prints (header,
#     rows, order, scaled values), also for a diff;
#   - the SVG is well-formed, names the heaviest functions, and its script
#     hovers, zooms and resets (tests/tools/svg_zoom.js under node, if any);
#   - profile__diff read by pprof equals pprof's own -diff_base;
#   - every crafted fail file is refused with its reason.
# (pprofcat is the plain build's; a sanitizer pass would test nothing more)
. "$(dirname "$0")/lib.bash"
PC=$TESTS_BIN/pprofcat

need_tools go protoc xmllint
need_bins "$PC" "$TESTS_BIN/pprofbad"
tmp_dir pprof_formats

# Build the Go program offline, caches inside the temp dir.
build_profgen_or_fail
"$T/profgen" -cpu "$T/cpu.pb.gz" -heap "$T/heap.pb.gz" -dur 1500ms >/dev/null || { echo "FAIL: profgen"; exit 1; }
"$T/profgen" -cpu "$T/cpu2.pb.gz" -heap "$T/heap2.pb.gz" -dur 800ms >/dev/null || { echo "FAIL: profgen 2"; exit 1; }

# raw_totals, go_top and our_top are lib.bash's.

for kind in cpu heap; do
	in=$T/$kind.pb.gz
	unit=ns; [[ $kind == heap ]] && unit=B
	if "$PC" check "$in"; then ok "$kind: Go profile decodes"; else fail "$kind: Go profile refused"; continue; fi

	"$PC" encode "$in" >"$T/$kind.enc.pb" || fail "$kind: encode"
	go tool pprof -top "$T/$kind.enc.pb" >"$T/$kind.enc.top" 2>&1 && ok "$kind: go tool pprof -top reads our encoding" \
		|| { fail "$kind: go tool pprof -top"; cat "$T/$kind.enc.top"; }
	go tool pprof -raw "$T/$kind.enc.pb" >/dev/null 2>&1 && ok "$kind: go tool pprof -raw reads our encoding" \
		|| fail "$kind: go tool pprof -raw"
	pb_decode <"$T/$kind.enc.pb" >"$T/$kind.txtpb" 2>&1 && grep -q '^string_table: ""' "$T/$kind.txtpb" \
		&& ok "$kind: protoc --decode, string_table[0] is \"\"" || fail "$kind: protoc --decode"
	[[ $(grep -c '^default_sample_type\|^period:' "$T/$kind.txtpb") -ge 1 ]] || fail "$kind: period missing"
	if [[ $kind == cpu ]]; then
		grep -q '^  has_functions: true' "$T/$kind.txtpb" && ok "cpu: has_functions kept" || fail "cpu: has_functions lost"
		grep -q '^duration_nanos: [1-9]' "$T/$kind.txtpb" && ok "cpu: duration_nanos kept" || fail "cpu: duration_nanos lost"
	fi
	grep -q '^time_nanos: [1-9]' "$T/$kind.txtpb" || fail "$kind: time_nanos lost"
	"$PC" encode "$T/$kind.enc.pb" | cmp -s - "$T/$kind.enc.pb" && ok "$kind: encode(decode(encode(x))) is byte-identical" \
		|| fail "$kind: re-encoding differs"

	# Totals: what pprof reads from the original, from our encoding, and what we read.
	want=$(raw_totals "$in")
	got=$(raw_totals "$T/$kind.enc.pb")
	ours=$("$PC" totals "$in" | awk '{printf "%s%s", (NR > 1 ? " " : ""), $2} END {print ""}')
	[[ -n $want && $want == "$got" && $want == "$ours" ]] && ok "$kind: totals per sample type equal ($want)" \
		|| fail "$kind: totals: pprof on input '$want', pprof on ours '$got', our decoder '$ours'"
	# Same numbers through pprof's report on both files.
	cmp -s <(go_top "$in" $unit) <(go_top "$T/$kind.enc.pb" $unit) && ok "$kind: pprof -top identical on input and our encoding" \
		|| { fail "$kind: pprof -top differs"; diff <(go_top "$in" $unit) <(go_top "$T/$kind.enc.pb" $unit) | head; }

	# folded.txt
	"$PC" folded "$in" >"$T/$kind.folded" || fail "$kind: folded"
	# The counting unit: samples/count for cpu, else the displayed (last) value.
	if [[ $kind == cpu ]]; then total=$(echo "$want" | awk '{print $1}'); else total=$(echo "$want" | awk '{print $NF}'); fi
	if [[ -s $T/$kind.folded ]] && ! grep -qvE '^(.*) ([0-9]+)$' "$T/$kind.folded"; then
		ok "$kind: every folded line matches ^(.*) ([0-9]+)\$ ($(wc -l <"$T/$kind.folded") lines)"
	else
		fail "$kind: folded lines malformed"
	fi
	sum=$(awk '{s += $NF} END {printf "%.0f\n", s}' "$T/$kind.folded")
	[[ $sum == "$total" ]] && ok "$kind: folded counts sum to the total $total" || fail "$kind: folded sum $sum != $total"
	go_top "$in" $unit | cut -f1 >"$T/$kind.names"
	sed 's/ [0-9]*$//' "$T/$kind.folded" | tr ';' '\n' | sort -u >"$T/$kind.frames"
	extra=$(comm -23 "$T/$kind.frames" <(sort -u "$T/$kind.names"))
	[[ -z $extra ]] && ok "$kind: every folded frame is a function pprof knows (no split names)" \
		|| fail "$kind: folded frames pprof does not know: $(echo $extra | head -c 300)"
	LC_ALL=C sort -c "$T/$kind.folded" && ok "$kind: folded sorted" || fail "$kind: folded not sorted"

	# top.txt against pprof -top
	"$PC" top "$in" >"$T/$kind.top" || fail "$kind: top"
	same_top "$kind" "$in" "$T/$kind.top"

	# flamegraph.svg
	"$PC" svg "$in" >"$T/$kind.svg" || fail "$kind: svg"
	xmllint --noout "$T/$kind.svg" && ok "$kind: svg is well-formed XML" || fail "$kind: svg not well-formed"
	missing="" found=0
	while IFS=$'\t' read -r name flat cum; do
		found=$((found + 1))
		grep -qF "data-n=\"$name\"" "$T/$kind.svg" || missing="$missing $name"
	done < <(go_top "$in" $unit | awk -F'\t' -v t="$total" '$2 * 100 >= t' | sort -t$'\t' -k2,2nr | head -3)
	[[ -z $missing && $found -ge 1 ]] && ok "$kind: svg names the (up to 3) heaviest functions of >= 1% flat" || fail "$kind: svg lacks$missing"
	grep -q '<script' "$T/$kind.svg" && ! grep -q 'href=' "$T/$kind.svg" && ok "$kind: svg self-contained" \
		|| fail "$kind: svg not self-contained"
	if command -v node >/dev/null; then
		node "$ROOT/tests/tools/svg_zoom.js" "$T/$kind.svg" >"$T/$kind.js.log" 2>&1 \
			&& ok "$kind: svg script: hover, click-zoom and reset work (node, mock DOM)" \
			|| { fail "$kind: svg script"; cat "$T/$kind.js.log"; }
	else
		echo "note: node not installed; svg script not exercised"
	fi
done

# Diff: pprof reading profile__diff must equal pprof's own -diff_base.
for kind in cpu heap; do
	unit=ns; [[ $kind == heap ]] && unit=B
	"$PC" diff "$T/${kind}.pb.gz" "$T/${kind}2.pb.gz" >"$T/$kind.diff.pb" || fail "$kind: diff"
	a=$(go tool pprof -top -nodefraction=0 -nodecount=1000000 -unit=$unit "$T/$kind.diff.pb" 2>&1 | sed -n '/^Showing/,$p')
	b=$(go tool pprof -top -nodefraction=0 -nodecount=1000000 -unit=$unit -diff_base "$T/${kind}.pb.gz" "$T/${kind}2.pb.gz" 2>&1 | sed -n '/^Showing/,$p')
	[[ -n $a && $a == "$b" ]] && ok "$kind: pprof -top of our diff equals pprof -top -diff_base" \
		|| { fail "$kind: diff differs"; diff <(echo "$a") <(echo "$b") | head -20; }
	"$PC" top-diff "$T/${kind}.pb.gz" "$T/${kind}2.pb.gz" >"$T/$kind.dtop" || fail "$kind: top-diff"
	same_top "$kind diff" "$T/$kind.diff.pb" "$T/$kind.dtop"
	"$PC" folded-diff "$T/${kind}.pb.gz" "$T/${kind}2.pb.gz" >"$T/$kind.fdiff" || fail "$kind: folded-diff"
	if [[ -s $T/$kind.fdiff ]] && ! grep -qvE '^(.*) ([0-9]+) ([0-9]+)$' "$T/$kind.fdiff"; then
		ok "$kind: diff folded lines have two count columns"
	else
		fail "$kind: diff folded malformed"
	fi
	sa=$(awk '{s += $(NF-1)} END {printf "%.0f\n", s}' "$T/$kind.fdiff"); sb=$(awk '{s += $NF} END {printf "%.0f\n", s}' "$T/$kind.fdiff")
	col='$NF'; [[ $kind == cpu ]] && col='$1' # samples for cpu
	ta=$(raw_totals "$T/${kind}.pb.gz" | awk "{print $col}"); tb=$(raw_totals "$T/${kind}2.pb.gz" | awk "{print $col}")
	[[ $sa == "$ta" && $sb == "$tb" ]] && ok "$kind: diff folded columns sum to each side's total ($ta, $tb)" \
		|| fail "$kind: diff folded sums $sa/$sb vs $ta/$tb"
	"$PC" svg-diff "$T/${kind}.pb.gz" "$T/${kind}2.pb.gz" >"$T/$kind.diff.svg" && xmllint --noout "$T/$kind.diff.svg" \
		&& ok "$kind: diff svg well-formed" || fail "$kind: diff svg"
	if command -v node >/dev/null; then
		node "$ROOT/tests/tools/svg_zoom.js" "$T/$kind.diff.svg" >"$T/$kind.djs.log" 2>&1 \
			&& ok "$kind: diff svg script works" || { fail "$kind: diff svg script"; cat "$T/$kind.djs.log"; }
	fi
done

# The crafted fail files.
mkdir -p "$T/bad"
"$TESTS_BIN/pprofbad" "$T/bad" >"$T/bad.list" || fail "pprofbad"
n=0
while IFS=$'\t' read -r name expect; do
	n=$((n + 1))
	out=$("$PC" check "$T/bad/$name.pb" 2>&1); rc=$?
	if [[ $rc == 1 && $out == "$T/bad/$name.pb: "*"$expect"* && $(echo "$out" | wc -l) == 1 ]]; then
		ok "fail $name refused: ${out#"$T"/bad/}"
	else
		fail "fail $name: rc $rc, '$out' (want '$expect')"
	fi
done <"$T/bad.list"
((n >= 20)) || fail "only $n fail files"

finish
