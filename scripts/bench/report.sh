# scripts/bench/report.sh - writes BENCHMARKS.md from R and CMD; sourced by
# run.sh. Only measured values are printed; a missing one says so.

bps() { if [[ -n $1 ]]; then ratio "$1" "$S" 2; else echo "not measured"; fi; }

S=${R[gen_samples]}
B_STORE=$(bps "${R[store_bytes]}")
B_PPROF=$(bps "${R[pprof_bytes]}")
B_FOLD=$(bps "${R[folded_bytes]}")
X_PPROF=$(ratio "${R[pprof_bytes]}" "${R[store_bytes]}")
X_FOLD=$(ratio "${R[folded_bytes]}" "${R[store_bytes]}")
PB_MS=${R[cat_hour_profile_median_ms]:-}
FO_MS=${R[cat_hour_folded_median_ms]:-}
PP_MS=${R[pprof_merge_first_ms]:-}
X_PB=$(ratio "$PP_MS" "$PB_MS")
X_FO=$(ratio "$PP_MS" "$FO_MS")
ING=${R[gen_ingest_samples_per_s]:-}
DAY_MS=${R[cat_day_profile_median_ms]:-}

{
cat <<EOF
# proffs benchmarks

Every figure below was measured by \`make bench\` (scripts/bench/run.sh) in
one run; ratios are against baselines measured in that same run. Nothing
here is estimated. Re-run \`make bench\` to regenerate this file.

- date: $(date -u +%Y-%m-%dT%H:%MZ)
- commit: $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)
- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores, $(free -g | awk '/Mem:/ { print $2 }') GiB RAM, Linux $(uname -r)
- scratch filesystem: $(df -T "$W" | awk 'NR == 2 { print $2 }') ($(df "$W" | awk 'NR == 2 { print $1 }'))
- "cold" means: page cache dropped (\`echo 3 > /proc/sys/vm/drop_caches\`) and a fresh process, before every timed run.$( ((CAN_DROP)) || echo ' NOT POSSIBLE here: page cache warm.')

## Workload: a synthetic hour of one busy host

\`tests/tools/bench_gen.c\` (seeded, deterministic): ${R[gen_processes]} processes of 40
executables, ${R[gen_universe_stacks]} stacks of depth 10-60 sharing prefixes (each new stack
forks an existing one of its executable; 35% end in 3-10 kernel frames),
${R[gen_universe_functions]} functions with C, C++, Java and Go-shaped names.
Processes are drawn Zipf(s=1.0), stacks within a process Zipf(s=1.1), the
function of a new frame Zipf(s=1.0). 99 Hz x 2 CPUs, one batch per 10 s.
Series labels: comm, pid, exe (+ node on the store side).

| | value |
|---|---|
| batches | ${R[gen_batches]} |
| samples | $S |
| distinct stacks seen | ${R[gen_distinct_stacks]} |
| distinct (process, stack) pairs | ${R[gen_distinct_process_stacks]} |
| (series, stack) rows per batch, mean | ${R[gen_rows_per_batch]} |

Command: \`${CMD[gen]}\`

## Issue 2: store

### Bytes on disk per raw sample (symbols included)

| stored as | bytes | bytes/sample | vs proffs |
|---|---:|---:|---:|
| proffs store (LMDB dir, \`du -sb\`) | ${R[store_bytes]} | $B_STORE | 1x |
| proffs store, \`mdb_copy -c\` compacted copy | $(v store_compact) | $(bps "${R[store_compact]:-}") | |
| one gzip pprof per batch (${R[pprof_files]} files, what conprof kept) | ${R[pprof_bytes]} | $B_PPROF | ${X_PPROF}x |
| zstd -3 folded text, one stream for the hour | ${R[folded_bytes]} | $B_FOLD | ${X_FOLD}x |

- Goal <= 5 B/sample: **$(goal "$B_STORE" '<=' 5)** ($B_STORE B/sample).
- Goal >= 10x under per-batch gzip pprof: **$(goal "$X_PPROF" '>=' 10)** (${X_PPROF}x).
- Folded text keeps less than the others (no pid, no addresses, no build ids)
  and is shown only as a reference point.

### Rendering the hour: \`merged/cpu/$HOUR_NAME/\`

| what | first (cold) ms | median ms | runs |
|---|---:|---:|---:|
| \`proffs cat\` profile.pb (${R[cat_hour_pb_bytes]} bytes) | $(v cat_hour_profile_first_ms) | $(v cat_hour_profile_median_ms) | $(v cat_hour_profile_runs) |
| \`proffs cat\` folded.txt (${R[cat_hour_folded_bytes]} bytes) | $(v cat_hour_folded_first_ms) | $(v cat_hour_folded_median_ms) | $(v cat_hour_folded_runs) |
| in-process tree__resolve+render profile.pb | $(v inproc__merged_cpu_${HOUR_NAME//[-T]/_}_profile_pb_first_ms) | $(v inproc__merged_cpu_${HOUR_NAME//[-T]/_}_profile_pb_median_ms) | 6 |
| in-process tree__resolve+render folded.txt | $(v inproc__merged_cpu_${HOUR_NAME//[-T]/_}_folded_txt_first_ms) | $(v inproc__merged_cpu_${HOUR_NAME//[-T]/_}_folded_txt_median_ms) | 6 |
| in-process parts: store__merge | $(v inproc_merge_first_ms) | $(v inproc_merge_median_ms) | 6 |
| in-process parts: pprof__encode | $(v inproc_encode_first_ms) | $(v inproc_encode_median_ms) | 6 |
| in-process parts: render__folded | $(v inproc_folded_first_ms) | $(v inproc_folded_median_ms) | 6 |
| baseline \`go tool pprof -proto\` of the ${R[pprof_files]} files | $PP_MS | | 1 |

- Same totals on both sides: ${R[totals_ok]:-not checked}.
- Goal <= 100 ms: profile.pb **$(goal "$PB_MS" '<=' 100)** ($PB_MS ms median cold), folded.txt **$(goal "$FO_MS" '<=' 100)** ($FO_MS ms).
- Goal >= 20x faster than pprof: profile.pb **$(goal "$X_PB" '>=' 20)** (${X_PB}x), folded.txt **$(goal "$X_FO" '>=' 20)** (${X_FO}x).
- The in-process merge produced ${R[inproc_merge_samples]:-?} samples over ${R[inproc_merge_locations]:-?} locations.

Commands:
- \`${CMD[cat_hour_profile]}\`
- \`${CMD[cat_hour_folded]}\`
- \`${CMD[inproc]}\`
- \`${CMD[pprof_merge]}\`

### A 24 h store: \`merged/cpu/$DAY_NAME/\`

EOF
if [[ -n ${R[day_samples]:-} ]]; then
cat <<EOF
${R[day_batches]} batches, ${R[day_samples]} samples, store ${R[day_store_bytes]} bytes ($(ratio "${R[day_store_bytes]}" "${R[day_samples]}" 2) B/sample).

| what | first (cold) ms | median ms | runs |
|---|---:|---:|---:|
| \`proffs cat\` profile.pb (${R[cat_day_pb_bytes]} bytes) | $(v cat_day_profile_first_ms) | $(v cat_day_profile_median_ms) | $(v cat_day_profile_runs) |
| \`proffs cat\` folded.txt | $(v cat_day_folded_first_ms) | $(v cat_day_folded_median_ms) | $(v cat_day_folded_runs) |
| in-process store__merge | $(v dayin_merge_first_ms) | $(v dayin_merge_median_ms) | 4 |
| in-process pprof__encode | $(v dayin_encode_first_ms) | $(v dayin_encode_median_ms) | 4 |

- Goal: full-day merge <= 1 s: **$(goal "$DAY_MS" '<=' 1000)** ($DAY_MS ms, profile.pb, median cold).

Commands: \`${CMD[day]}\`; \`${CMD[cat_day_profile]}\`; \`${CMD[dayin]}\`

EOF
else
	echo "not measured: SKIP_DAY=1"
	echo
fi
cat <<EOF
### Ingest (one core)

| store | samples | append wall s | samples/s (wall) | samples/s (CPU) | slowest append ms |
|---|---:|---:|---:|---:|---:|
| the hour (fresh store) | $S | $(v gen_append_wall_s) | $(v gen_ingest_samples_per_s) | $(v gen_ingest_samples_per_cpu_s) | $(v gen_append_max_ms) |
| the 24 h store | $(v day_samples) | $(v day_append_wall_s) | $(v day_ingest_samples_per_s) | $(v day_ingest_samples_per_cpu_s) | $(v day_append_max_ms) |

Only \`store__append\` is timed (building the batch's profile is the
sampler's work, not the store's); wall includes LMDB's commit and fsync.
- Goal >= 1 M samples/s: **$(goal "$ING" '>=' 1000000)** ($ING samples/s).

## Issue 3: the mount

EOF
if ((MOUNT_OK)); then
	FB=${R[fb_median_ms]:-}
	X_CACHE=$(ratio "${R[cached_median_ms]:-}" "${R[tmpfs_median_ms]:-}" 2)
cat <<EOF
| what | figure | goal |
|---|---|---|
| readdir of \`cpu/\` holding a week of minutes (${R[ls_week_entries]:-?} entries, ${R[ls_week_minutes]:-?} minutes): first = fresh mount, page cache dropped | first $(v ls_week_first_ms) ms, median of 5 $(v ls_week_median_ms) ms | <= 50 ms: first **$(goal "${R[ls_week_first_ms]:-}" '<=' 50)**, later **$(goal "${R[ls_week_median_ms]:-}" '<=' 50)** |
| \`ls\` of the same directory (process start and sort included) | first $(v ls_cmd_week_first_ms) ms, median $(v ls_cmd_week_median_ms) ms | <= 50 ms: **$(goal "${R[ls_cmd_week_median_ms]:-}" '<=' 50)** |
| reference: \`ls\` of a tmpfs directory with the same names | first $(v ls_cmd_tmpfs_first_ms) ms, median $(v ls_cmd_tmpfs_median_ms) ms | |
| first byte of a 1-minute profile.pb, cold (10 minutes) | first $(v fb_first_ms) ms, median $FB ms, max $(v fb_max_ms) ms | <= 20 ms: **$(goal "$FB" '<=' 20)** |
| cached read of \`${R[cached_file]:-?}\` (${R[cached_bytes]:-?} bytes) | median $(v cached_median_ms) ms ($(v cached_median_MBps) MB/s) | |
| the same bytes from tmpfs | median $(v tmpfs_median_ms) ms ($(v tmpfs_median_MBps) MB/s) | mount/tmpfs = ${X_CACHE}x, <= 2x: **$(goal "$X_CACHE" '<=' 2)** |
| parallel readers, 1 | $(v par1_renders_per_s) renders/s ($(v par1_files) files, $(v par1_errors) errors) | |
| parallel readers, 4 | $(v par4_renders_per_s) renders/s ($(v par4_files) files, $(v par4_errors) errors) | |
| parallel readers, 16 | $(v par16_renders_per_s) renders/s ($(v par16_files) files, $(v par16_errors) errors) | |

Commands (\$MNT = \`proffs mount --store DIR \$MNT\` on a fresh mktemp -d):
- week store: \`${CMD[week]}\`; \`${CMD[ls_week]}\`; \`${CMD[ls_cmd_week]}\`
- \`${CMD[fb]}\`
- \`${CMD[cached]:-}\` vs \`${CMD[tmpfs]:-}\`
- \`${CMD[par1]:-}\` (and 4, 16 readers, each with its own list so every read renders)

EOF
else
	echo "not measured: \`proffs mount\` is not available in this build (or SKIP_MOUNT=1)."
	echo
fi
echo "## Where the time goes (perf, same run)"
echo
echo "Top of \\`perf report --children\\` (share of samples under each function; ours"
echo "and the libraries'), for the figures above."
for p in hour_render day_render ingest; do
	[[ -s $W/perf.$p.txt ]] || continue
	echo
	echo "$p: \`${CMD[perf_$p]}\`"
	echo
	echo '```'
	cat "$W/perf.$p.txt"
	echo '```'
done
echo
if [[ -f $ROOT/scripts/bench/NOTES.md ]]; then
	cat "$ROOT/scripts/bench/NOTES.md"
fi
} > "$OUT"
