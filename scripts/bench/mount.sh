# scripts/bench/mount.sh - the mount benchmarks of issue 3, sourced by
# run.sh (uses its W, PROFFS, TB, R, MNT, MNT_PID and cleanup trap).
# Every mount is on a fresh mktemp -d mountpoint; run.sh's EXIT trap
# unmounts and kills the one proffs it started if we stop half-way.

mount_store() { # DIR
	MNT=$(mktemp -d /tmp/proffs-bench-mnt.XXXXXX)
	"$PROFFS" mount --store "$1" "$MNT" 2> "$W/mount.log" &
	MNT_PID=$!
	local i
	for ((i = 0; i < 100; i++)); do
		mountpoint -q "$MNT" && return 0
		kill -0 "$MNT_PID" 2>/dev/null || break
		sleep 0.1
	done
	log "mount of $1 failed: $(tail -3 "$W/mount.log")"
	return 1
}

umount_store() {
	fusermount3 -u -z "$MNT" 2>/dev/null || true
	kill "$MNT_PID" 2>/dev/null || true
	wait "$MNT_PID" 2>/dev/null || true
	rmdir "$MNT" 2>/dev/null || true
	MNT=""
	MNT_PID=""
}

# fs_kv PREFIX ARGS...: bench_fsread ARGS, results into R[PREFIX_*].
fs_kv() {
	local p=$1
	shift
	run_kv "$p" "$TB/bench_fsread" "$@"
	CMD[$p]="${CMD[$p]//$MNT/\$MNT}"
}

# --- ls of a type directory holding a week of minutes
if mount_store "$W/week"; then
	drop_caches
	fs_kv ls_week ls "$MNT/cpu" 5
	time_cmd ls_cmd_week 5 warm "$W/ls.out" ls "$MNT/cpu"
	CMD[ls_cmd_week]="ls \$MNT/cpu"
	set_kv ls_week_minutes "$(grep -c '^[0-9]\{4\}-' "$W/ls.out" || true)"
	umount_store
	# Reference: ls of a tmpfs directory holding the same names, to show
	# what ls itself costs (start-up, sorting 10k names).
	LSREF=$(mktemp -d /dev/shm/proffs-bench-ls.XXXXXX)
	(cd "$LSREF" && xargs mkdir -p < "$W/ls.out")
	time_cmd ls_cmd_tmpfs 5 warm "$W/ls.ref" ls "$LSREF"
	CMD[ls_cmd_tmpfs]="ls /dev/shm/DIR (same names)"
	rm -rf "$LSREF"
fi

# --- the rest on the 24 h store (or the hour if the day was skipped)
if [[ -d $W/day ]]; then RS=$W/day RS_START=$DAY RS_MIN=1440; else RS=$W/hour RS_START=$HOUR RS_MIN=60; fi
minute_name() { date -u -d "@$1" +%Y-%m-%dT%H:%M; }

if mount_store "$RS"; then
	# First byte of a 1-minute profile.pb, cold: a fresh mount, page cache
	# dropped, ten minutes never read before.
	files=()
	for ((i = 0; i < 10; i++)); do
		files+=("$MNT/cpu/$(minute_name $(( RS_START + (1 + i * (RS_MIN - 2) / 10) * 60 )))/profile.pb")
	done
	drop_caches
	fs_kv fb first-byte "${files[@]}"
	CMD[fb]="bench_fsread first-byte \$MNT/cpu/<10 distinct minutes>/profile.pb"
	# The same for ten other minutes, page cache as the first pass left it:
	# the render without the disk reads.
	files=()
	for ((i = 0; i < 10; i++)); do
		files+=("$MNT/cpu/$(minute_name $(( RS_START + (2 + i * (RS_MIN - 2) / 10) * 60 )))/profile.pb")
	done
	fs_kv fbw first-byte "${files[@]}"

	# Cached cat of the merged file closest to 5 MB vs the same bytes on tmpfs.
	best="" bestd=""
	for f in "$MNT/merged/cpu/$(date -u -d "@$RS_START" +%Y-%m-%d)"/{profile.pb,folded.txt,flamegraph.svg} \
		 "$MNT/merged/cpu/$(date -u -d "@$RS_START" +%Y-%m-%dT%H)"/{profile.pb,folded.txt,flamegraph.svg}; do
		sz=$(stat -c %s "$f" 2>/dev/null) || continue
		d=$(( sz > 5000000 ? sz - 5000000 : 5000000 - sz ))
		if [[ -z $bestd ]] || ((d < bestd)); then best=$f bestd=$d; fi
	done
	if [[ -n $best ]]; then
		SHM=$(mktemp -d /dev/shm/proffs-bench.XXXXXX)
		cat "$best" > "$SHM/copy"     # renders it into the cache
		fs_kv cached read "$best" 20
		fs_kv tmpfs read "$SHM/copy" 20
		rm -rf "$SHM"
		set_kv cached_file "${best#$MNT}"
		CMD[cached]="bench_fsread read \$MNT${best#$MNT} 20"
		CMD[tmpfs]="bench_fsread read /dev/shm/copy 20"
	fi

	# Parallel readers: each file is a distinct range, so each read is a
	# render (no cache hit); one list per reader count.
	# Window lengths differ per run only so the paths differ (no cache
	# hits across runs); each pair averages 30 minutes, so the work per
	# render is the same in every run.
	declare -A lens=([1]="20 40" [4]="21 39" [16]="19 41")
	for n in 1 4 16; do
		list=$W/paths.$n
		for ((k = 0; k < RS_MIN; k++)); do
			for len in ${lens[$n]}; do
				a=$(( RS_START + k * 60 ))
				echo "@$a @$(( a + len * 60 ))"
			done
		done | shuf --random-source=<(yes) |
			while read -r a b; do echo "$a"; echo "$b"; done |
			date -u -f - +%Y-%m-%dT%H:%M | paste -d' ' - - |
			awk -v m="$MNT" '{ printf "%s/merged/cpu/%s..%s/profile.pb\n", m, $1, $2 }' > "$list"
		fs_kv "par$n" parallel "$n" 8 "$list"
		CMD[par$n]="bench_fsread parallel $n 8 LIST (distinct merged/cpu/A..B/profile.pb, windows of ${lens[$n]// / and } minutes)"
	done
	umount_store
fi
