#!/usr/bin/env bash
# elf_caps: the caps README states for a program's symbol table (1M
# symbols, 32 MB of names): a file over either is refused, counted
# too_big, its frames left as file+0xOFFSET, never named by a cut table,
# while a file within them is named. truth_nofp, stripped, gets a symbol
# table of our making (tests/tools/elfsyms.py): 1,100,000 symbols; 9,000
# names of 4,000 bytes (36 MB); 1,000 short ones (the control).
# About 25 s.
# timeout: 180
source "$(dirname "$0")/sampler_lib.bash"

MP=$WORK/mp
mkdir -p "$MP"
strip -o "$WORK/stripped" "$TESTS_BIN/truth_nofp" || die strip
python3 "$ROOT/tests/tools/elfsyms.py" "$WORK/stripped" "$WORK/many" 1100000 16 || die "elfsyms many"
python3 "$ROOT/tests/tools/elfsyms.py" "$WORK/stripped" "$WORK/long" 9000 4000 || die "elfsyms long"
python3 "$ROOT/tests/tools/elfsyms.py" "$WORK/stripped" "$WORK/fine" 1000 16 || die "elfsyms fine"
chmod +x "$WORK/many" "$WORK/long" "$WORK/fine"
run_start "$WORK/s" "$MP" --batch-interval 2s
t0=$(metric 'proffs_files_refused_total{reason="too_big"}')
declare -A P
for f in many long fine; do "$WORK/$f" 8 & P[$f]=$!; PIDS+=($!); done
for f in many long fine; do wait "${P[$f]}" || fail "$f failed"; done
stored
t1=$(metric 'proffs_files_refused_total{reason="too_big"}')
((t1 >= t0 + 2)) && ok "both tables over a cap refused, counted too_big ($t0 -> $t1)" || fail "too_big $t0 -> $t1 (want +2)"
for f in many long fine; do
	F=$WORK/$f.folded
	cp "$MP/merged/cpu/pid=${P[$f]}/last-15m/folded.txt" "$F" || { fail "read $f's folded.txt"; continue; }
	n=$(fsum "$F"); u=$(fsum "$F" "$f[+]0x"); s=$(fsum "$F" ';f[0-9]+_')
	if [[ $f == fine ]]; then
		((n >= 10 && s * 10 >= n * 9)) && ok "fine: named from its table in $s of $n samples" || fail "fine: $s of $n samples named"
	else
		((n >= 10 && s == 0 && u * 10 >= n * 9)) && ok "$f: refused, $u of $n samples left as $f+0x, none named" ||
			fail "$f: $n samples, $s named from the table, $u left as $f+0x"
	fi
done
run_stop "$RUN_PID" "$MP"
finish
