#!/usr/bin/env bash
# timeout: 120 (three times its longest run on a clean clone, stop 48)
# import_roundtrip.sh - Go's own CPU, heap, allocs, goroutine, mutex and
# block profiles go into a store with
# `proffs import` and come back out of `proffs cat` (the bytes the mount
# serves) with the same numbers, as go tool pprof sees them:
#   - each is filed under its short type name (cpu, heap, alloc, ...);
#   - merged/<type>/<range>/profile.pb: pprof -top and -raw
#     read them, protoc --decode too; totals per sample type equal the
#     input's; flat and cum per function equal pprof's on the input;
#   - folded.txt sums to the total in its unit (samples for cpu), top.txt
#     is what go tool pprof -top prints, the SVG is well-formed;
#   - --type and --label: the type directory and label pair are listed;
#   - a store whose writer forgot symbols between two imports of the same
#     profile (each commit ends a generation) holds them twice, and reads
#     back as the one profile doubled: folded.txt line for line, pprof
#     -top and top.txt alike.
# san: yes
. "$(dirname "$0")/lib.bash"

need_tools go protoc xmllint
need_bins "$PROFFS"
tmp_dir import_roundtrip

build_profgen_or_fail
t0=$(date -u +%s)
"$PROFGEN" -cpu "$T/cpu.pb.gz" -heap "$T/heap.pb.gz" -dur 1200ms -allocs "$T/allocs.pb.gz" \
	-goroutine "$T/goroutine.pb.gz" -mutex "$T/mutex.pb.gz" -block "$T/block.pb.gz" >/dev/null \
	|| { echo "FAIL: profgen"; exit 1; }
t1=$(date -u +%s)
# A range holding the profiles' start times, minute-aligned.
range="$(date -u -d @$((t0 / 60 * 60 - 60)) +%Y-%m-%dT%H:%M)..$(date -u -d @$((t1 / 60 * 60 + 120)) +%Y-%m-%dT%H:%M)"

# The sample type pprof shows by default, and the total of a type.
disp_type() { go tool pprof -top "$1" 2>/dev/null | awk '/^Type:/ { print $2; exit }'; }
total_of() { # FILE TYPE
	local hdr tot
	hdr=$(go tool pprof -raw "$1" 2>/dev/null | awk '/^Samples:/ { getline; print; exit }')
	tot=$(raw_totals "$1")
	awk -v h="$hdr" -v t="$tot" -v want="$2" 'BEGIN {
		n = split(h, hs, " "); split(t, ts, " ")
		for (i = 1; i <= n; i++) { split(hs[i], tu, "/"); if (tu[1] == want) print ts[i] } }'
}

kinds="cpu heap allocs goroutine mutex block"
out=$("$PROFFS" import --store "$S" $(for k in $kinds; do echo "$T/$k.pb.gz"; done) 2>&1); rc=$?
[[ $rc == 0 ]] && ok "imported Go's cpu, heap, allocs, goroutine, mutex and block profiles" \
	|| { fail "import: rc $rc: $out"; exit 1; }
# The default type names (SPEC: the first sample type, mapped to a short name).
for k in $kinds; do
	want=$k; [[ $k == allocs ]] && want=alloc
	[[ $out == *"$T/$k.pb.gz: $want,"* ]] && ok "$k.pb.gz filed as type $want" || fail "$k.pb.gz not filed as $want: $out"
done

for kind in $kinds; do
	unit=ns type=$kind
	case $kind in heap) unit=B ;; allocs) unit=B type=alloc ;; goroutine) unit=count ;; esac
	p=merged/$type/$range
	if ! "$PROFFS" cat --store "$S" "$p/profile.pb" >"$T/$kind.pb" 2>"$T/err"; then
		fail "$kind: proffs cat $p/profile.pb: $(cat "$T/err")"
		continue
	fi
	go tool pprof -top "$T/$kind.pb" >/dev/null 2>&1 && go tool pprof -raw "$T/$kind.pb" >/dev/null 2>&1 \
		&& ok "$kind: go tool pprof -top and -raw read $p/profile.pb" || fail "$kind: pprof cannot read it"
	pb_decode <"$T/$kind.pb" >/dev/null 2>&1 \
		&& ok "$kind: protoc --decode" || fail "$kind: protoc --decode"
	want=$(raw_totals "$T/$kind.pb.gz"); got=$(raw_totals "$T/$kind.pb")
	[[ -n $want && $want == "$got" ]] && ok "$kind: totals equal the input's ($want)" || fail "$kind: totals '$got' != '$want'"
	dt=$(disp_type "$T/$kind.pb.gz"); dm=$(disp_type "$T/$kind.pb")
	[[ -n $dt && $dt == "$dm" ]] && ok "$kind: pprof shows $dt by default, as for the input" \
		|| fail "$kind: pprof shows '$dm' by default, the input '$dt' (default_sample_type lost?)"
	cmp -s <(go_top "$T/$kind.pb.gz" $unit "$dt") <(go_top "$T/$kind.pb" $unit "$dt") \
		&& ok "$kind: flat and cum per function of $dt equal the input's" \
		|| { fail "$kind: pprof -top differs"; diff <(go_top "$T/$kind.pb.gz" $unit "$dt") <(go_top "$T/$kind.pb" $unit "$dt") | head; }
	# folded.txt counts in the type's counting unit (samples for cpu, the
	# default type otherwise); top.txt is what pprof -top prints.
	ct=$dm; [[ $kind == cpu ]] && ct=samples
	total=$(total_of "$T/$kind.pb" "$ct")
	"$PROFFS" cat --store "$S" "$p/folded.txt" >"$T/$kind.folded" 2>/dev/null
	sum=$(awk '{s += $NF} END {printf "%.0f\n", s}' "$T/$kind.folded")
	[[ -s $T/$kind.folded && $sum == "$total" ]] && ! grep -qvE '^(.*) ([0-9]+)$' "$T/$kind.folded" \
		&& ok "$kind: folded.txt well-formed, sums to $total" || fail "$kind: folded.txt sum $sum != $total"
	"$PROFFS" cat --store "$S" "$p/top.txt" >"$T/$kind.top" 2>/dev/null
	same_top "$kind" "$T/$kind.pb" "$T/$kind.top"
	"$PROFFS" cat --store "$S" "$p/flamegraph.svg" >"$T/$kind.svg" 2>/dev/null
	xmllint --noout "$T/$kind.svg" 2>/dev/null && ok "$kind: flamegraph.svg well-formed" || fail "$kind: svg"
done

# --type and --label
out=$("$PROFFS" import --store "$S" --type custom --label node=web-3 "$T/cpu.pb.gz" 2>&1); rc=$?
[[ $rc == 0 && $out == *": custom,"* ]] && ok "--type custom accepted" || fail "import --type: rc $rc: $out"
ls_types=$("$PROFFS" cat --store "$S" / 2>/dev/null)
ls_custom=$("$PROFFS" cat --store "$S" custom 2>/dev/null)
[[ $ls_types == *custom* && $ls_types == *cpu* && $ls_types == *heap* && $ls_types == *goroutine* ]] \
	&& ok "root lists cpu, heap, goroutine, custom" \
	|| fail "root listing: $ls_types"
[[ $ls_custom == *"node=web-3"* ]] && ok "custom/ lists node=web-3" || fail "custom listing: $ls_custom"

# The writer forgets: cpu, then block (cpu's symbols go unused), then cpu
# again, in one process whose every commit ends a generation.
S2=$T/forgot
out=$(PROFFS_STORE_INDEX_WINDOW_S=0 "$PROFFS" import --store "$S2" "$T/cpu.pb.gz" "$T/block.pb.gz" \
	"$T/cpu.pb.gz" 2>&1) && ok "cpu, block, cpu imported into a store that forgets at each commit" \
	|| fail "import into $S2: $out"
metric_of() { "$PROFFS" cat --store "$1" metrics 2>/dev/null | awk -v m="$2" '$1 == m { print $2 }'; }
"$PROFFS" import --store "$T/once" "$T/cpu.pb.gz" "$T/block.pb.gz" >/dev/null 2>&1
l1=$(metric_of "$T/once" proffs_store_locations) l2=$(metric_of "$S2" proffs_store_locations)
[[ -n $l1 && -n $l2 ]] && ((l2 > l1)) && ok "cpu's locations were recorded again ($l1 -> $l2 locations)" \
	|| fail "no location recorded twice ($l1 once, $l2 with forgetting): nothing was forgotten"
"$PROFFS" cat --store "$T/once" "merged/cpu/$range/folded.txt" 2>/dev/null |
	awk '{ $NF = 2 * $NF; print }' >"$T/once2.folded"
"$PROFFS" cat --store "$S2" "merged/cpu/$range/folded.txt" >"$T/forgot.folded" 2>/dev/null
[[ -s $T/once2.folded ]] && cmp -s "$T/once2.folded" "$T/forgot.folded" \
	&& ok "folded.txt: the profile doubled, line for line ($(wc -l <"$T/forgot.folded") lines)" \
	|| { fail "folded.txt differs from the profile doubled"; diff "$T/once2.folded" "$T/forgot.folded" | head -5; }
"$PROFFS" cat --store "$S2" "merged/cpu/$range/profile.pb" >"$T/forgot.pb" 2>/dev/null
"$PROFFS" cat --store "$T/once" "merged/cpu/$range/profile.pb" >"$T/once.pb" 2>/dev/null
top_pct() { go tool pprof -top -nodecount=1000 "$1" 2>/dev/null | awk '/^ *[0-9.]+[a-z]* +[0-9.]+%/ { print $2, $5, $6 }' | sort; }
[[ -n $(top_pct "$T/once.pb") ]] && cmp -s <(top_pct "$T/once.pb") <(top_pct "$T/forgot.pb") \
	&& ok "pprof -top: every function's flat% and cum% as in the profile once" \
	|| { fail "pprof -top differs"; diff <(top_pct "$T/once.pb") <(top_pct "$T/forgot.pb") | head -5; }
"$PROFFS" cat --store "$S2" "merged/cpu/$range/top.txt" >"$T/forgot.top" 2>/dev/null
same_top "forgot" "$T/forgot.pb" "$T/forgot.top"
"$PROFFS" check --store "$S2" >/dev/null 2>&1 && ok "proffs check: the store is sound" \
	|| fail "proffs check $S2"

finish
