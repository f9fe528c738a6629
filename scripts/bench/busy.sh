#!/usr/bin/env bash
# scripts/bench/busy.sh - the daemon and its reads on a busy host (issue 26).
#
# `proffs run --hz 99 --offcpu` for BUSY_MIN minutes (default 15) while
# both cores stay busy with the tests' own workloads: a fork storm (a new
# short process every ~50 ms of CPU), Debian's python3, gzip -9 and a
# sha256sum loop, python threads, a 150-deep recursion, off-CPU waiters
# and two spinners pinned one to each CPU. With the load still running:
#   - the daemon's CPU over CPU_S seconds (60; its threads' schedstat, in
#     ns) and its memory: RssAnon, RssFile, VmHWM and the BPF maps'
#     memlock, and VmHWM again once the reads below are done;
#   - reads through the mount of merged/cpu/last-15m/ (profile.pb,
#     folded.txt): the first one with the page cache dropped, then three
#     more, each once the daemon has stored another batch (the window's
#     data changed: each renders again, its complete minutes kept);
#   - the baseline, same run: `go tool pprof -proto` merging the same
#     minutes' profile.pb files (copied out of the tree first);
#   - `perf record -g` of the daemon while it renders, its top functions.
# Prints a Markdown section on stdout. Needs root and `make all`.
# Env: BUILD (default build), BUSY_MIN (15), HZ (99), CPU_S (60), BUSY_KEEP
# (a directory: the run's store is copied there at the end, for a look
# at the renders afterwards).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/bench/lib.sh"
BUSY_MIN=${BUSY_MIN:-15}
HZ=${HZ:-99}
BENCH_KILL_GROUPS=1 # the fork storm's and the loops' children die with them
bench_init busy
bench_need "$PROFFS" "$TB/forker" "$TB/deep" "$TB/offcpu_truth" "$TB/truth_nofp" /usr/bin/python3 /usr/bin/gzip
command -v go >/dev/null || { echo "bench: go is needed for the baseline" >&2; exit 1; }
MP=$W/mp
mkdir -p "$MP"
DAEMON=
bench_more_cleanup() {
	if [[ -n $DAEMON ]]; then
		kill -TERM "$DAEMON" 2>/dev/null || true
		wait "$DAEMON" 2>/dev/null || true
	fi
}

# load NAME CMD...: starts CMD in a process group of its own (the fork
# storm's and the loops' children die with it).
load() {
	local name=$1
	shift
	setsid "$@" >"$W/load.$name.out" 2>&1 &
	PIDS+=($!)
}

SECS=$((BUSY_MIN * 60 + 120))
log "busy: daemon at $HZ Hz with --offcpu, load for $BUSY_MIN min"
# In a session of its own, as systemd starts it (setsid execs it: $! is
# the daemon): the load's programs each lead a session too.
setsid "$PROFFS" run --store "$W/store" --mount "$MP" --hz "$HZ" --offcpu >"$W/daemon.log" 2>&1 &
DAEMON=$!
for i in $(seq 100); do grep -q " $MP " /proc/mounts && break; sleep 0.1; done
grep -q " $MP " /proc/mounts || { echo "bench: the daemon did not mount: $(tail -2 "$W/daemon.log")" >&2; exit 1; }
T0=$(date +%s)
FORKS0=$(awk '$1 == "processes" { print $2 }' /proc/stat)
set_kv load_start "$(cut -d' ' -f1-3 /proc/loadavg)"

cat >"$W/loop.py" <<'PY'
import json, sys, time
t0 = time.time()
d = {"a": list(range(200)), "b": {"x": "y" * 50}}
while time.time() - t0 < float(sys.argv[1]):
    json.loads(json.dumps(d))
PY
head -c 50000000 /dev/urandom >"$W/hashme"
load forker "$TB/forker" 1000000 50 fkbusy
load python /usr/bin/python3 "$W/loop.py" "$SECS"
load gzip sh -c "gzip -9 </dev/urandom >/dev/null"
load sha sh -c "while :; do sha256sum '$W/hashme' >/dev/null; done"
load threads /usr/bin/python3 "$ROOT/tests/helpers/py_threads.py" "$SECS"
load deep "$TB/deep" 150 "$SECS"
load waits "$TB/offcpu_truth" waits "$SECS"
load sleeper "$TB/offcpu_truth" sleeper "$SECS"
load spin0 taskset -c 0 "$TB/truth_nofp" "$SECS"
load spin1 taskset -c 1 "$TB/truth_nofp" "$SECS"

sleep $((BUSY_MIN * 60))
set_kv load_mid "$(cut -d' ' -f1-3 /proc/loadavg)"
# (the kernel's count of forks since boot: the last pid wraps at pid_max)
set_kv pids "$(($(awk '$1 == "processes" { print $2 }' /proc/stat) - FORKS0))"

# --- the daemon's CPU and memory, load still running ---
CPU_S=${CPU_S:-60}
k0=$(cpu_ns "$DAEMON"); t0=$EPOCHREALTIME
sleep "$CPU_S"
k1=$(cpu_ns "$DAEMON"); t1=$EPOCHREALTIME
set_kv cpu_pct "$(awk -v a0="$k0" -v a1="$k1" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", 100 * (a1 - a0) / 1e9 / (b - a) }')"
mem() { awk -v k="$1" '$1 == k":" { print $2 }' "/proc/$DAEMON/status"; }
set_kv rss_anon_kib "$(mem RssAnon)"
set_kv rss_file_kib "$(mem RssFile)"
set_kv hwm_kib "$(mem VmHWM)"
set_kv bpf_kib "$(($(bpf_memlock "$DAEMON") / 1024))"
set_kv bpf_largest "$(bpf_largest "$DAEMON" 6)"
cp "$MP/metrics" "$W/metrics" 2>/dev/null || true
set_kv procs "$(awk '$1 == "proffs_processes_tracked" { print $2 }' "$W/metrics")"
set_kv samples "$(awk '$1 == "proffs_samples_total" { print $2 }' "$W/metrics")"
set_kv offcpu_rate "$(awk -v s=$(($(date +%s) - T0)) '$1 == "proffs_offcpu_samples_total" { printf "%.0f", $2 / s }' "$W/metrics")"
set_kv offcpu_lost "$(awk '/^proffs_offcpu_lost_total/ { s += $2 } END { print s + 0 }' "$W/metrics")"
set_kv lost "$(awk '/^proffs_lost_samples_total/ { s += $2 } END { print s + 0 }' "$W/metrics")"

# --- reads of the last 15 minutes, load still running ---
# A later read comes after the daemon stored another batch (its mark
# moved): the window's data changed, so it renders again; what it may
# skip is the window's complete minutes.
mark() { awk '$1 == "proffs_stored_until_seconds" { print $2 }' "$MP/metrics"; }
next_batch() {
	local m0 i
	m0=$(mark)
	for i in $(seq 600); do
		sleep 0.1
		[[ $(mark) != "$m0" ]] && return 0
	done
	log "busy: no batch stored in 60 s"
}
opens() { awk '$1 == "proffs_open_window_kept_total" { print $2 }' "$MP/metrics"; }
D=$MP/merged/cpu/last-15m
for f in profile.pb folded.txt; do
	time_cmd "read_${f%%.*}" 1 cold "$W/first.$f" cat "$D/$f"
	k0=$(opens)
	TIME_BEFORE=next_batch time_cmd "again_${f%%.*}" 3 warm "$W/again.$f" cat "$D/$f"
	set_kv "kept_${f%%.*}" "$(($(opens) - k0))"
	set_kv "bytes_${f%%.*}" "$(stat -c %s "$W/again.$f")"
done
# The same minutes under another name, so rendered anew, with the page
# cache warm as it is for the baseline below: the render without the disk.
nowm=$(($(date +%s) / 60 * 60))
RW="$(date -u -d "@$((nowm - 840))" +%Y-%m-%dT%H:%M)..$(date -u -d "@$((nowm + 60))" +%Y-%m-%dT%H:%M)"
time_cmd warm_profile 1 warm "$W/warm.pb" cat "$MP/merged/cpu/$RW/profile.pb"
# The reader's own floor: the same bytes as a plain file in the page
# cache, no FUSE, no render. No read of the tree can be faster than this.
cp "$W/warm.pb" "$W/plain.pb"
cat "$W/plain.pb" >/dev/null
TIME_BEFORE="sleep 0.5" time_cmd floor 5 warm "$W/floor.out" cat "$W/plain.pb"
# perf of the daemon during two more renders.
if command -v perf >/dev/null; then
	perf record -q -g -p "$DAEMON" -o "$W/perf.data" -- sleep 8 2>/dev/null &
	PP=$!
	sleep 1
	cat "$D/profile.pb" >/dev/null
	cat "$D/folded.txt" >/dev/null
	wait "$PP" || true
	perf report -i "$W/perf.data" --no-children --stdio -g none --percent-limit 2 2>/dev/null |
		grep -E '^ +[0-9]' | awk '{ $2 = ""; $3 = ""; print }' | head -25 >"$W/perf.txt" || true
fi

# The peak and the heap once the reads are done: a render's buffers and
# the store pages it touched are part of what the daemon needs.
set_kv hwm_after_kib "$(mem VmHWM)"
set_kv rss_anon_after_kib "$(mem RssAnon)"

# --- the baseline: the same minutes' files merged by go tool pprof ---
now=$(date +%s)
files=()
for ((m = (now - 900) / 60 * 60; m <= now; m += 60)); do
	n=$(date -u -d "@$m" +%Y-%m-%dT%H:%M)
	cp "$MP/cpu/$n/profile.pb" "$W/min.$n.pb" 2>/dev/null && [[ -s $W/min.$n.pb ]] && files+=("$W/min.$n.pb")
done
set_kv pprof_files "${#files[@]}"
time_cmd pprof 1 warm "$W/pprof.pb" go tool pprof -proto -symbolize=none "${files[@]}"
CMD[pprof]="go tool pprof -proto -symbolize=none \$W/min.*.pb (the ${#files[@]} minutes' profile.pb, copied out of the tree)"

set_kv load_end "$(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -n ${BUSY_KEEP:-} ]]; then
	mkdir -p "$BUSY_KEEP"
	mdb_copy "$W/store" "$BUSY_KEEP" && log "busy: the store is copied to $BUSY_KEEP"
fi
for p in "${PIDS[@]}"; do kill -- "-$p" 2>/dev/null || true; done

cat <<EOF
## A busy host (issue 26): scripts/bench/busy.sh

\`proffs run --hz $HZ --offcpu\` for $BUSY_MIN minutes while both cores stay busy: a fork storm
(\`forker 1000000 50\`: a short process per 50 ms of CPU), Debian's python3 (json loop), gzip -9,
a sha256sum loop, python threads (tests/helpers/py_threads.py), a 150-deep recursion, off-CPU
waiters and a sleeper (offcpu_truth), and truth_nofp pinned to each CPU. Load average at the
start $(v load_start), after $BUSY_MIN min $(v load_mid), at the end $(v load_end);
$(v pids) processes started in $BUSY_MIN minutes. Date $(date -u +%Y-%m-%dT%H:%MZ), commit
$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown), host $(nproc) CPUs.
Everything below is measured with the load still running.

| figure | value | goal |
|---|---|---|
| first read of \`merged/cpu/last-15m/profile.pb\` ($(v bytes_profile) bytes), page cache dropped | $(v read_profile_first_ms) ms | <= 200 ms: $(goal "$(v read_profile_first_ms)" "<=" 200) |
| first read of \`merged/cpu/last-15m/folded.txt\` ($(v bytes_folded) bytes) | $(v read_folded_first_ms) ms | <= 200 ms: $(goal "$(v read_folded_first_ms)" "<=" 200) |
| later reads, each after the daemon stored a new batch, median of 3: profile.pb / folded.txt (best: $(v again_profile_min_ms) / $(v again_folded_min_ms) ms; complete minutes kept in $(v kept_profile) / $(v kept_folded) of 3) | $(v again_profile_median_ms) / $(v again_folded_median_ms) ms | <= 100 ms: $(goal "$(v again_profile_median_ms)" "<=" 100) / $(goal "$(v again_folded_median_ms)" "<=" 100) |
| \`go tool pprof -proto\` over the same $(v pprof_files) minutes' profile.pb | $(v pprof_first_ms) ms | |
| pprof -proto / first read of profile.pb | $(ratio "$(v pprof_first_ms)" "$(v read_profile_first_ms)")x | >= 200x: $(goal "$(ratio "$(v pprof_first_ms)" "$(v read_profile_first_ms)")" ">=" 200) |
| first render of the same minutes as \`merged/cpu/$RW/profile.pb\`, page cache warm as for pprof | $(v warm_profile_first_ms) ms (pprof / it: $(ratio "$(v pprof_first_ms)" "$(v warm_profile_first_ms)")x) | reported |
| the reader's floor: \`cat\` of the same bytes as a plain file in the page cache, median of 5 (best) | $(v floor_median_ms) ms ($(v floor_min_ms) ms): pprof / it $(ratio "$(v pprof_first_ms)" "$(v floor_median_ms)")x | reported: no read can beat it |
| daemon CPU over $CPU_S s (its threads' schedstat) | $(v cpu_pct)% of one core | <= 0.3%: $(goal "$(v cpu_pct)" "<=" 0.3) |
| RssAnon + BPF maps (memlock) | $(v rss_anon_kib) + $(v bpf_kib) KiB = $(( ($(v rss_anon_kib) + $(v bpf_kib)) / 1024 )) MiB | <= 32 MB: $(goal $(( ($(v rss_anon_kib) + $(v bpf_kib)) * 1024 )) "<=" 32000000) |
| BPF maps, the largest | $(v bpf_largest) | reported |
| RssAnon after the reads | $(v rss_anon_after_kib) KiB | reported |
| VmHWM (peak resident) before the reads / after them | $(v hwm_kib) / $(v hwm_after_kib) KiB | <= 48 MB: $(goal $(( $(v hwm_after_kib) * 1024 )) "<=" 48000000) |
| RssFile (LMDB, the render cache file: page cache) | $(v rss_file_kib) KiB | reported |
| processes tracked / samples so far / lost | $(v procs) / $(v samples) / $(v lost) | |
| off-CPU blocks stored per second / lost | $(v offcpu_rate) / $(v offcpu_lost) | |

Commands: \`$(shortcmd "${CMD[read_profile]}")\` (cold), \`$(shortcmd "${CMD[again_profile]}")\` x3, each after a new batch;
baseline \`${CMD[pprof]}\`. Memory from /proc/PID/status and the BPF maps' fdinfo memlock.

perf record -g of the daemon during a read of each file (self time, top functions):

\`\`\`
$(cat "$W/perf.txt" 2>/dev/null || echo "perf not available")
\`\`\`
EOF
