#!/usr/bin/env bash
# timeout: 120 (three times its longest run on a clean clone, stop 48)
# mount_parallel: 16 parallel readers over different merged and diff files
# (with a small render cache, so renders are evicted and redone while
# others wait on them) while another process imports into the same store.
# No errors, no deadlock, every read equal to the single-threaded render
# of `proffs cat`; the imported data shows up without a remount.
# san: yes
# long: yes (minutes of wall clock, mostly waiting: started first)
source "$(dirname "$0")/mount_lib.bash"

STORE=$WORK/store
make_dataset "$STORE"
MP=$(mnt_dir mp)
mnt_start "$STORE" "$MP" --cache-size 96K

DIRS=(merged/cpu/2026-11-20 merged/cpu/2026-11-20T10 merged/cpu/2026-11-20T11 merged/cpu/comm=api/2026-11-20
	merged/cpu/comm=db/2026-11-20 merged/cpu/pid=101/2026-11-20 "merged/cpu/comm=~a.*/2026-11-20T10"
	"merged/cpu/comm!=db/2026-11-20T10:00..2026-11-20T11:01"
	diff/cpu/2026-11-20T10/vs/2026-11-20T11 diff/cpu/comm=api/2026-11-20/vs/comm=db/2026-11-20
	diff/cpu/pid=100/2026-11-20T10/vs/pid=200/2026-11-20T11 diff/cpu/2026-11-20T10:00/vs/2026-11-20T10:02)
FILES=()
for d in "${DIRS[@]}"; do for f in profile.pb folded.txt flamegraph.svg top.txt; do FILES+=("$d/$f"); done; done
mkdir -p "$WORK/expect"
for i in "${!FILES[@]}"; do
	"$PROFFS" cat --store "$STORE" "/${FILES[i]}" >"$WORK/expect/$i" || die "proffs cat /${FILES[i]}"
done
ok "${#FILES[@]} reference renders from proffs cat"

# The importer: 24 new minutes on the next day, one process per file.
mkdir -p "$WORK/newpb"
T21=$(date -u -d "2026-11-21T08:00:00Z" +%s)
for i in $(seq 0 23); do
	"$TESTS_BIN/mkprof" --time $((T21 + 60 * i + 1)) --seed $((100 + i)) --series api:100 --series web:300 \
		"$WORK/newpb/n$i.pb" || die mkprof
done
(
	for i in $(seq 0 23); do
		"$PROFFS" import --store "$STORE" --type cpu "$WORK/newpb/n$i.pb" >/dev/null 2>>"$WORK/import.err" || exit 1
	done
) &
IMP=$!
PIDS+=("$IMP")

reader() { # id
	local id=$1 r i k n=${#FILES[@]} size got
	for ((r = 1; r <= ROUNDS; r++)); do
		for ((k = 0; k < n; k++)); do
			i=$(((k + id * 3) % n))
			size=$(stat -c %s "$MP/${FILES[i]}") || { echo "reader $id: stat ${FILES[i]}"; continue; }
			if ! cat "$MP/${FILES[i]}" >"$WORK/rd.$id" 2>"$WORK/rd.$id.err"; then
				echo "reader $id: read ${FILES[i]}: $(cat "$WORK/rd.$id.err")"; continue
			fi
			# Byte for byte, profile.pb too: the ranges are complete
			# and untouched by the imports (SPEC §2), though hours
			# close and roll up under the readers.
			cmp -s "$WORK/rd.$id" "$WORK/expect/$i" || echo "reader $id: ${FILES[i]} differs from proffs cat"
			got=$(stat -c %s "$WORK/rd.$id")
			[[ $got == "$size" ]] || echo "reader $id: ${FILES[i]} st_size $size but read $got"
		done
	done
}
ROUNDS=2
[[ ${SAN:-} == 1 ]] && ROUNDS=1 # the sanitizer build renders ~3x slower
t0=$SECONDS
RPIDS=()
for id in $(seq 0 15); do
	reader "$id" >"$WORK/reader.$id" 2>&1 &
	RPIDS+=($!)
	PIDS+=($!)
done
for p in "${RPIDS[@]}"; do wait "$p"; done
wait "$IMP" && ok "concurrent imports succeeded" || { fail "import failed"; cat "$WORK/import.err"; }
errs=$(cat "$WORK"/reader.* | wc -l)
if ((errs == 0)); then
	ok "16 readers x $ROUNDS round(s) x ${#FILES[@]} files: all equal to proffs cat ($((SECONDS - t0)) s)"
else
	fail "$errs reader errors"; cat "$WORK"/reader.* | head -20
fi
kill -0 "$MNT_PID" && ok "daemon alive" || fail "daemon died"

# New data is visible without a remount (current entries time out in 1 s).
sleep 1.5
n=$(ls "$MP/cpu" | grep -c '^2026-11-21T')
[[ $n == 24 ]] && ok "24 imported minutes listed" || fail "listed $n imported minutes, want 24"
l=$(readlink "$MP/cpu/latest")
[[ $l == 2026-11-21T08:23 ]] && ok "latest moved to $l" || fail "latest is '$l'"
ls "$MP/cpu" | grep -q '^comm=web$' && ok "new label comm=web listed" || fail "comm=web not listed"
cmp -s <(cat "$MP/merged/cpu/2026-11-21/top.txt") <("$PROFFS" cat --store "$STORE" /merged/cpu/2026-11-21/top.txt) &&
	ok "new day merged equals proffs cat" || fail "new day merged differs"
grep -E '^proffs_render_cache_(evictions|waits)_total' "$MP/metrics" | tr '\n' ' '; echo
grep -q '^proffs_render_cache_evictions_total [1-9]' "$MP/metrics" && ok "renders were evicted and redone" || fail "no evictions with a 96K cache"
mnt_stop "$MNT_PID" "$MP" && ok "clean stop"
finish
