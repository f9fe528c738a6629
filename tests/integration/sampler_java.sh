#!/usr/bin/env bash
# timeout: 300 (three times its longest run on a clean clone, stop 48)
# sampler_java: Java shows as Java (SPEC §3). One `proffs run` at 99 Hz,
# no flag or agent in the JVMs, Debian's JDK 17 then Temurin 25, each
# running tests/helpers/java/Known (Known.class, built by the Makefile
# with its JNI library) for 8 s, one after the other:
#  - a known answer: heavy() and light() run the same loop 10:1 on the
#    k-hot thread, each call timed with the thread's own CPU clock
#    (ThreadMXBean); in the samples under Known.hot, heavy's share of
#    heavy + light is within 3 pp of the JVM's own figure;
#    names are `pkg.Class.method (File.java)`;
#  - JNI: Known.up runs under Java -> Known.down -> its C function ->
#    libjvm's JNI call path -> Known.up, with the native frames between
#    the Java ones kept (Java_Known_down, jni_CallStaticLongMethod), and
#    Known.down under its caller (jniLoop, or d3 on the k-deep thread);
#  - whole stacks: every sample with a Java frame reaches the thread's
#    root (clone3, start_thread) with no marker;
#  - lines: Known.hot's frame above heavy carries the line of its call
#    `s = heavy(s);` in profile.pb (go tool pprof -traces -lines), and
#    jniLoop's the line of `s += down(s, false);` (down, a native method,
#    has none): HotSpot's own line tables at the PcDesc of the call;
#  - /prof/metrics: two JVMs walked, steps and frames counted;
#  - a second daemon, at the default rate with --offcpu, started after a
#    Temurin 25 Known that has run and compiled for a second: the known
#    answer again at 19 Hz over 48 s (>= 820 samples: 3 sigma <= 3 pp);
#    its stacks whole;
#    the off-CPU blocks of its k-parker thread (LockSupport.parkNanos)
#    under Known.parker and the JDK's Java frames down to Unsafe_Park
#    and the futex wait, adding up to the thread's life under the daemon;
#    after it exits, its names forgotten (metrics);
#  - that daemon withholds JDK 17 (PROFFS_HS_WITHHOLD): a JDK 17 JVM
#    shows native frames only, counted as unsupported_version.
# alone: yes (shares are judged on samples: beside three other tests a hot
# thread got ~430 samples in 24 s)
# One JVM at a time: with both JVMs' four busy threads time-sliced on two
# CPUs, the sampled share of heavy strayed 6-8 pp from the JVM's figure
# in 2 of 28 JVM runs (light sampled 2x its CPU time for seconds), where
# a lone JVM's was within 1.2 pp in 8 of 8 (DESIGN-NOTES, "Shares under
# time-slicing").
source "$(dirname "$0")/sampler_lib.bash"

HZ=99
# The band around the program's own figure: 3 sigma of a share of n
# samples (n >= MIN_N), at least 3 pp (the program's timing has its own
# small error). A lone JVM's hot thread gets ~780 samples in 8 s: 3.1 pp.
MIN_N=500
SPIN_MS=8000
JDKS=(/usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/temurin-25-jdk-amd64)
JDIR=$TESTS_BIN/java
SRC=$ROOT/tests/helpers/java/Known.java
STORE=$WORK/store
MP=$WORK/mp
mkdir -p "$MP"
for j in "${JDKS[@]}"; do [[ -x $j/bin/java ]] || die "no JDK at $j (JDK 17: deps.sh installs it; Temurin 25: this host's)"; done
[[ -f $JDIR/Known.class && -f $JDIR/libknownjni.so ]] || die "Known.class or libknownjni.so missing in $JDIR (make all)"
command -v go >/dev/null || die "go is needed for go tool pprof"

# known_share LABEL F WANT MIN_N HZ HEAVY_NS LIGHT_NS: Known.heavy's share of
# heavy + light under Known.hot in folded.txt F within a 3-sigma band
# (>= 3 pp) of the JVM's own WANT%, from at least MIN_N samples; on a
# failure, each call's samples against what its CPU time predicts at HZ.
known_share() {
	local label=$1 f=$2 want=$3 min=$4 hz=$5 hn=$6 ln=$7 h l got tol
	h=$(fsum "$f" ';Known\.hot \(Known\.java\);Known\.heavy \(Known\.java\)(;|$)')
	l=$(fsum "$f" ';Known\.hot \(Known\.java\);Known\.light \(Known\.java\)(;|$)')
	got=$(pct "$h" $((h + l)))
	tol=$(band "${want:-0}" $((h + l)))
	if [[ -n $want ]] && ((h + l >= min)) &&
		within "$got" "$(awk -v w="$want" -v t="$tol" 'BEGIN{print w-t}')" "$(awk -v w="$want" -v t="$tol" 'BEGIN{print w+t}')"; then
		ok "$label: Known.heavy (Known.java) is $got% of heavy + light's $((h + l)) samples (the JVM: $want% +- $tol pp)"
		return
	fi
	fail "$label: Known.heavy is $got% of heavy + light's $((h + l)) samples, the JVM says ${want:-nothing}% (+- ${tol:-?} pp, >= $min samples)"
	awk -v h="$h" -v l="$l" -v hn="$hn" -v ln="$ln" -v hz="$hz" 'BEGIN { if (hn > 0 && ln > 0)
		printf "    heavy %d samples of %.0f due (%.0f%%), light %d of %.0f (%.0f%%)\n",
		  h, hn * hz / 1e9, 100 * h / (hn * hz / 1e9), l, ln * hz / 1e9, 100 * l / (ln * hz / 1e9) }'
	awk '{ print $NF "\t" $0 }' "$f" | sort -nr | head -3 | cut -c1-400
}

# java_rooted LABEL F: every sample of folded.txt F with a Java frame
# reaches the thread's root (clone3, start_thread) with no marker (a frame
# that starts with "[": [truncated], [unwind: ...], [java: ...], [jit]+0x...).
java_rooted() {
	local label=$1 f=$2 j jr
	j=$(fsum "$f" ' \([A-Za-z0-9_$]+\.java\)(;|$)')
	jr=$(awk '{ n = $NF; sub(/ [0-9]+$/, "") } / \([A-Za-z0-9_$]+\.java\)(;|$)/ && /^java;__GI___clone3;start_thread;/ && !/;\[/ { s += n } END { print s + 0 }' "$f")
	if ((j > 0 && jr == j)); then
		ok "$label: all $j samples with a Java frame reach the thread's root, no marker"
		return
	fi
	fail "$label: $jr of $j samples with a Java frame reach clone3;start_thread without a marker"
	grep -E ' \([A-Za-z0-9_$]+\.java\)(;| )' "$f" | grep -Ev '^java;__GI___clone3;start_thread;' | head -2 | cut -c1-500
	grep -E ' \([A-Za-z0-9_$]+\.java\)(;| )' "$f" | grep -E ';\[' | head -2 | cut -c1-500
	# each marker with the two frames above it, and how often
	grep -E ' \([A-Za-z0-9_$]+\.java\)(;| )' "$f" | grep -oE '([^;]*;){1,2}\[[^];]*\][^; ]*' | sort | uniq -c | sort -rn | head -5 | cut -c1-300
	grep -E '^proffs_unwind_(pending_total|builds_queued)' "$MP/metrics"
}

# jvm JDK OUT SPIN_MS: starts Known under JDK, lets k-hot and k-jni run
# SPIN_MS, asks for its CPU figures, quits. Its pid in JVM_PID.
jvm() {
	local jdk=$1 out=$2 ms=$3
	(sleep 0.5; echo "spin $ms"; sleep "$(awk -v m="$ms" 'BEGIN { print m / 1000 + 0.5 }')"; echo times; echo quit) |
		"$jdk/bin/java" -XX:CompileCommand=quiet -XX:CompileCommand=dontinline,Known::heavy \
			-XX:CompileCommand=dontinline,Known::light -cp "$JDIR" Known "$JDIR/libknownjni.so" >"$out" 2>&1 &
	JVM_PID=$!
	PIDS+=("$JVM_PID")
}

PROFFS_DEBUG=1 run_start "$STORE" "$MP" --hz $HZ
log "daemon up (pid $RUN_PID)"
JP=()
for i in 0 1; do
	jvm "${JDKS[i]}" "$WORK/jvm$i.out" $SPIN_MS
	JP[i]=$JVM_PID
	wait "${JP[i]}" || fail "Known under ${JDKS[i]} failed: $(tail -3 "$WORK/jvm$i.out")"
done
stored # the last batch
kill -0 "$RUN_PID" 2>/dev/null || die "the daemon died"
R=last-15m

hot_line=$(grep -n 's = heavy(s, 10 \* unit);' "$SRC" | cut -d: -f1)
jni_line=$(grep -n 's += down(s, false);' "$SRC" | cut -d: -f1)
[[ -n $hot_line && -n $jni_line ]] || die "Known.java lacks the calls whose lines are checked"
for i in 0 1; do
	jdk=$(basename "${JDKS[i]}")
	F=$WORK/jvm$i.folded
	cp "$MP/merged/cpu/pid=${JP[i]}/$R/folded.txt" "$F" || { fail "$jdk: read its folded.txt"; continue; }
	hn=$(awk '$1 == "heavy" { print $2 }' "$WORK/jvm$i.out")
	ln=$(awk '$1 == "light" { print $2 }' "$WORK/jvm$i.out")
	[[ -n $hn && -n $ln ]] || { fail "$jdk: the JVM printed no CPU figures"; continue; }
	want=$(awk -v h="$hn" -v l="$ln" 'BEGIN { printf "%.1f", 100 * h / (h + l) }')

	# --- names are text (a lambda's hidden class has no source file;
	# its name once ran on into the heap's bytes) ---
	bad=$(LC_ALL=C.UTF-8 grep -caxv '.*' "$F")
	((bad == 0)) && ok "$jdk: every line of folded.txt is UTF-8 text" ||
		{ fail "$jdk: $bad lines of folded.txt are not UTF-8 text"; LC_ALL=C.UTF-8 grep -axv '.*' "$F" | head -2 | cut -c1-300 | od -c | tail -4; }

	# --- the known answer ---
	known_share "$jdk" "$F" "$want" $MIN_N $HZ "$hn" "$ln"

	# --- JNI: Java -> C -> Java ---
	u=$(fsum "$F" ';Known\.up \(Known\.java\)(;|$)')
	uw=$(fsum "$F" ';Known\.(jniLoop|d3) \(Known\.java\);Known\.down \(Known\.java\);Java_Known_down;jni_CallStaticLongMethod;(.*;)?call_stub;Known\.up \(Known\.java\)(;|$)')
	((u >= 20 && uw == u)) && ok "$jdk: all $u samples of Known.up run under jniLoop|d3;down;Java_Known_down;jni_CallStaticLongMethod;...;call_stub" ||
		{ fail "$jdk: $uw of $u samples of Known.up under jniLoop|d3;down;Java_Known_down;jni_CallStaticLongMethod;...;call_stub (want all, >= 20)"
		  grep 'Known\.up (Known' "$F" | grep -Ev ';Known\.(jniLoop|d3) \(Known\.java\);Known\.down \(Known\.java\);Java_Known_down;jni_CallStaticLongMethod;' | head -2 | cut -c1-500; }

	# --- whole stacks ---
	java_rooted "$jdk" "$F"

	# --- lines ---
	# Each trace as "name:line;..." leaf first, Known.java's frames only.
	trace_lines "$jdk" "${JP[i]}" "$WORK/jvm$i" 'Known\.java' || continue
	for c in "Known.heavy:[0-9]*;Known.hot:$hot_line" "Known.down:0;Known.jniLoop:$jni_line"; do
		callee=${c%%:*} caller=${c#*;}; caller=${caller%%:*}
		n=$(grep -c "$callee:[0-9]*;$caller:" "$WORK/jvm$i.lines")
		good=$(grep -c "$c\(;\|$\)" "$WORK/jvm$i.lines")
		((n > 0 && good == n)) && ok "$jdk: lines: all $n traces through $caller -> $callee carry $caller:${c##*:}" ||
			{ fail "$jdk: lines: $good of $n traces through $caller -> $callee carry $caller:${c##*:}"
			  grep "$callee:[0-9]*;$caller:" "$WORK/jvm$i.lines" | grep -v "$c" | head -2; }
	done
done

# --- metrics ---
M=$WORK/metrics
cp "$MP/metrics" "$M" || die "read metrics"
w=$(metric 'proffs_java_processes_total{state="walked"}' "$M")
((${w:-0} >= 2)) && ok "metrics: $w JVMs walked" || fail "metrics: ${w:-no} JVMs walked, 2 started"
for k in 'proffs_java_steps_total{end="ok"}' 'proffs_java_frames_total'; do
	v=$(metric "$k" "$M")
	((${v:-0} > 0)) && ok "metrics: $k $v" || fail "metrics: $k is ${v:-missing}"
done
run_stop "$RUN_PID" "$MP"

# --- a JVM started before the daemon: the default rate, off-CPU ---
# Temurin 25's Known starts, compiles (a second of spinning) and only then
# does a daemon start, at the default rate with --offcpu: the JVM's set-up
# comes from a running JVM's tables, not from its start. k-hot spins
# PRE_MS under it; the JVM's own figure is the difference of its totals
# around that time. Then the JVM exits and the daemon goes on.
PRE_MS=48000
PRE_HZ=19 # the default rate (proffs run --help)
# ~19 a second for 48 s: >= 820 samples make 3 sigma of a 91% share at
# most 3 pp (9 x 0.91 x 0.09 / 0.03^2 = 819), as the issue asks.
PRE_MIN_N=820
mkfifo "$WORK/pre.in"
"${JDKS[1]}/bin/java" -XX:CompileCommand=quiet -XX:CompileCommand=dontinline,Known::heavy \
	-XX:CompileCommand=dontinline,Known::light -cp "$JDIR" Known "$JDIR/libknownjni.so" \
	<"$WORK/pre.in" >"$WORK/pre.out" 2>&1 &
PRE=$!
PIDS+=("$PRE")
exec 7>"$WORK/pre.in"
# answer N: waits for the JVM's Nth "end" line (its answer to a command).
answer() { local i; for i in $(seq 200); do (($(grep -c '^end$' "$WORK/pre.out") >= $1)) && return 0; sleep 0.1; done; return 1; }
echo "spin 1000" >&7 && answer 1 || die "Known under Temurin 25 did not answer: $(tail -3 "$WORK/pre.out")"
sleep 1.2
echo times >&7 && answer 2 || die "no times from Known"
h0=$(awk '$1 == "heavy" { v = $2 } END { print v }' "$WORK/pre.out")
l0=$(awk '$1 == "light" { v = $2 } END { print v }' "$WORK/pre.out")
pre_tb=$EPOCHREALTIME
PROFFS_HS_WITHHOLD=17 run_start "$STORE" "$MP" --offcpu
pre_t0=$EPOCHREALTIME
echo "spin $PRE_MS" >&7
sleep "$(awk -v m=$PRE_MS 'BEGIN { print m / 1000 + 0.3 }')"
echo times >&7 && answer 4 || die "no times from Known after its spin"
h1=$(awk '$1 == "heavy" { v = $2 } END { print v }' "$WORK/pre.out")
l1=$(awk '$1 == "light" { v = $2 } END { print v }' "$WORK/pre.out")
echo quit >&7
exec 7>&-
wait "$PRE" || fail "Known under Temurin 25 (started first) exited with an error: $(tail -3 "$WORK/pre.out")"
# (at least from the mount, at most from before the daemon started)
pre_life=$(awk -v a="$pre_t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
pre_most=$(awk -v a="$pre_tb" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')

# --- an unknown JDK: native frames, counted ---
jvm "${JDKS[0]}" "$WORK/withheld.out" 3000; P=$JVM_PID
wait "$P"
stored
kill -0 "$RUN_PID" 2>/dev/null || die "the daemon died"

F=$WORK/pre.folded
cp "$MP/merged/cpu/pid=$PRE/$R/folded.txt" "$F" || fail "read the first JVM's folded.txt"
want=$(awk -v h=$((h1 - h0)) -v l=$((l1 - l0)) 'BEGIN { if (h + l > 0) printf "%.1f", 100 * h / (h + l) }')
known_share "started before the daemon, default rate" "$F" "$want" $PRE_MIN_N $PRE_HZ $((h1 - h0)) $((l1 - l0))
java_rooted "started before the daemon" "$F"

# Off-CPU: k-parker parks 20 ms at a time all its life; its blocks carry
# the Java frames that parked it above libjvm's and the kernel's. Its
# sleeps are the futex waits under Unsafe_Park; a block of the runqueue
# state (preempted in its ~1% on CPU, e.g. in Parker::park's mutex) sits
# wherever it was running, but still under Known.parker from the root.
O=$WORK/pre.offcpu
cp "$MP/merged/offcpu/pid=$PRE/$R/folded.txt" "$O" || fail "read the first JVM's offcpu folded.txt"
park=';Known\.parker \(Known\.java\);java\.util\.concurrent\.locks\.LockSupport\.parkNanos \(LockSupport\.java\);jdk\.internal\.misc\.Unsafe\.park \(Unsafe\.java\);Unsafe_Park;(.*;)?__futex_abstimed_wait_common;'
pk=$(fsum "$O" ';Known\.parker \(Known\.java\)(;|$)')
rooted() { awk -v re="$1" '{ n = $NF; sub(/ [0-9]+$/, "") } $0 ~ re && /^java;__GI___clone3;start_thread;/ && !/;\[/ { s += n } END { printf "%.0f", s }' "$O"; }
pw=$(rooted "$park")
pr=$(rooted ';call_stub;java\.lang\.Thread\.run \(Thread\.java\);.*;Known\.parker \(Known\.java\)(;|$)')
# The sleeps add up to the time the thread lived under the daemon (less
# its first moments while the daemon set the JVM up, and the ~1% it runs).
pk_s=$(awk -v n="$pw" 'BEGIN { printf "%.1f", n / 1e6 }') # (folded.txt of offcpu: microseconds)
((pk > 0 && pr == pk)) && within "$pk_s" "$(awk -v t="$pre_life" 'BEGIN { print 0.8 * t }')" "$pre_most" &&
	ok "off-CPU: k-parker's blocks all under Known.parker from the thread's root, its sleeps ($pk_s s of its $pre_life s under the daemon) under Known.parker;LockSupport.parkNanos;Unsafe.park;Unsafe_Park;...;futex" ||
	{ fail "off-CPU: $pr of $pk us of Known.parker's blocks from the root, $pw us under Known.parker;LockSupport.parkNanos;Unsafe.park;Unsafe_Park;...;futex ($pk_s s, want 80% of $pre_life s to $pre_most s)"
	  grep 'Known\.parker' "$O" | grep -v ';__futex_abstimed_wait_common;' | head -3 | cut -c1-900; }

F=$WORK/withheld.folded
cp "$MP/merged/cpu/pid=$P/$R/folded.txt" "$F" || fail "read the withheld run's folded.txt"
n=$(fsum "$F"); j=$(fsum "$F" '\.java\)(;|$)')
((n > 100 && j == 0)) && grep -q 'JavaCalls::call_helper' "$F" &&
	ok "JDK 17 withheld: $n samples, native frames only (libjvm's kept), no Java frame" ||
	fail "JDK 17 withheld: $n samples, $j with Java frames (want none), libjvm's frames $(grep -c 'JavaCalls::call_helper' "$F") stacks"
u=$(metric 'proffs_java_processes_total{state="unsupported_version"}')
((${u:-0} >= 1)) && ok "metrics: the JVM counted as unsupported_version ($u)" || fail "metrics: unsupported_version is ${u:-missing}"
# Both JVMs have exited: the walked one's names are forgotten.
b=$(metric 'proffs_java_name_cache_bytes')
w=$(metric 'proffs_java_processes_total{state="walked"}')
((${w:-0} == 1 && ${b:-1} == 0)) && ok "metrics: the JVM walked, and its names forgotten since it exited (name cache 0 bytes)" ||
	fail "metrics: ${w:-no} JVMs walked (want 1), ${b:-no} bytes of names kept after it exited (want 0)"
run_stop "$RUN_PID" "$MP"
finish
