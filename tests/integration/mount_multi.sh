#!/usr/bin/env bash
# timeout: 120 (three times its longest run on a clean clone, stop 48)
# mount_multi: `proffs mount --store A --store B --store C MP` serves
# several hosts' stores as one tree.
#  - two daemons (`proffs run --label node=web-1`, `node=web-2`) are
#    copied with `proffs copy` while they run; each copy passes check
#  - a third store, imported without a node label, sits on a read-only
#    bind mount in a directory named web-3: it opens (MDB_RDONLY) and its
#    series read as node=web-3
#  - cpu/ lists node=web-1, node=web-2, node=web-3; each node dir lists
#    only its own minutes
#  - merged totals: all nodes = web-1 + web-2 (exactly) over the daemons'
#    hour, and each equals what its copy alone serves (proffs cat); the
#    imported day equals the web-3 store's own merged day
#  - diff/cpu/node=web-1/last-1h/vs/node=web-2/last-1h/profile.pb is read
#    by go tool pprof, and its total is web-2 - web-1
#  - regex and != on node pick stores: node=~web-[12] is web-1 + web-2
# san: yes
source "$(dirname "$0")/sampler_lib.bash"
command -v go >/dev/null || skip "go is needed for go tool pprof"
export GOCACHE=$WORK/gocache GOPATH=$WORK/gopath GOTOOLCHAIN=local

# total FILE: sum of a folded file's counts.
total() { fsum "$1"; }

# --- two daemons, copied while they run ---
for n in 1 2; do
	mkdir -p "$WORK/mp$n"
	run_start "$WORK/d$n" "$WORK/mp$n" --batch-interval 1s --label node=web-$n
	eval "D$n=$RUN_PID"
done
for n in 1 2; do
	for i in $(seq 300); do [[ -d $WORK/mp$n/cpu/node=web-$n ]] && break; sleep 0.1; done
	[[ -d $WORK/mp$n/cpu/node=web-$n ]] || { cat "$WORK/run-$n.log"; ls "$WORK/mp$n" "$WORK/mp$n/cpu"; die "daemon $n stored no cpu data"; }
done
sleep 2
mkdir -p "$WORK/copies"
for n in 1 2; do
	"$PROFFS" copy --store "$WORK/d$n" "$WORK/copies/host$n" || die "copy of daemon $n"
	"$PROFFS" check --store "$WORK/copies/host$n" >"$WORK/check" 2>&1 &&
		ok "copy of running daemon web-$n passes check" || { fail "check of copy $n"; cat "$WORK/check"; }
done
kill -0 "$D1" && kill -0 "$D2" && ok "both daemons still run after the copies" || fail "a daemon died"

# --- a store without node labels on a read-only medium ---
"$TESTS_BIN/mkprof" --time "$(date -u -d 2026-11-20T10:00:05Z +%s)" --seed 3 --series api:100 --series db:200 "$WORK/a.pb" || die mkprof
"$TESTS_BIN/mkprof" --time "$(date -u -d 2026-11-20T10:01:05Z +%s)" --seed 4 --series api:100 "$WORK/b.pb" || die mkprof
"$PROFFS" import --store "$WORK/w3src" --type cpu "$WORK/a.pb" "$WORK/b.pb" >/dev/null || die "import"
mkdir -p "$WORK/ro/web-3"
MOUNTS+=("$WORK/ro/web-3")
mount --bind "$WORK/w3src" "$WORK/ro/web-3" && mount -o remount,bind,ro "$WORK/ro/web-3" ||
	skip "cannot make a read-only bind mount here"
touch "$WORK/ro/web-3/x" 2>/dev/null && die "the bind mount is writable"
ok "web-3's store is on a read-only mount"

# --- all three as one tree ---
MP=$WORK/mp
mkdir -p "$MP"
MOUNTS+=("$MP")
"$PROFFS" mount --store "$WORK/copies/host1" --store "$WORK/copies/host2" --store "$WORK/ro/web-3" "$MP" >"$WORK/mount.log" 2>&1 &
MPID=$!
PIDS+=("$MPID")
for i in $(seq 100); do is_mounted "$MP" && [[ -e $MP/README ]] && break; sleep 0.05; done
is_mounted "$MP" || { cat "$WORK/mount.log"; die "multi-store mount did not appear"; }

ls "$MP/cpu" >"$WORK/ls" || fail "ls cpu"
for n in 1 2 3; do
	grep -qx "node=web-$n" "$WORK/ls" && ok "cpu/ lists node=web-$n" || { fail "cpu/ lacks node=web-$n"; cat "$WORK/ls"; }
done
ls "$MP/cpu/node=web-3" | grep -qx 2026-11-20T10:01 && ok "node=web-3 lists its minutes" || fail "node=web-3 minutes"
ls "$MP/cpu/node=web-1" | grep -q 2026-11-20T10: && fail "node=web-1 lists web-3's minutes" || ok "node=web-1 lists only its own minutes"
ls "$MP/cpu/node=web-3" | grep -q '^comm=api$' && ok "node=web-3 lists its comm pairs" || fail "node=web-3 pairs"

# Totals over the daemons' hour (both stopped growing: these are copies).
cat "$MP/merged/cpu/last-1h/folded.txt" >"$WORK/all" || fail "read merged all"
cat "$MP/merged/cpu/node=web-1/last-1h/folded.txt" >"$WORK/n1" || fail "read merged web-1"
cat "$MP/merged/cpu/node=web-2/last-1h/folded.txt" >"$WORK/n2" || fail "read merged web-2"
cat "$MP/merged/cpu/node=~web-%5B12%5D/last-1h/folded.txt" >"$WORK/n12" 2>/dev/null ||
	cat "$MP/merged/cpu/node=~web-[12]/last-1h/folded.txt" >"$WORK/n12" || fail "read merged regex"
a=$(total "$WORK/all"); b=$(total "$WORK/n1"); c=$(total "$WORK/n2"); r=$(total "$WORK/n12")
((b > 0 && c > 0 && a == b + c)) && ok "merged last-1h: all $a = web-1 $b + web-2 $c" || fail "merged totals: all $a, web-1 $b, web-2 $c"
((r == a)) && ok "node=~web-[12] total $r = all" || fail "regex total $r, want $a"
for n in 1 2; do
	s=$("$PROFFS" cat --store "$WORK/copies/host$n" /merged/cpu/last-1h/folded.txt | fsum /dev/stdin)
	m=$(total "$WORK/n$n")
	((s == m)) && ok "web-$n in the tree = its store alone ($s)" || fail "web-$n: tree $m, store alone $s"
done
d3=$("$PROFFS" cat --store "$WORK/ro/web-3" /merged/cpu/2026-11-20/folded.txt | fsum /dev/stdin)
t3=$(total "$MP/merged/cpu/2026-11-20/folded.txt")
n3=$(total "$MP/merged/cpu/node=web-3/2026-11-20/folded.txt")
((d3 > 0 && t3 == d3 && n3 == d3)) && ok "imported day: tree $t3 = node=web-3 $n3 = store alone $d3" || fail "day: tree $t3, node $n3, store $d3"
x=$(cat "$MP/merged/cpu/node!=web-3/2026-11-20/folded.txt" | fsum /dev/stdin)
((x == 0)) && ok "node!=web-3 leaves the imported day empty" || fail "node!=web-3 day total $x"
m1=$(cat "$MP/cpu/node=web-3/2026-11-20T10:01/folded.txt" | fsum /dev/stdin)
s1=$("$PROFFS" cat --store "$WORK/ro/web-3" /cpu/2026-11-20T10:01/folded.txt | fsum /dev/stdin)
((m1 > 0 && m1 == s1)) && ok "minute dir under node=web-3 = store alone ($m1)" || fail "minute: $m1 vs $s1"

# Cross-host diff, read by pprof.
D=$MP/diff/cpu/node=web-1/last-1h/vs/node=web-2/last-1h
cp "$D/profile.pb" "$WORK/diff.pb" || fail "read diff profile.pb"
# rawsum FILE: the sum of the first value (samples) of every sample, as
# go tool pprof -raw lists them.
rawsum() {
	go tool pprof -raw "$1" 2>"$WORK/pprof.err" |
		awk '/^Samples:/ { p = 1; next } /^Locations/ { p = 0 } p && /^ *-?[0-9]+ +-?[0-9]+:/ { s += $1 } END { printf "%d\n", s }'
}
if go tool pprof -top "$WORK/diff.pb" >/dev/null 2>"$WORK/pprof.err"; then
	ok "go tool pprof reads the cross-host diff"
	cp "$MP/merged/cpu/node=web-1/last-1h/profile.pb" "$WORK/p1.pb"
	cp "$MP/merged/cpu/node=web-2/last-1h/profile.pb" "$WORK/p2.pb"
	dsum=$(rawsum "$WORK/diff.pb"); s1=$(rawsum "$WORK/p1.pb"); s2=$(rawsum "$WORK/p2.pb")
	((s1 > 0 && s2 > 0 && dsum == s2 - s1)) && ok "diff samples $dsum = web-2 $s2 - web-1 $s1" || fail "diff samples $dsum, web-2 $s2, web-1 $s1"
else
	fail "pprof on the diff:"; head -5 "$WORK/pprof.err"
fi

kill -TERM "$MPID"; wait "$MPID"; rc=$?
((rc == 0)) && ok "multi-store mount exits 0 on SIGTERM" || fail "mount exit $rc"
for n in 1 2; do run_stop "$(eval echo \$D$n)" "$WORK/mp$n" || true; done
finish
