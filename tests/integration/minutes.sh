#!/usr/bin/env bash
# timeout: 600 (three times its longest run on a clean clone, stop 48)
# minutes: a minute holds exactly the samples taken in it (SPEC §2
# Minutes), whatever phase the daemon started at, and `latest` names only
# complete minutes, whose bytes never change afterwards.
#
# One process (tests/helpers/minute_spin) runs one busy thread from second
# 50 of minute N to second 0 of minute N+2. Four daemons sample only it
# (--pid), at 19 and 99 Hz, two started at second 53 of minute N-1 and two
# at second 7 of minute N, all at once so the whole test takes ~3.5 min;
# a fifth, as it ships (no --pid, no --hz), started at second 53 too.
# Each must file 10 s x Hz under N, 60 s x Hz under N+1, nothing under N+2
# (+-2% or +-2 samples). Expectations use the CPU time the thread really
# got in each minute (its own clock), so a busy host does not fail the test;
# the nominal figures are checked too when the thread got a whole CPU.
# profile.pb of a minute carries the minute's bounds. `latest` flips to N+1
# only once N+1's last batch is stored: read right then and again after a
# drain interval, directly and through sshfs, the bytes are identical.
# long: yes (minutes of wall clock, mostly waiting: started first)
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
source "$(dirname "$0")/sampler_lib.bash"

SPIN=$TESTS_BIN/minute_spin
PPROFCAT=$TESTS_BIN/pprofcat
[[ -x $SPIN && -x $PPROFCAT ]] || die "minute_spin/pprofcat not built"
command -v protoc >/dev/null || skip "protoc not installed"
pb_decode() { protoc --decode perftools.profiles.Profile --proto_path="$ROOT/store/profile" profile.proto; }
minute() { date -u -d "@$1" +%Y-%m-%dT%H:%M; }
wait_until() { # epoch seconds (decimals)
	local d
	d=$(awk -v t="$1" -v n="$(date +%s.%N)" 'BEGIN { d = t - n; print (d > 0 ? d : 0) }')
	sleep "$d"
}
samples_of() { "$PPROFCAT" totals "$1" | awk '$1 == "samples/count" { print $2 }'; }

# Minute N: the first whose second -7 (second 53 of N-1) is >= 3 s away.
now=$(date +%s)
N=$(((now + 3 + 7 + 59) / 60 * 60))
log "minute N = $(minute $N); daemons at $(minute $((N - 60))):53 and $(minute $N):07"

# nice -20: on a busy host the thread still gets (nearly) a whole CPU.
nice -n -20 "$SPIN" $((N + 50)) $((N + 120)) "$WORK/cpu.txt" &
WPID=$!
PIDS+=("$WPID")

declare -A MP LOGS
start_pair() { # phase
	local hz
	for hz in 19 99; do
		mkdir -p "$WORK/mp-$1-$hz"
		run_start "$WORK/store-$1-$hz" "$WORK/mp-$1-$hz" --hz "$hz" --pid "$WPID"
		MP[$1-$hz]=$WORK/mp-$1-$hz
		LOGS[$1-$hz]=$RUN_LOG
	done
	# And a daemon as it ships (no flag but its store and mount: the
	# whole host at 19 Hz), judged by the same bounds (issue 46).
	if [[ $1 == 53 ]]; then
		mkdir -p "$WORK/mp-$1-def"
		run_start "$WORK/store-$1-def" "$WORK/mp-$1-def"
		MP[$1-def]=$WORK/mp-$1-def
		LOGS[$1-def]=$RUN_LOG
	fi
}
# Off-CPU minutes: one more daemon (--offcpu) watches a process that naps
# 50 ms at a time from before it starts to second 0 of N+2. Started now, at
# least 10 s ahead: a python3 start on a loaded host took 9 s once, and its
# blocked start-up then straddled N (minute N held 60.5 s off CPU).
python3 -c 'import sys, time
print("%.3f" % time.time(), flush=True)
end = float(sys.argv[1])
while time.time() < end: time.sleep(0.05)' $((N + 120)) >"$WORK/nap.t0" &
NAP=$!
PIDS+=("$NAP")
wait_until $((N - 7))
# Napping before its daemon starts, or the minutes judge its start-up too.
for i in $(seq 40); do [[ -s $WORK/nap.t0 ]] && break; sleep 0.05; done
OFF_T0=$(date +%s.%N)
mkdir -p "$WORK/mp-off"
run_start "$WORK/store-off" "$WORK/mp-off" --hz 19 --pid "$NAP" --offcpu
OFF_T1=$(date +%s.%N)
start_pair 53
wait_until $((N + 7))
start_pair 07

# ---- latest flips to N+1 only when N+1 is complete ----
M1=$(minute $((N + 60)))
wait_until $((N + 118))
lp=${MP[53-99]}
flip=""
for i in $(seq 400); do
	l=$(readlink "$lp/cpu/latest" 2>/dev/null)
	if [[ $l == "$M1" ]]; then
		cp "$lp/cpu/latest/profile.pb" "$WORK/latest-1.pb"
		flip=$(date +%s.%N)
		break
	fi
	[[ $l == "$(minute $N)" || -z $l ]] || fail "latest named $l before N+1 was complete"
	sleep 0.05
done
if [[ -z $flip ]]; then
	fail "latest never named $M1 (still '$l')"
else
	d=$(awk -v f="$flip" -v n=$((N + 120)) 'BEGIN { printf "%.2f", f - n }')
	within "$d" 0 10 && ok "latest -> $M1 at N+2+${d}s (after its last batch was stored, within a drain interval)" ||
		fail "latest -> $M1 at N+2+${d}s"
fi

# ---- sshfs of one daemon's mount, for the re-read ----
SMP=""
SSHD=$(command -v sshd || echo /usr/sbin/sshd)
if command -v sshfs >/dev/null && [[ -x $SSHD ]]; then
	K=$WORK/ssh
	mkdir -p "$K" && chmod 700 "$K"
	ssh-keygen -q -t ed25519 -N '' -f "$K/host" && ssh-keygen -q -t ed25519 -N '' -f "$K/user" &&
		cp "$K/user.pub" "$K/authorized_keys"
	PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	SFTP=/usr/lib/openssh/sftp-server
	[[ -x $SFTP ]] || SFTP=internal-sftp
	mkdir -p /run/sshd
	printf '%s\n' "Port $PORT" "ListenAddress 127.0.0.1" "HostKey $K/host" "PidFile $K/sshd.pid" \
		"AuthorizedKeysFile $K/authorized_keys" "PermitRootLogin prohibit-password" \
		"PubkeyAuthentication yes" "PasswordAuthentication no" "KbdInteractiveAuthentication no" \
		"UsePAM no" "StrictModes no" "Subsystem sftp $SFTP" "LogLevel ERROR" >"$K/sshd_config"
	"$SSHD" -D -e -f "$K/sshd_config" 2>"$WORK/sshd.log" &
	PIDS+=("$!")
	for i in $(seq 50); do
		python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 0.2)" 2>/dev/null && break
		sleep 0.1
	done
	SMP=$WORK/sshfs
	mkdir -p "$SMP"
	MOUNTS+=("$SMP")
	sshfs -f -o ro,port="$PORT",IdentityFile="$K/user",StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null,BatchMode=yes \
		"root@127.0.0.1:$lp" "$SMP" 2>"$WORK/sshfs.log" &
	PIDS+=("$!")
	for i in $(seq 100); do
		awk -v d="$SMP" '$2 == d { f = 1 } END { exit !f }' /proc/mounts && break
		sleep 0.1
	done
	if [[ -e $SMP/cpu/$M1/profile.pb ]]; then
		cp "$SMP/cpu/$M1/profile.pb" "$WORK/sshfs-1.pb"
	else
		log "sshfs did not mount: $(cat "$WORK/sshfs.log")"; SMP=""
	fi
else
	log "no sshfs/sshd: the re-read goes through the mount only"
fi

# ---- after the thread stopped and a drain interval passed ----
wait_until $((N + 120 + 12))
if [[ -n $flip ]]; then
	cmp -s "$WORK/latest-1.pb" "$lp/cpu/$M1/profile.pb" && cmp -s "$WORK/latest-1.pb" "$lp/cpu/latest/profile.pb" &&
		ok "latest/profile.pb read when it flipped == the same minute read 12 s later ($(stat -c %s "$WORK/latest-1.pb") bytes)" ||
		fail "latest/profile.pb changed after latest named it: $(stat -c %s "$WORK/latest-1.pb") then $(stat -c %s "$lp/cpu/$M1/profile.pb") bytes"
fi
if [[ -n $SMP ]]; then
	cmp -s "$WORK/latest-1.pb" "$WORK/sshfs-1.pb" && cmp -s "$WORK/latest-1.pb" "$SMP/cpu/latest/profile.pb" &&
		ok "through sshfs: the same bytes, then and later" || fail "through sshfs: the complete minute's bytes differ"
fi

# ---- what each minute holds ----
cpu_of() { awk -v m="$1" '$1 == m { printf "%.3f", $2 / 1e9; f = 1 } END { if (!f) print 0 }' "$WORK/cpu.txt"; }
wait "$WPID" 2>/dev/null
[[ -s $WORK/cpu.txt ]] || die "minute_spin wrote no CPU times"
log "busy thread CPU seconds per minute: N $(cpu_of $N), N+1 $(cpu_of $((N + 60)))"
tol_of() { awk -v w="$1" -v st="$2" 'BEGIN { t = w * 0.02; if (t < 2) t = 2; if (st && 3 * sqrt(w) > t) t = 3 * sqrt(w); printf "%.1f", t }'; }
near() { awk -v g="$1" -v w="$2" -v t="$3" 'BEGIN { exit !(g >= w - t && g <= w + t) }'; }
check_count() { # what got thread_cpu_s nominal_s hz
	local what=$1 got=$2 cpu=$3 nom=$4 hz=$5 want tol full=0
	# Whole means within 0.5%: a thread that lost 1.4% of its CPU already
	# spends most of the nominal check's 2% (CI: 968 of 990 at 9.862 s).
	awk -v c="$cpu" -v n="$nom" 'BEGIN { exit !(c >= n * 0.995) }' && full=1
	if ((full)); then
		want=$((nom * hz))
		tol=$(tol_of "$want" 0)
		near "$got" "$want" "$tol" && ok "$what: $got samples = ${nom}s x $hz Hz = $want (+-$tol)" ||
			fail "$what: $got samples, want ${nom}s x $hz Hz = $want +-$tol"
	fi
	# Against the CPU time the thread really got: on a host too busy to
	# give it a whole CPU, sampling noise (3 sigma) may exceed 2%.
	want=$(awk -v c="$cpu" -v h="$hz" 'BEGIN { printf "%.0f", c * h }')
	tol=$(tol_of "$want" $((!full)))
	near "$got" "$want" "$tol" && ok "$what: $got samples, thread CPU ${cpu}s x $hz Hz = $want (+-$tol)" ||
		fail "$what: $got samples, want $want +-$tol (thread CPU ${cpu}s x $hz Hz)"
	((full)) || log "note: $what: the thread got ${cpu}s of CPU in ${nom}s (busy host): nominal figure not checked"
}
check_bounds() { # what profile.pb minute: time_nanos/duration_nanos are the minute's
	local tn dn
	tn=$(pb_decode <"$2" | awk '$1 == "time_nanos:" { print $2 }')
	dn=$(pb_decode <"$2" | awk '$1 == "duration_nanos:" { print $2 }')
	[[ $tn == "${3}000000000" && $dn == 60000000000 ]] &&
		ok "$1 $(minute "$3"): time_nanos/duration_nanos are the minute's bounds" ||
		fail "$1 $(minute "$3"): time_nanos $tn duration_nanos $dn"
}
for key in 53-19 53-99 07-19 07-99 53-def; do
	mp=${MP[$key]} hz=${key#*-}
	lab="phase :${key%-*} ${hz}Hz"
	[[ $hz == def ]] && hz=19 lab="phase :${key%-*} as shipped (19 Hz, no --pid)"
	sel=$mp/cpu/pid=$WPID
	for k in 0 1; do
		m=$((N + 60 * k))
		f=$WORK/$key-$k.pb
		if ! cp "$sel/$(minute $m)/profile.pb" "$f" 2>/dev/null; then
			fail "$lab: minute $(minute $m) missing"; continue
		fi
		got=$(samples_of "$f")
		if ((k == 0)); then check_count "$lab first minute" "$got" "$(cpu_of $m)" 10 "$hz"
		else
			check_count "$lab next minute" "$got" "$(cpu_of $m)" 60 "$hz"
			awk -v g="$got" -v h="$hz" 'BEGIN { exit !(g <= 60 * h * 1.02) }' &&
				ok "$lab: a complete minute holds <= 60 x Hz x 1.02" ||
				fail "$lab: $got samples in one minute of one thread > 60 x $hz x 1.02"
		fi
		check_bounds "$lab" "$f" "$m"
	done
	M2=$(minute $((N + 120)))
	# The thread's last instants (it stops at second 0 and exits) may
	# give a sample or two to N+2: +-2 samples, as the issue allows.
	if ls "$sel" | grep -qx "$M2"; then
		got=$(samples_of "$sel/$M2/profile.pb")
	else
		got=$(cat "$mp/merged/cpu/pid=$WPID/$M2..$(minute $((N + 180)))/profile.pb" >"$WORK/m2.pb" && samples_of "$WORK/m2.pb")
	fi
	within "${got:-x}" 0 2 && ok "$lab: $M2 holds ${got} samples" ||
		fail "$lab: $M2 holds '${got}' samples"
done
# ---- offcpu: the napper's off-CPU time lands in the minute it passed in ----
offcpu_of() { "$PPROFCAT" totals "$1" | awk '$1 == "offcpu/nanoseconds" { printf "%.3f", $2 / 1e9 }'; }
osel=$WORK/mp-off/offcpu/pid=$NAP
# N-1: from the daemon's start (between OFF_T0 and OFF_T1) to N; a batch
# cut by the daemon's own 10 s from its start would file ~10 s here.
# A napper that started napping after the daemon was up (a python3 start
# slowed by a loaded host) counts from its own start.
lo=$(awk -v n=$N -v t="$OFF_T1" -v s="$(cat "$WORK/nap.t0" 2>/dev/null)" 'BEGIN { if (s + 0 > t) t = s; printf "%.2f", n - t - 0.3 }')
hi=$(awk -v n=$N -v t="$OFF_T0" 'BEGIN { printf "%.2f", n - t + 0.15 }')
for k in -1 0 1; do
	m=$((N + 60 * k)) f=$WORK/off$k.pb
	if ! cp "$osel/$(minute $m)/profile.pb" "$f" 2>/dev/null; then
		fail "offcpu: minute $(minute $m) missing"; continue
	fi
	got=$(offcpu_of "$f")
	if ((k == -1)); then
		within "$got" "$lo" "$hi" && ok "offcpu $(minute $m) (daemon started at second 53): ${got}s off CPU, the ${lo}-${hi}s it ran" ||
			{ fail "offcpu $(minute $m): ${got}s off CPU, want ${lo}-${hi}s (the seconds of that minute the daemon ran)"
			  log "the napper started napping at $(cat "$WORK/nap.t0" 2>/dev/null), the daemon was up at $OFF_T1, N is $N"
			  grep -E '^proffs_offcpu' "$WORK/mp-off/metrics" | sed 's/^/  /'; }
	else
		within "$got" 58.8 60.1 && ok "offcpu $(minute $m): ${got}s off CPU of a 60 s minute (-2%, +0.1 s)" ||
			fail "offcpu $(minute $m): ${got}s off CPU, want 58.8-60.1 s"
		check_bounds offcpu "$f" "$m"
	fi
done
finish
