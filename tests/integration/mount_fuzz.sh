#!/usr/bin/env bash
# timeout: 120 (three times its longest run on a clean clone, stop 48)
# mount_fuzz: >= 10,000 random and adversarial lookups and reads over the
# mount (tests/tools/pathfuzz): every answer is ENOENT (or ENAMETOOLONG /
# ENOTDIR from the kernel) or a valid file whose size matches its bytes;
# the daemon is alive and answering afterwards, and stops cleanly.
# san: yes
source "$(dirname "$0")/mount_lib.bash"

STORE=$WORK/store
make_dataset "$STORE"
MP=$(mnt_dir mp)
mnt_start "$STORE" "$MP"

N=${FUZZ_LOOKUPS:-12000}
[[ ${SAN:-} == 1 ]] && N=10000
SEED=${FUZZ_SEED:-$((RANDOM % 1000))}
if "$TESTS_BIN/pathfuzz" "$MP" "$N" "$SEED" >"$WORK/fuzz.out" 2>&1; then
	ok "pathfuzz (seed $SEED): $(tail -1 "$WORK/fuzz.out")"
else
	fail "pathfuzz (seed $SEED; FUZZ_SEED=$SEED reproduces)"; tail -25 "$WORK/fuzz.out"; tail -40 "$MNT_LOG"
fi
kill -0 "$MNT_PID" 2>/dev/null && ok "daemon alive" || fail "daemon died"
cmp -s <(cat "$MP/cpu/2026-11-20T10:00/top.txt") <("$PROFFS" cat --store "$STORE" /cpu/2026-11-20T10:00/top.txt) &&
	ok "still serving correct bytes" || fail "wrong bytes after fuzzing"
grep -q '^proffs_fuse_negative_lookups_total [1-9]' "$MP/metrics" && ok "negative lookups counted" || fail "no negative lookups in metrics"
mnt_stop "$MNT_PID" "$MP" && ok "clean stop"
finish
