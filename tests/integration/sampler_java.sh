#!/usr/bin/env bash
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
#  - a second daemon that withholds JDK 17 (PROFFS_HS_WITHHOLD): native
#    frames only, the JVM counted as unsupported_version.
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
sleep 12 # the last batch
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
	h=$(fsum "$F" ';Known\.hot \(Known\.java\);Known\.heavy \(Known\.java\)(;|$)')
	l=$(fsum "$F" ';Known\.hot \(Known\.java\);Known\.light \(Known\.java\)(;|$)')
	got=$(pct "$h" $((h + l)))
	tol=$(band "$want" $((h + l)))
	((h + l >= MIN_N)) && within "$got" "$(awk -v w="$want" -v t="$tol" 'BEGIN{print w-t}')" "$(awk -v w="$want" -v t="$tol" 'BEGIN{print w+t}')" &&
		ok "$jdk: Known.heavy (Known.java) is $got% of heavy + light's $((h + l)) samples (the JVM: $want% +- $tol pp)" ||
		{ fail "$jdk: Known.heavy is $got% of heavy + light's $((h + l)) samples, the JVM says $want% (+- ${tol:-?} pp, >= $MIN_N samples)"
		  # each call's samples against what its CPU time predicts at HZ
		  awk -v h="$h" -v l="$l" -v hn="$hn" -v ln="$ln" -v hz=$HZ 'BEGIN {
			printf "    heavy %d samples of %.0f due (%.0f%%), light %d of %.0f (%.0f%%)\n",
			  h, hn * hz / 1e9, 100 * h / (hn * hz / 1e9), l, ln * hz / 1e9, 100 * l / (ln * hz / 1e9) }'
		  awk '{ print $NF "\t" $0 }' "$F" | sort -nr | head -3 | cut -c1-400; }

	# --- JNI: Java -> C -> Java ---
	u=$(fsum "$F" ';Known\.up \(Known\.java\)(;|$)')
	uw=$(fsum "$F" ';Known\.(jniLoop|d3) \(Known\.java\);Known\.down \(Known\.java\);Java_Known_down;jni_CallStaticLongMethod;(.*;)?call_stub;Known\.up \(Known\.java\)(;|$)')
	((u >= 20 && uw == u)) && ok "$jdk: all $u samples of Known.up run under jniLoop|d3;down;Java_Known_down;jni_CallStaticLongMethod;...;call_stub" ||
		{ fail "$jdk: $uw of $u samples of Known.up under jniLoop|d3;down;Java_Known_down;jni_CallStaticLongMethod;...;call_stub (want all, >= 20)"
		  grep 'Known\.up (Known' "$F" | grep -Ev ';Known\.(jniLoop|d3) \(Known\.java\);Known\.down \(Known\.java\);Java_Known_down;jni_CallStaticLongMethod;' | head -2 | cut -c1-500; }

	# --- whole stacks ---
	# (a marker is a frame that starts with "[": [truncated], [unwind: ...],
	# [java: ...], [jit]+0x...)
	j=$(fsum "$F" ' \([A-Za-z0-9_$]+\.java\)(;|$)')
	jr=$(awk '{ n = $NF; sub(/ [0-9]+$/, "") } / \([A-Za-z0-9_$]+\.java\)(;|$)/ && /^java;__GI___clone3;start_thread;/ && !/;\[/ { s += n } END { print s + 0 }' "$F")
	((j > 0 && jr == j)) && ok "$jdk: all $j samples with a Java frame reach the thread's root, no marker" ||
		{ fail "$jdk: $jr of $j samples with a Java frame reach clone3;start_thread without a marker"
		  grep -E ' \([A-Za-z0-9_$]+\.java\)(;| )' "$F" | grep -Ev '^java;__GI___clone3;start_thread;' | head -2 | cut -c1-500
		  grep -E ' \([A-Za-z0-9_$]+\.java\)(;| )' "$F" | grep -E ';\[' | head -2 | cut -c1-500
		  # each marker with the two frames above it, and how often
		  grep -E ' \([A-Za-z0-9_$]+\.java\)(;| )' "$F" | grep -oE '([^;]*;){1,2}\[[^];]*\][^; ]*' | sort | uniq -c | sort -rn | head -5 | cut -c1-300
		  grep -E '^proffs_unwind_(pending_total|builds_queued)' "$MP/metrics"; }

	# --- lines ---
	cp "$MP/merged/cpu/pid=${JP[i]}/$R/profile.pb" "$WORK/jvm$i.pb" || { fail "$jdk: read its profile.pb"; continue; }
	HOME=$WORK go tool pprof -traces -lines "$WORK/jvm$i.pb" >"$WORK/jvm$i.traces" 2>/dev/null || fail "$jdk: go tool pprof -traces -lines"
	# Each trace as "name:line;..." leaf first, Known.java's frames only.
	awk '/^-+\+/ { if (t != "") print t; t = ""; next }
		/ \(Known\.java\) Known\.java(:[0-9]+)?$/ { n = $0; sub(/^ *[0-9.]+[a-z]* +/, "", n); sub(/^ +/, "", n)
		  l = n ~ /:[0-9]+$/ ? n : "0"; sub(/.*:/, "", l); sub(/ \(Known\.java\) .*/, "", n)
		  t = t (t == "" ? "" : ";") n ":" l }
		END { if (t != "") print t }' "$WORK/jvm$i.traces" >"$WORK/jvm$i.lines"
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

# --- an unknown JDK: native frames, counted ---
PROFFS_HS_WITHHOLD=17 run_start "$STORE" "$MP" --hz $HZ
jvm "${JDKS[0]}" "$WORK/withheld.out" 3000; P=$JVM_PID
wait "$P"
sleep 12
F=$WORK/withheld.folded
cp "$MP/merged/cpu/pid=$P/$R/folded.txt" "$F" || fail "read the withheld run's folded.txt"
n=$(fsum "$F"); j=$(fsum "$F" '\.java\)(;|$)')
((n > 100 && j == 0)) && grep -q 'JavaCalls::call_helper' "$F" &&
	ok "JDK 17 withheld: $n samples, native frames only (libjvm's kept), no Java frame" ||
	fail "JDK 17 withheld: $n samples, $j with Java frames (want none), libjvm's frames $(grep -c 'JavaCalls::call_helper' "$F") stacks"
u=$(metric 'proffs_java_processes_total{state="unsupported_version"}')
((${u:-0} >= 1)) && ok "metrics: the JVM counted as unsupported_version ($u)" || fail "metrics: unsupported_version is ${u:-missing}"
run_stop "$RUN_PID" "$MP"
finish
