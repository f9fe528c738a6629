#!/usr/bin/env bash
# timeout: 120 (three times its longest run on a clean clone, stop 48)
# mount_clients: a known dataset imported, mounted, and read by real
# clients: ls listings and `latest` as SPEC describes, go tool pprof -top
# on minute, label, merged and diff files against pprof's own computation
# from the input files, protoc --decode, and for every file of the tree:
# stat size == bytes read, two reads identical, same bytes as `proffs cat`,
# cp, tar and mmap give the same bytes.
# san: no (its sanitizer pass cost ~170 s of make test; mount_parallel and
# mount_readonly read the same FUSE paths under ASan)
# long: yes (minutes of wall clock, mostly waiting: started first)
source "$(dirname "$0")/mount_lib.bash"

command -v go >/dev/null || skip "go not installed (go tool pprof)"
command -v protoc >/dev/null || skip "protoc not installed"

STORE=$WORK/store
make_dataset "$STORE"
MP=$(mnt_dir mp)
mnt_start "$STORE" "$MP"

# ---- listings ----
expect_ls() { # DIR expected-names...
	local d=$1 got want
	shift
	got=$(cd "$MP$d" && LC_ALL=C ls -A | tr '\n' ' ')
	want=$(printf '%s\n' "$@" | LC_ALL=C sort | tr '\n' ' ')
	if [[ "$got" == "$want" ]]; then ok "ls $d"; else fail "ls $d: got [$got] want [$want]"; fi
}
expect_ls / README metrics merged diff binaries cpu
expect_ls /cpu comm=api comm=db pid=100 pid=101 pid=200 "${DATA_MINUTES[@]}" latest
# Inside a selection, the pairs it already selects are not listed again.
expect_ls /cpu/comm=db pid=200 2026-11-20T10:00 2026-11-20T10:01 2026-11-20T10:02 \
	2026-11-20T11:00 2026-11-20T11:01 latest
expect_ls /cpu/pid=101 comm=api 2026-11-20T10:03 latest
expect_ls /cpu/comm=api/pid=101 2026-11-20T10:03 latest
expect_ls /cpu/2026-11-20T10:00 profile.pb folded.txt flamegraph.svg top.txt
expect_ls /merged cpu
expect_ls /diff cpu
expect_ls /merged/cpu/2026-11-20T10 profile.pb folded.txt flamegraph.svg top.txt
expect_ls /diff/cpu/2026-11-20T10 vs

expect_link() { # LINK target
	local got
	got=$(readlink "$MP$1")
	[[ "$got" == "$2" ]] && ok "readlink $1 = $2" || fail "readlink $1: got '$got' want '$2'"
	[[ -L "$MP$1" ]] || fail "$1 is not a symlink"
}
expect_link /cpu/latest 2026-11-20T11:01
expect_link /cpu/pid=101/latest 2026-11-20T10:03
expect_link /cpu/comm=db/latest 2026-11-20T11:01
[[ -f $MP/cpu/latest/top.txt ]] && ok "latest/ resolves" || fail "cpu/latest/top.txt"

# modes
m=$(stat -c '%a %F' "$MP/cpu" "$MP/cpu/2026-11-20T10:00/top.txt" | tr '\n' ';')
[[ "$m" == "555 directory;444 regular file;" ]] && ok "modes $m" || fail "modes: $m"

# ---- go tool pprof against pprof's own merge of the inputs ----
cmp_top() { # what, mount-args..., --, reference-args...
	local what=$1 a=() b=()
	shift
	while [[ $1 != -- ]]; do a+=("$1"); shift; done
	shift
	b=("$@")
	ptop "${a[@]}" >"$WORK/top.a"
	ptop "${b[@]}" >"$WORK/top.b"
	if [[ -s $WORK/top.a ]] && cmp -s "$WORK/top.a" "$WORK/top.b"; then
		ok "pprof -top $what ($(wc -l <"$WORK/top.a") functions)"
	else
		fail "pprof -top $what differs"; diff "$WORK/top.a" "$WORK/top.b" | head; cat "$WORK/pprof.err"
	fi
}
PB=$WORK/pb
cmp_top "minute 10:00" "$MP/cpu/2026-11-20T10:00/profile.pb" -- "$PB/m10-0.pb"
cmp_top "minute 11:01" "$MP/cpu/2026-11-20T11:01/profile.pb" -- "$PB/m11-1.pb"
cmp_top "comm=api minute" "$MP/cpu/comm=api/2026-11-20T10:01/profile.pb" -- -tagfocus=comm=api "$PB/m10-1.pb"
cmp_top "merged hour 10" "$MP/merged/cpu/2026-11-20T10/profile.pb" -- "$PB"/m10-*.pb
cmp_top "merged day" "$MP/merged/cpu/2026-11-20/profile.pb" -- "$PB"/m1*.pb
cmp_top "merged a..b" "$MP/merged/cpu/2026-11-20T10:01..2026-11-20T11:01/profile.pb" -- \
	"$PB/m10-1.pb" "$PB/m10-2.pb" "$PB/m10-3.pb" "$PB/m11-0.pb"
cmp_top "merged pid=200 day" "$MP/merged/cpu/pid=200/2026-11-20/profile.pb" -- -tagfocus='pid=20[0]' "$PB"/m1*.pb
cmp_top "diff hour 10 vs 11" "$MP/diff/cpu/2026-11-20T10/vs/2026-11-20T11/profile.pb" -- \
	-diff_base "$MP/merged/cpu/2026-11-20T10/profile.pb" "$MP/merged/cpu/2026-11-20T11/profile.pb"
cmp_top "diff comm=api vs comm=db" "$MP/diff/cpu/comm=api/2026-11-20/vs/comm=db/2026-11-20/profile.pb" -- \
	-diff_base "$MP/merged/cpu/comm=api/2026-11-20/profile.pb" "$MP/merged/cpu/comm=db/2026-11-20/profile.pb"
# an empty range is an empty but valid profile
if go tool pprof -top -symbolize=none "$MP/merged/cpu/2026-11-19/profile.pb" >/dev/null 2>&1; then
	ok "empty range: valid profile"
else
	fail "empty range profile not readable by pprof"
fi

# ---- protoc ----
for f in cpu/2026-11-20T10:00 merged/cpu/2026-11-20 diff/cpu/2026-11-20T10/vs/2026-11-20T11; do
	if protoc --decode perftools.profiles.Profile --proto_path="$ROOT/store/profile" "$ROOT/store/profile/profile.proto" \
		<"$MP/$f/profile.pb" >"$WORK/decoded" 2>&1 && head -1 "$WORK/decoded" | grep -q '^sample_type {'; then
		ok "protoc --decode $f/profile.pb"
	else
		fail "protoc --decode $f/profile.pb"; head -3 "$WORK/decoded"
	fi
done

# ---- every file: size, repeatability, proffs cat, mmap ----
FILES=(README)
for d in "${DATA_MINUTES[@]}"; do
	for f in profile.pb folded.txt flamegraph.svg top.txt; do FILES+=("cpu/$d/$f"); done
done
for d in cpu/comm=api/2026-11-20T10:00 cpu/pid=101/latest merged/cpu/2026-11-20T10 merged/cpu/comm=db/2026-11-20 \
	"merged/cpu/comm=~a.*/2026-11-20" "merged/cpu/comm!=api/2026-11-20T10:00..2026-11-20T12:00" \
	diff/cpu/2026-11-20T10/vs/2026-11-20T11 diff/cpu/comm=api/2026-11-20/vs/comm=db/2026-11-20; do
	for f in profile.pb folded.txt flamegraph.svg top.txt; do FILES+=("$d/$f"); done
done
nf=0
for f in "${FILES[@]}"; do
	p=$MP/$f
	size=$(stat -c %s "$p") || { fail "stat $f"; continue; }
	cat "$p" >"$WORK/r1" || { fail "read $f"; continue; }
	cat "$p" >"$WORK/r2"
	n=$(stat -c %s "$WORK/r1")
	[[ "$size" == "$n" ]] || fail "$f: stat size $size, read $n bytes"
	cmp -s "$WORK/r1" "$WORK/r2" || fail "$f: two reads differ"
	"$PROFFS" cat --store "$STORE" "/$f" >"$WORK/r3" 2>"$WORK/cat.err" || fail "proffs cat /$f: $(head -1 "$WORK/cat.err")"
	cmp -s "$WORK/r1" "$WORK/r3" || fail "$f: mount and proffs cat differ"
	python3 -c 'import mmap,sys
f=open(sys.argv[1],"rb"); m=mmap.mmap(f.fileno(),0,access=mmap.ACCESS_READ)
sys.stdout.buffer.write(m[:])' "$p" >"$WORK/r4" 2>"$WORK/mmap.err" || fail "$f: mmap: $(tail -1 "$WORK/mmap.err")"
	cmp -s "$WORK/r1" "$WORK/r4" || fail "$f: mmap read differs"
	[[ $n -gt 0 ]] || fail "$f: empty"
	nf=$((nf + 1))
done
ok "checked $nf files (size, repeat, proffs cat, mmap)"

# folded lines parse
if grep -qvE '^(.*) ([0-9]+)$' "$MP/cpu/2026-11-20T10:00/folded.txt"; then fail "folded.txt line format"; else ok "folded.txt format"; fi

# ---- cp and tar of a minute directory ----
for d in cpu/2026-11-20T10:02 merged/cpu/2026-11-20; do
	rm -rf "$WORK/cp" "$WORK/tarx"; mkdir -p "$WORK/tarx"
	cp -r "$MP/$d" "$WORK/cp" || fail "cp -r $d"
	(cd "$MP/$d/.." && tar cf - "$(basename "$d")") | (cd "$WORK/tarx" && tar xf -) || fail "tar $d"
	for f in profile.pb folded.txt flamegraph.svg top.txt; do
		cmp -s "$MP/$d/$f" "$WORK/cp/$f" || fail "cp $d/$f differs"
		cmp -s "$MP/$d/$f" "$WORK/tarx/$(basename "$d")/$f" || fail "tar $d/$f differs"
	done
	ok "cp and tar of $d"
done

# ---- metrics carry the render cache ----
grep -q '^proffs_render_cache_hits_total [1-9]' "$MP/metrics" && ok "metrics: cache hits" || fail "metrics lack cache hits"
grep -q '^proffs_render_cache_bytes [1-9]' "$MP/metrics" && ok "metrics: cache bytes" || fail "metrics lack cache bytes"
size=$(stat -c %s "$MP/metrics"); [[ $size -gt 0 ]] || fail "metrics size 0"

# ---- negative entries: unparseable paths are ENOENT ----
for p in cpu/2026-13-45T99:99 nope merged/cpu/yesterday cpu/comm=%ZZ cpu/2026-11-20T10:00/nope.txt; do
	if stat "$MP/$p" >/dev/null 2>"$WORK/err"; then
		fail "$p exists"
	else
		grep -q 'No such file' "$WORK/err" && ok "ENOENT $p" || fail "$p: $(cat "$WORK/err")"
	fi
done

mnt_stop "$MNT_PID" "$MP" && ok "SIGTERM: clean exit, no mount left"
finish
