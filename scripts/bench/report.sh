# scripts/bench/report.sh - writes BENCHMARKS.md from R and CMD; sourced by
# run.sh. Only measured values are printed; a missing one says so.

bps() { if [[ -n $1 ]]; then ratio "$1" "$S" 2; else echo "not measured"; fi; }

S=${R[gen_samples]}
HK=${HOUR_NAME//[-T]/_} # bench_render's key for the hour's paths
B_PPROF=$(bps "${R[pprof_bytes]}")
B_FOLD=$(bps "${R[folded_bytes]}")
PP_MS=${R[pprof_merge_first_ms]:-}
ING=${R[gen_ingest_samples_per_s]:-}
DAY_MS=${R[cat_day_profile_median_ms]:-}

# size_rows PREFIX LABEL: the store rows of the bytes table.
size_rows() {
	local b=${R[$1_bytes]:-}
	echo "| proffs store, $2 (\`du -sb\` of the dir) | $b | $(bps "$b") | $(ratio "${R[pprof_bytes]}" "$b")x | $(ratio "${R[folded_bytes]}" "$b")x |"
	echo "| proffs store, $2, \`mdb_copy -c\` compacted copy | $(v $1_compact) | $(bps "${R[$1_compact]:-}") | $(ratio "${R[pprof_bytes]}" "${R[$1_compact]:-}")x | |"
}

# render_rows PREFIX LABEL: the rows of the render table.
render_rows() {
	local p=$1 l=$2
	echo "| $l: \`proffs cat\` profile.pb (${R[${p}_cat_profile_bytes]:-?} bytes) | $(v ${p}_cat_profile_first_ms) | $(v ${p}_cat_profile_median_ms) | $(ratio "$PP_MS" "${R[${p}_cat_profile_median_ms]:-}")x |"
	echo "| $l: \`proffs cat\` folded.txt (${R[${p}_cat_folded_bytes]:-?} bytes) | $(v ${p}_cat_folded_first_ms) | $(v ${p}_cat_folded_median_ms) | $(ratio "$PP_MS" "${R[${p}_cat_folded_median_ms]:-}")x |"
	echo "| $l: in-process tree__resolve + tree__render, profile.pb | $(v ${p}_in__merged_cpu_${HK}_profile_pb_first_ms) | $(v ${p}_in__merged_cpu_${HK}_profile_pb_median_ms) | |"
	echo "| $l: in-process tree__resolve + tree__render, folded.txt | $(v ${p}_in__merged_cpu_${HK}_folded_txt_first_ms) | $(v ${p}_in__merged_cpu_${HK}_folded_txt_median_ms) | |"
	echo "| $l: in-process parts: store__merge | $(v ${p}_in_merge_first_ms) | $(v ${p}_in_merge_median_ms) | |"
	echo "| $l: in-process parts: pprof__encode | $(v ${p}_in_encode_first_ms) | $(v ${p}_in_encode_median_ms) | |"
	echo "| $l: in-process parts: render__folded | $(v ${p}_in_folded_first_ms) | $(v ${p}_in_folded_median_ms) | |"
}

# Sections of other scripts kept between runs: each sits between
# "<!-- section:NAME -->" and "<!-- end:NAME -->" in BENCHMARKS.md. A run
# that measured NAME writes its fresh section (notes written by hand into
# the old one go with the old figures); one that did not (SKIP_EXTRA=1, or
# a section no script writes, e.g. compare.sh's) carries the old one over.
PREV_SECTIONS=()
if [[ -f $OUT ]]; then
	mkdir -p "$W/prev"
	awk -v d="$W/prev" '
		/^<!-- section:[a-z0-9_-]+ -->$/ { n = $2; sub(/^section:/, "", n); f = d "/" n ".md"; printf "" > f; next }
		/^<!-- end:[a-z0-9_-]+ -->$/ { close(f); f = ""; next }
		f != "" { print >> f }' "$OUT"
	for f in "$W"/prev/*.md; do [[ -e $f ]] && PREV_SECTIONS+=("$(basename "$f" .md)"); done
fi
section() { # NAME FILE
	echo
	echo "<!-- section:$1 -->"
	cat "$2"
	echo "<!-- end:$1 -->"
}

{
cat <<EOF
# proffs benchmarks

Every figure below was measured by \`make bench\` (scripts/bench/run.sh) in
one run; ratios are against baselines measured in that same run. Nothing
here is estimated. Re-run \`make bench\` to regenerate this file.

- command: \`make bench\` = \`scripts/bench/run.sh\` with BUILD=$(shortcmd "$BUILD") (binaries of that build; tools in tests/tools/bench_*.c)
- date: ${R[date]}
- commit: ${R[commit]} (\`git describe --dirty\` of the tree the binaries were built from)
- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores, $(free -g | awk '/Mem:/ { print $2 }') GiB RAM, Linux $(uname -r)
- load average (1, 5, 15 min) at start: ${R[load_start]}, at end: ${R[load_end]} (other work on the machine skews timings upward)
- scratch filesystem: $(df -T "$W" | awk 'NR == 2 { print $2 }') ($(df "$W" | awk 'NR == 2 { print $1 }')), one 4 KiB write with O_DSYNC: ${R[dsync_ms]:-?} ms (dd, mean of 200)
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

"raw" is the store right after the hour's last batch; "closed" is the same
store once one more batch (1 sample, at the hour's end) has arrived, which
makes the store build the hour's rollup, as a running daemon's store is ten
seconds after the hour. Bytes/sample divide by the hour's $S samples.

| stored as | bytes | bytes/sample | pprof files / this | zstd folded / this |
|---|---:|---:|---:|---:|
$(size_rows raw "raw")
$(size_rows closed "closed (rollup built)")
| one gzip pprof per batch (${R[pprof_files]} files, what conprof kept) | ${R[pprof_bytes]} | $B_PPROF | 1x | |
| zstd -3 folded text, one stream for the hour | ${R[folded_bytes]} | $B_FOLD | | 1x |

- Goal <= 5 B/sample: raw **$(goal "$(bps "${R[raw_bytes]:-}")" '<=' 5)**, closed **$(goal "$(bps "${R[closed_bytes]:-}")" '<=' 5)**.
- Goal >= 10x under per-batch gzip pprof: raw **$(goal "$(ratio "${R[pprof_bytes]}" "${R[raw_bytes]:-}")" '>=' 10)**, closed **$(goal "$(ratio "${R[pprof_bytes]}" "${R[closed_bytes]:-}")" '>=' 10)**.
- Per-batch pprof files are gzip level 6 of \`pprof__encode\`'s output (as Go's
  runtime/pprof writes them), mean $(ratio "${R[pprof_bytes]}" "${R[pprof_files]}" 0) bytes per file.
- Folded text keeps less than the others (no pid, no exe, no addresses, no
  build ids) and is shown only as a reference point.

Where the store's bytes go, closed hour (\`mdb_stat -a\`, 4 KiB pages per database):

$(cat "$W/dbsizes.closed.md" 2>/dev/null || echo "not measured: mdb_stat missing")

### Rendering the hour: \`merged/cpu/$HOUR_NAME/\`

| what | first (cold) ms | median ms | pprof / this (median) |
|---|---:|---:|---:|
$(render_rows raw "raw")
$(render_rows closed "closed")
$(render_rows imported "imported (\`proffs import\` of the ${R[pprof_files]} files, ${R[import_first_ms]:-?} ms)")
| closed: \`proffs cat\` profile.pb, page cache warm (fresh process) | $(v closed_warm_cat_profile_first_ms) | $(v closed_warm_cat_profile_median_ms) | $(ratio "$PP_MS" "${R[closed_warm_cat_profile_median_ms]:-}")x |
| for scale: \`proffs version\`, cold (process start-up alone) | $(v startup_first_ms) | $(v startup_median_ms) | |
| baseline \`go tool pprof -proto\` merging the ${R[pprof_files]} files | $PP_MS | | 1x |

- \`proffs cat\` rows: 5 runs, each a fresh process with the page cache
  dropped. In-process rows (\`bench_render\`): 6 runs in one process on a
  store opened once, page cache dropped before; "first" of the profile.pb
  row is the process's first render (no in-process cache warm). The
  "parts" rows run after those renders, with the store's caches warm.
- Same totals on both sides: ${R[totals_ok]:-not checked}.
- Goal <= 100 ms (closed, median): profile.pb **$(goal "${R[closed_cat_profile_median_ms]:-}" '<=' 100)** (page cache warm: **$(goal "${R[closed_warm_cat_profile_median_ms]:-}" '<=' 100)**), folded.txt **$(goal "${R[closed_cat_folded_median_ms]:-}" '<=' 100)**; raw: profile.pb **$(goal "${R[raw_cat_profile_median_ms]:-}" '<=' 100)**, folded.txt **$(goal "${R[raw_cat_folded_median_ms]:-}" '<=' 100)**.
- Goal >= 20x faster than pprof (closed, median): profile.pb **$(goal "$(ratio "$PP_MS" "${R[closed_cat_profile_median_ms]:-}")" '>=' 20)**, folded.txt **$(goal "$(ratio "$PP_MS" "${R[closed_cat_folded_median_ms]:-}")" '>=' 20)**; raw: profile.pb **$(goal "$(ratio "$PP_MS" "${R[raw_cat_profile_median_ms]:-}")" '>=' 20)**, folded.txt **$(goal "$(ratio "$PP_MS" "${R[raw_cat_folded_median_ms]:-}")" '>=' 20)**.
- Imported data as fast as sampled (issue 26: within 1.5x of the closed hour, >= 200x pprof; median):
  profile.pb $(ratio "${R[imported_cat_profile_median_ms]:-}" "${R[closed_cat_profile_median_ms]:-}" 2)x the closed hour's
  (**$(goal "$(ratio "${R[imported_cat_profile_median_ms]:-}" "${R[closed_cat_profile_median_ms]:-}" 2)" '<=' 1.5)**),
  $(ratio "$PP_MS" "${R[imported_cat_profile_median_ms]:-}")x pprof (**$(goal "$(ratio "$PP_MS" "${R[imported_cat_profile_median_ms]:-}")" '>=' 200)**);
  same totals as pprof's merge: ${R[imported_totals]:-not checked}.
- The merged hour holds ${R[closed_in_merge_samples]:-?} samples over ${R[closed_in_merge_locations]:-?} locations.

Commands:
- \`${CMD[close]}\`
- \`${CMD[closed_cat_profile]}\` (and folded.txt)
- \`${CMD[closed_in]}\`
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
| a second hour into the hour's store (steady state: symbols known) | $(v steady_samples) | $(v steady_append_wall_s) | $(v steady_ingest_samples_per_s) | $(v steady_ingest_samples_per_cpu_s) | $(v steady_append_max_ms) |
| the 24 h store (built on tmpfs: no fsync cost) | $(v day_samples) | $(v day_append_wall_s) | $(v day_ingest_samples_per_s) | $(v day_ingest_samples_per_cpu_s) | $(v day_append_max_ms) |

Commands: \`${CMD[gen]}\`; \`${CMD[steady]:-}\`; \`${CMD[day]:-}\`

Only \`store__append\` is timed (building the batch's profile is the
sampler's work, not the store's); wall includes LMDB's commit and fsync.
- Goal >= 1 M samples/s (wall, on disk): fresh store **$(goal "$ING" '>=' 1000000)** ($ING samples/s), steady state **$(goal "${R[steady_ingest_samples_per_s]:-}" '>=' 1000000)** ($(v steady_ingest_samples_per_s) samples/s).

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
| first byte of a 1-minute profile.pb, cold (fresh mount, page cache dropped, 10 minutes never read) | first $(v fb_first_ms) ms, median $FB ms, max $(v fb_max_ms) ms | <= 20 ms: **$(goal "$FB" '<=' 20)** |
| the same for 10 other minutes right after (page cache warm, renders not cached) | first $(v fbw_first_ms) ms, median $(v fbw_median_ms) ms, max $(v fbw_max_ms) ms | |
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
echo "Top of \`perf report --children\` (share of samples under each function; ours"
echo "and the libraries'), for the figures above."
ls "$W"/perf.*.txt >/dev/null 2>&1 || echo "not measured: PERF=0 or perf missing."
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
for n in "${EXTRA[@]}"; do
	section "$n" "$W/extra.$n.md"
done
for n in "${PREV_SECTIONS[@]}"; do
	[[ " ${EXTRA[*]} " == *" $n "* || $n == history ]] && continue
	section "$n" "$W/prev/$n.md"
done
# The history (how figures came to be, stop by stop): written by hand,
# never measured, always last.
[[ -f $W/prev/history.md ]] && section history "$W/prev/history.md"
} > "$OUT.new" && mv "$OUT.new" "$OUT"
