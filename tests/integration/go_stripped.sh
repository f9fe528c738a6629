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
#  - 200 goroutines on two threads: heavy's share is the work's (10 of
#    11) within 3 sigma, main.work whole through main.spinner in >= 95%;
#  - five runs of 0.5 s are named all the same;
#  - a table with a control byte in its names and one cut (its section
#    header halved) name nothing (never wrong), are counted unknown, and
#    the daemon lives on;
#  - /prof/metrics counts both as read from a Go 1.18 layout.
# About 70 s.
# timeout: 300 (about three times its run beside a loaded suite, stop 49)
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
# 200 goroutines on two threads, moved between them by Go's scheduler:
# heavy's share is the work's, 10 of 11 (90.9%), within 3 sigma (>= 3
# pp); main.work's stacks whole from runtime.goexit through the go
# statement's wrapper (main.crowd.func1: Go wraps a call with arguments)
# and main.spinner.
"$TESTS_BIN/gohot_stripped" 6 goroutines 200 >/dev/null & P=$!; PIDS+=("$P")
wait "$P" || fail "gohot_stripped goroutines failed"
stored
F=$WORK/crowd.folded
cp "$MP/merged/cpu/pid=$P/last-15m/folded.txt" "$F" || fail "read the goroutines' folded.txt"
h=$(fsum "$F" ';main\.heavy(;|$)'); l=$(fsum "$F" ';main\.light(;|$)')
n=$((h + l)); share=$(pct "$h" "$n"); bd=$(band 90.9 "$n")
((n >= 30)) && within "$share" "$(awk -v b="$bd" 'BEGIN { print 90.9 - b }')" "$(awk -v b="$bd" 'BEGIN { print 90.9 + b }')" &&
	ok "200 goroutines: main.heavy $share% of heavy + light's $n samples (the work: 90.9% +- $bd)" ||
	fail "200 goroutines: main.heavy $share% of $n samples (want >= 30, 90.9 +- $bd)"
w=$(fsum "$F" ';main\.work(;|$)')
whole=$(fsum "$F" '^gohot_stripped;runtime\.goexit;main\.crowd\.func1;main\.spinner;main\.(heavy|light);main\.work(;[^;]*_\[k\])*$')
((w >= 30)) && within "$(pct "$whole" "$w")" 95 100 &&
	ok "200 goroutines: main.work whole from runtime.goexit through main.spinner in $(pct "$whole" "$w")% of its $w samples" ||
	{ fail "200 goroutines: main.work whole in $whole of $w samples (want >= 95%)"; grep 'main\.work' "$F" | grep -v '^gohot_stripped;runtime.goexit;main.crowd.func1;main.spinner;' | sort -t' ' -k2 -n | tail -3 | cut -c1-300; }
# Go programs that exit after 0.5 s, five in turn: their samples named
# all the same (a table is read at a process's first sample; the daemon
# keeps an exited process's maps). Five, so that a loaded host still
# gives samples to judge (each gets ~2-10).
SP=()
for i in 1 2 3 4 5; do
	"$TESTS_BIN/gohot_stripped" 0.5 >/dev/null & P=$!; PIDS+=("$P"); SP+=("$P")
	wait "$P" || fail "gohot_stripped 0.5 failed"
done
stored
F=$WORK/short.folded
for P in "${SP[@]}"; do cat "$MP/merged/cpu/pid=$P/last-15m/folded.txt"; done >"$F"
n=$(fsum "$F"); w=$(fsum "$F" ';main\.work(;|$)'); un=$(fsum "$F" 'gohot_stripped\+0x')
((n >= 3 && w >= 1 && un == 0)) && ok "five Go runs of 0.5 s: their $n samples named ($w in main.work, none gohot_stripped+0x)" ||
	{ fail "five Go runs of 0.5 s: $n samples, $w in main.work, $un with unnamed frames"; head -3 "$F" | cut -c1-200; }
# Damaged tables Go's runtime still runs with (it checks the magic and
# the functab's order at start, and reads names only to print them): a
# control byte inside the function names, and a section header that says
# the table is half its size (cut, to a reader of the file). Refused and
# counted, frames left unnamed, never named wrong; the daemon lives on.
read -r gidx goff gsize < <(readelf -SW "$TESTS_BIN/gohot_stripped" | tr -d '[]' | awk '{ for (i = 1; i < NF; i++) if ($i == ".gopclntab") print $(i - 1), $(i + 3), $(i + 4) }')
[[ -n $goff ]] || die "no .gopclntab in gohot_stripped"
goff=$((16#$goff)) gsize=$((16#$gsize))
u0=$(metric 'proffs_go_binaries_total{layout="unknown"}')
cp "$TESTS_BIN/gohot_stripped" "$WORK/gobadname"
# (funcnametab's offset: the header's word at byte 32)
names=$(od -An -t u8 -j $((goff + 32)) -N 8 "$WORK/gobadname" | tr -d ' ')
((names > 0 && names < gsize)) || die "gohot_stripped's table header: names at $names"
printf '\x01' | dd of="$WORK/gobadname" bs=1 seek=$((goff + names + 40)) conv=notrunc status=none
cp "$TESTS_BIN/gohot_stripped" "$WORK/gobadcut"
python3 - "$WORK/gobadcut" "$gidx" <<'PY' || die "cannot cut gobadcut's section header"
import struct, sys
path, idx = sys.argv[1], int(sys.argv[2])
with open(path, "r+b") as f:
    shoff = struct.unpack_from("<Q", f.read(64), 40)[0]
    at = shoff + idx * 64 + 32  # sh_size
    f.seek(at)
    size = struct.unpack("<Q", f.read(8))[0]
    f.seek(at)
    f.write(struct.pack("<Q", size // 2))
PY
for b in gobadname gobadcut; do
	"$WORK/$b" 3 >/dev/null & P=$!; PIDS+=("$P")
	wait "$P" || fail "$b failed"
	stored
	F=$WORK/$b.folded
	cp "$MP/merged/cpu/pid=$P/last-15m/folded.txt" "$F" || { fail "read $b's folded.txt"; continue; }
	n=$(fsum "$F"); named=$(fsum "$F" ';main\.')
	((n >= 3 && named == 0)) && ok "$b: a table not read: $n samples, no Go name given (unnamed, never named wrong)" ||
		{ fail "$b: $n samples, $named named from a damaged table"; grep 'main\.' "$F" | head -3 | cut -c1-200; }
done
u1=$(metric 'proffs_go_binaries_total{layout="unknown"}')
kill -0 "$RUN_PID" 2>/dev/null || die "the daemon died on a damaged Go table"
((u1 - u0 == 2)) && ok "metrics: both damaged tables counted as unknown ($u0 -> $u1)" || fail "metrics: unknown went $u0 -> $u1 (want +2)"
v=$(metric 'proffs_go_binaries_total{layout="1.18"}')
((v >= 3)) && ok "metrics: $v Go binaries named from a 1.18-layout table" || fail "metrics: proffs_go_binaries_total{layout=\"1.18\"} is '$v', want >= 3"
run_stop "$RUN_PID" "$MP"
finish
