#!/usr/bin/env bash
# memory.sh - what the daemon holds after a busy, churning hour in small:
# `proffs run` with its defaults (19 Hz, render cache default) while
#   - both cores run busy loops (tests/helpers/truth), python3 and gzip;
#   - a fork storm of short-lived processes (tests/helpers/forker);
#   - N distinct short-lived binaries run once each (copies of fixedwork
#     with their build id rewritten, so every one is a new file and a new
#     symbol table to the daemon: a day of deploys and cron jobs);
# then a walk of the tree: every file of every minute, type and label
# directory two levels down, and merged/ and diff/ of the whole run.
# Prints VmRSS, RssAnon and the memlock of the BPF maps (fdinfo), after
# the churn and after the walk.
#
#   scripts/bench/memory.sh [PROFFS [N_BINARIES]]   (or NBIN=N in the environment)
# MIN_S=SECONDS: the binaries take at least that long (see below).
# MEM_DETAIL=1 adds, at the end, where the anonymous memory is (smaps:
# the heap, other anonymous mappings) and glibc's arena figures
# (malloc_stats, called through gdb after the last reading).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PROFFS=${1:-$ROOT/build/proffs}
NBIN=${2:-${NBIN:-200}}
TB=$ROOT/build/tests
W=$(mktemp -d /tmp/proffs-mem.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 1
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	grep -q " $W/mp " /proc/mounts && fusermount3 -u -z "$W/mp"
	rm -rf "$W"
}
trap cleanup EXIT
log() { printf '# %s\n' "$*" >&2; }

# VmRSS counts the pages of BPF maps the daemon has mmapped (the unwind
# rows) and memlock counts them again: "RSS+BPF" adds the two minus those
# pages (their Rss in smaps), so each byte is counted once.
mem() { # label
	local rss anon ml=0 m fd bm
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$DPID/status")
	anon=$(awk '/^RssAnon:/ { print $2 }' "/proc/$DPID/status")
	for fd in /proc/$DPID/fdinfo/*; do
		m=$(awk '/^memlock:/ { print $2 }' "$fd" 2>/dev/null)
		[[ -n $m ]] && ml=$((ml + m))
	done
	bm=$(awk '/^[0-9a-f]+-[0-9a-f]+ / { b = ($NF == "anon_inode:bpf-map") } b && /^Rss:/ { s += $2 } END { print s + 0 }' "/proc/$DPID/smaps")
	printf '%-30s VmRSS %6d KiB  RssAnon %6d KiB  BPF memlock %5d KiB  (mmapped, in both: %5d KiB)  RSS+BPF %5.1f MiB\n' \
		"$1" "$rss" "$anon" $((ml / 1024)) "$bm" "$(awk -v r="$rss" -v m="$ml" -v b="$bm" 'BEGIN { print ((r - b) * 1024 + m) / 1048576 }')"
}

# What grows with churn, read after a figure (a read of /prof/metrics).
parts() {
	awk '$1 ~ /^proffs_(store_index_bytes|store_series|store_locations|store_stacks|processes_tracked|symbol_cache_bytes|unwind_table_bytes)$/ { printf " %s=%s", substr($1, 8), $2 }
	     END { print "" }' "$W/mp/metrics" | sed 's/^/#/'
}

mkdir -p "$W/mp" "$W/bin"
"$PROFFS" run --store "$W/store" --mount "$W/mp" >"$W/run.log" 2>&1 &
DPID=$!
PIDS+=("$DPID")
for _ in $(seq 100); do [[ -e $W/mp/README ]] && break; sleep 0.1; done
[[ -e $W/mp/README ]] || { cat "$W/run.log"; exit 1; }
log "daemon $DPID up; $(nproc) busy loops, python3, gzip, a fork storm, $NBIN distinct binaries"
for _ in $(seq "$(nproc)"); do "$TB/truth" >/dev/null 2>&1 & PIDS+=($!); done
python3 -c 'import json
while True: json.loads(json.dumps([{"k": i} for i in range(5000)]))' & PIDS+=($!)
(while :; do head -c 50000000 /dev/urandom | gzip -9 >/dev/null; done) & PIDS+=($!)
FORKS=${FORKS:-2000}
((FORKS > 0)) && { "$TB/forker" "$FORKS" 5 >/dev/null 2>&1 & PIDS+=($!); }
# Distinct binaries: fixedwork with 20 bytes of its build id replaced.
off=$(python3 - "$TB/fixedwork" <<'PY'
import sys
d = open(sys.argv[1], 'rb').read()
i = d.find(b'GNU\0', d.find(b'\x03\x00\x00\x00'))
print(i + 4)
PY
)
# MIN_S=SECONDS spreads the binaries over at least that long: the tree's
# size (and the walk's) follows the run's length, which otherwise
# follows how fast this machine copies and starts them.
T0=$SECONDS
for i in $(seq "$NBIN"); do
	ahead=$(( ${MIN_S:-0} * i / NBIN - (SECONDS - T0) ))
	((ahead > 0)) && sleep "$ahead"
	b=$W/bin/job$i
	cp "$TB/fixedwork" "$b"
	printf '%040x' "$i" | xxd -r -p | dd of="$b" bs=1 seek="$off" conv=notrunc status=none
	"$b" 3 >/dev/null
	rm -f "$b"
	# Flat or growing? A figure halfway through the distinct binaries,
	# and what grows with them every tenth of the way.
	((i == NBIN / 2)) && { mem "after $i distinct binaries"; parts; }
	((NBIN >= 10 && i % (NBIN / 10) == 0)) && printf '# %d binaries, %d s:%s\n' "$i" \
		$((SECONDS - T0)) "$(parts | sed 's/^#//')"
done
((FORKS > 0)) && wait "${PIDS[-1]}" 2>/dev/null
sleep "${SETTLE:-12}" # at least one more drain
mem "after churn"
parts
# The walk.
n=0
while IFS= read -r -d '' f; do
	cat "$f" >/dev/null 2>&1 && n=$((n + 1))
done < <(find "$W/mp" -maxdepth 4 -type f -print0 2>/dev/null)
first=$(ls "$W/mp/cpu" | grep -E '^[0-9]{4}-' | head -1)
last=$(ls "$W/mp/cpu" | grep -E '^[0-9]{4}-' | tail -1)
for d in "merged/cpu/last-1h" "merged/cpu/$first..$last" "diff/cpu/$first/vs/$last"; do
	for f in profile.pb folded.txt flamegraph.svg top.txt; do cat "$W/mp/$d/$f" >/dev/null 2>&1 && n=$((n + 1)); done
done
log "walked $n files"
mem "after the walk"
inodes=$(awk '$1 == "proffs_fuse_inodes_held" { print $2 }' "$W/mp/metrics")
log "inodes held after the walk: $inodes"
# Reads have stopped: after FSMOUNT_IDLE_S (5 s) the stores' read caches
# go, the inode table is pruned (fs/fuse/prune.c) and a second later the
# heap trimmed.
sleep 9
mem "reads stopped 9 s"
grep -E '^proffs_(symbol_cache|processes_tracked|store_index_bytes|store_series|store_stacks|store_locations|store_strings|render_cache_bytes|render_cache_file_bytes|fuse_inode|fuse_prunes|unwind_rows|unwind_row_chunks|unwind_map_bytes|unwind_table_bytes)' "$W/mp/metrics" | sed 's/^/# /'
if [[ ${MEM_DETAIL:-0} = 1 ]]; then
	awk '/^[0-9a-f]+-[0-9a-f]+ / { name = $6 == "" ? "[anon]" : $6 }
	     /^Anonymous:/ { a[name] += $2 }
	     END { for (n in a) if (a[n] >= 256) printf "# anon %6d KiB  %s\n", a[n], n }' "/proc/$DPID/smaps" | sort -k3 -rn
	gdb -q -p "$DPID" -batch -ex 'call (void)malloc_stats()' > /dev/null 2>&1
	sleep 0.5
	grep -E '^(Arena|system bytes|in use bytes|Total|max mmap)' "$W/run.log" | sed 's/^/# /'
fi
