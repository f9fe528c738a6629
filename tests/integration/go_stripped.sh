#!/usr/bin/env bash
# go_stripped: a Go program built as releases are (-ldflags='-s -w': no
# symbol table, no DWARF, no .eh_frame) under the daemon as it ships.
# tests/helpers/go/gohot.go runs heavy and light 10:1 and times each with
# its thread's CPU clock. Its functions are named from Go's own table
# (.gopclntab) and its stacks unwound with that table's stack depths:
#  - heavy's share of heavy + light within 3 sigma (>= 3 pp) of the
#    program's own figure;
#  - no frame of it left as gohot_stripped+0x;
#  - main.work's stacks whole as Go's traceback has them,
#    runtime.goexit;runtime.main;main.main;main.heavy|light;main.work, in
#    >= 95% of its samples (the rest: a tick inside the prologue of a
#    call, or kernel frames of an interrupt);
#  - the same program with its symbol table (gohot_full) gives the same,
#    with Go's own names (runtime.goexit, not the symbol table's .abi0);
#  - so does a cgo binary (tests/helpers/gocgo, stripped), whose C part
#    has .eh_frame and whose Go code is walked with Go's table beside it;
#  - profile.pb gives each main.* frame the file and line Go's own CPU
#    profile of the binary does (from the same table: no DWARF needed);
#  - /prof/metrics counts both as read from a Go 1.18 layout.
# About 30 s.
# timeout: 180
source "$(dirname "$0")/sampler_lib.bash"

MP=$WORK/mp
mkdir -p "$MP"
run_start "$WORK/s" "$MP" --batch-interval 2s
for b in gohot_stripped gohot_full gocgo_stripped; do
	"$TESTS_BIN/$b" 16 >"$WORK/$b.out" & P=$!; PIDS+=("$P")
	wait "$P" || fail "$b failed"
	stored
	F=$WORK/$b.folded
	cp "$MP/merged/cpu/pid=$P/last-15m/folded.txt" "$F" || { fail "read $b's folded.txt"; continue; }
	want=$(sed -n 's/^heavy=\([0-9.]*\) .*/\1/p' "$WORK/$b.out")
	h=$(fsum "$F" ';main\.heavy(;|$)'); l=$(fsum "$F" ';main\.light(;|$)')
	n=$((h + l)); share=$(pct "$h" "$n"); bd=$(band "${want:-0}" "$n")
	((n >= 40)) && within "$share" "$(awk -v w="$want" -v b="$bd" 'BEGIN { print w - b }')" "$(awk -v w="$want" -v b="$bd" 'BEGIN { print w + b }')" &&
		ok "$b: main.heavy $share% of heavy + light's $n samples (the program: $want% +- $bd)" ||
		fail "$b: main.heavy $share% of $n samples (want >= 40, the program's $want +- $bd)"
	# (a stripped cgo binary's C functions have no name anywhere: only
	# the stacks of Go code are judged)
	un=$(awk -v b="$b+0x" '{ n = $NF; sub(/ [0-9]+$/, "") } index($0, b) && /;main\.(heavy|light|work)(;|$)/ { s += n } END { print s + 0 }' "$F")
	((un == 0)) && ok "$b: no Go frame left unnamed" || { fail "$b: $un samples of Go code with $b+0x frames"; grep "$b+0x" "$F" | head -3; }
	w=$(fsum "$F" ';main\.work(;|$)')
	whole=$(fsum "$F" "^$b;runtime\\.goexit;runtime\\.main;main\\.main;main\\.(heavy|light);main\\.work(;[^;]*_\\[k\\])*\$")
	((w >= 40)) && within "$(pct "$whole" "$w")" 95 100 &&
		ok "$b: main.work whole from runtime.goexit in $(pct "$whole" "$w")% of its $w samples" ||
		{ fail "$b: main.work whole in $whole of $w samples (want >= 95%)"; grep 'main\.work' "$F" | grep -v "^$b;runtime.goexit;runtime.main;main.main" | head -3; }
	# Lines, against Go's own CPU profile of the same binary (a second,
	# shorter run: runtime/pprof's SIGPROF would sit in the judged one):
	# each main.* function:line of ours with >= 5% of the samples is
	# one Go's own profile has (`go tool pprof -top -lines` of both).
	[[ $b == gohot_* ]] || continue
	GOHOT_PROF=$WORK/$b.goprof "$TESTS_BIN/$b" 3 >/dev/null || fail "$b with GOHOT_PROF failed"
	lines_of() { go tool pprof -top -lines -nodecount=200 "$1" 2>/dev/null | awk -v min="$2" '$(NF-1) ~ /^main\./ && $NF ~ /\.go:[0-9]+$/ && $5 + 0 >= min { print $(NF-1), $NF }' | sort -u; }
	ours=$(lines_of "$MP/merged/cpu/pid=$P/last-15m/profile.pb" 5)
	gos=$(lines_of "$WORK/$b.goprof" 0)
	missing=$(comm -23 <(echo "$ours") <(echo "$gos"))
	if (($(grep -c . <<<"$ours") >= 4)) && [[ -z $missing ]]; then
		ok "$b: profile.pb's lines are Go's own: $(tr '\n' ' ' <<<"$ours" | sed 's|[^ ]*/||g')"
	else
		fail "$b: lines not in Go's own profile: ${missing:-none}; ours: $(tr '\n' ' ' <<<"$ours")"
		echo "Go's: $(tr '\n' ' ' <<<"$gos")"
	fi
done
v=$(metric 'proffs_go_binaries_total{layout="1.18"}')
((v >= 3)) && ok "metrics: $v Go binaries named from a 1.18-layout table" || fail "metrics: proffs_go_binaries_total{layout=\"1.18\"} is '$v', want >= 3"
run_stop "$RUN_PID" "$MP"
finish
