# mount_lib.bash - shared by the tests/integration/mount_*.sh scripts
# (sourced, not run: the runner only runs *.sh). Gives each test its own
# work dir and mountpoints, a known dataset, and a trap that unmounts
# (fusermount3 -u -z) and kills, by pid, only what the test started.
#
# Env: PROFFS (binary), TESTS_BIN (tools), ROOT (repo).
set -u
PROFFS=${PROFFS:-$ROOT/build/proffs}
TESTS_BIN=${TESTS_BIN:-$ROOT/build/tests}

WORK=$(mktemp -d /tmp/proffs-test.XXXXXX)
MOUNTS=()   # mountpoints to unmount at exit, newest last
PIDS=()     # processes to kill at exit
CLEANUP_HOOKS=() # commands run first at exit (e.g. stop ganesha)
FAILS=0

log() { printf '%s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*"; FAILS=$((FAILS + 1)); }
ok() { printf 'ok: %s\n' "$*"; }
die() { printf 'FAIL: %s\n' "$*"; exit 1; }
skip() { printf 'SKIP: %s\n' "$*"; exit 77; }

mnt_cleanup() {
	local rc=$? h m p i
	trap - EXIT INT TERM
	for h in "${CLEANUP_HOOKS[@]}"; do eval "$h" >/dev/null 2>&1; done
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do
		for i in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
	done
	for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
		m=${MOUNTS[i]}
		if grep -q " $m " /proc/mounts 2>/dev/null; then
			fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
		fi
	done
	rm -rf "$WORK" 2>/dev/null
	exit "$rc"
}
trap mnt_cleanup EXIT
trap 'exit 1' INT TERM

# mnt_dir NAME: prints a new empty directory under WORK. Not registered
# here (this runs in a $(...) subshell): mnt_start and the tests that
# mount other things register their mountpoints in MOUNTS themselves.
mnt_dir() {
	local d="$WORK/$1"
	mkdir -p "$d"
	printf '%s\n' "$d"
}

# is_mounted DIR TYPE: DIR is a mountpoint of type TYPE (e.g. fuse.proffs).
is_mounted() {
	awk -v d="$1" -v t="$2" '$2 == d && $3 == t { f = 1 } END { exit !f }' /proc/mounts
}

# The resident anonymous memory of the last mount started, KiB.
anon() { awk '/^RssAnon:/ { print $2 }' "/proc/$MNT_PID/status"; }

# mnt_start STORE MP [args...]: starts `proffs mount` in the background,
# waits until MP is mounted. Sets MNT_PID. Its log is $WORK/mount-<n>.log.
MNT_N=0
mnt_start() {
	local store=$1 mp=$2 i
	shift 2
	[[ " ${MOUNTS[*]} " == *" $mp "* ]] || MOUNTS+=("$mp")
	MNT_N=$((MNT_N + 1))
	MNT_LOG=$WORK/mount-$MNT_N.log
	"$PROFFS" mount --store "$store" "$@" "$mp" >"$MNT_LOG" 2>&1 &
	MNT_PID=$!
	PIDS+=("$MNT_PID")
	for i in $(seq 100); do
		# a mount that answers (a stale one from a killed daemon fails
		# statfs with ENOTCONN; mount ids are reused, so not those)
		# ... and once the daemon said so: it stats its own mountpoint
		# first (to know its connection), and while that stat is in
		# flight the mount is busy (fusermount3 -u: EBUSY, seen once
		# under the sanitizers, whose daemon answers slowly).
		if is_mounted "$mp" fuse.proffs && stat -f "$mp" >/dev/null 2>&1 &&
			grep -q "mounted at" "$MNT_LOG"; then return 0; fi
		kill -0 "$MNT_PID" 2>/dev/null || { cat "$MNT_LOG"; die "proffs mount exited early"; }
		sleep 0.05
	done
	cat "$MNT_LOG"
	die "mount at $mp did not appear"
}

# mnt_stop PID MP: SIGTERM, expect exit 0 within 10 s and no mount left.
mnt_stop() {
	local pid=$1 mp=$2 i rc
	kill -TERM "$pid"
	for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$pid" 2>/dev/null; then fail "proffs mount did not exit on SIGTERM"; return 1; fi
	wait "$pid"; rc=$?
	[[ $rc == 0 ]] || { fail "proffs mount exited $rc on SIGTERM"; tail -30 "$MNT_LOG"; return 1; }
	if grep -q " $mp " /proc/mounts; then fail "mount left behind at $mp"; tail -5 "$MNT_LOG"; return 1; fi
	return 0
}

# The known dataset: CPU profiles in the past (closed, immutable minutes).
#   2026-11-20T10:00..10:02  series api/100, db/200
#   2026-11-20T10:03         series api/101
#   2026-11-20T11:00..11:01  series api/100, db/200
DAY=2026-11-20
T10=$(date -u -d "${DAY}T10:00:00Z" +%s)
T11=$(date -u -d "${DAY}T11:00:00Z" +%s)
DATA_MINUTES=(2026-11-20T10:00 2026-11-20T10:01 2026-11-20T10:02 2026-11-20T10:03 2026-11-20T11:00 2026-11-20T11:01)

# make_dataset STORE: writes the pprof files to $WORK/pb and imports them.
make_dataset() {
	local store=$1 i
	mkdir -p "$WORK/pb"
	for i in 0 1 2; do
		"$TESTS_BIN/mkprof" --time $((T10 + 60 * i + 5)) --seed $((10 + i)) \
			--series api:100 --series db:200 "$WORK/pb/m10-$i.pb" || die "mkprof"
	done
	"$TESTS_BIN/mkprof" --time $((T10 + 180 + 5)) --seed 13 --series api:101 "$WORK/pb/m10-3.pb" || die "mkprof"
	for i in 0 1; do
		"$TESTS_BIN/mkprof" --time $((T11 + 60 * i + 5)) --seed $((20 + i)) \
			--series api:100 --series db:200 "$WORK/pb/m11-$i.pb" || die "mkprof"
	done
	"$PROFFS" import --store "$store" --type cpu "$WORK"/pb/m1*.pb >"$WORK/import.log" 2>&1 ||
		{ cat "$WORK/import.log"; die "proffs import failed"; }
}

# ptop ARGS...: go tool pprof -top values (flat cum name), sorted: what a
# profile means to pprof, independent of its encoding order.
ptop() {
	go tool pprof -top -symbolize=none -nodecount=10000 -sample_index=samples "$@" 2>"$WORK/pprof.err" |
		awk 'p { print $1, $4, $6 } /^ *flat  flat%/ { p = 1 }' | LC_ALL=C sort
}

# finish: exit status from the failures counted by fail().
finish() {
	if ((FAILS)); then echo "$FAILS check(s) failed"; exit 1; fi
	echo "all checks passed"
	exit 0
}
