#!/usr/bin/env bash
# timeout: 120 (three times its longest run on a clean clone, stop 48)
# sampler_java_many: JVMs as a host has them (SPEC §3): classes unloaded
# while sampled, and many JVMs at once. One `proffs run` at 99 Hz, no
# flag in the JVMs (tests/helpers/java/Unload):
#  - class unloading, under Debian's JDK 17 and Temurin 25 side by side:
#    six generations of one class shape (Wk0001..Wk0006, each its own
#    class loader, run for 1 s of its thread's CPU time, ~99 samples,
#    then collected until unloaded: the JVM says so), odd ones under Unload.driveOdd, even ones under driveEven.
#    HotSpot lays each generation's Methods out where the last one's were,
#    and its code where freed code was: every generation shows under its
#    own driver with its own name, none under the other driver (a frame
#    named with a freed class's name shows as Wk<odd> under driveEven or
#    the reverse);
#  - 50 JVMs started at once (JDK 17), each spinning 200 ms of CPU in
#    Unload.many: every one walked (metrics), every one's samples in
#    Unload.many named and whole (under JavaMain, no marker).
# Not alone: nothing here is a share of time, only names.
source "$(dirname "$0")/sampler_lib.bash"

HZ=99
GENS=6
GEN_MS=1000 # of the thread's CPU: on a busy host a wall-clock second gave one
# generation 7 samples (CI, stop 50)
MANY=50
MANY_MS=200
JDKS=(/usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/temurin-25-jdk-amd64)
JDIR=$TESTS_BIN/java
STORE=$WORK/store
MP=$WORK/mp
mkdir -p "$MP"
for j in "${JDKS[@]}"; do [[ -x $j/bin/java ]] || die "no JDK at $j (JDK 17: deps.sh installs it; Temurin 25: this host's)"; done
[[ -f $JDIR/Unload.class && -f $JDIR/Wk0000.class ]] || die "Unload.class or Wk0000.class missing in $JDIR (make all)"
R=last-15m

PROFFS_DEBUG=${PROFFS_DEBUG:-} run_start "$STORE" "$MP" --hz $HZ
log "daemon up (pid $RUN_PID)"

# --- class unloading ---
UP=()
for i in 0 1; do
	"${JDKS[i]}/bin/java" -cp "$JDIR" Unload unload $GENS $GEN_MS >"$WORK/unload$i.out" 2>&1 &
	UP[i]=$!
	PIDS+=("${UP[i]}")
done
for i in 0 1; do wait "${UP[i]}" || fail "Unload under ${JDKS[i]} failed: $(tail -3 "$WORK/unload$i.out")"; done

# --- many JVMs at once ---
MP_PIDS=()
for ((k = 0; k < MANY; k++)); do
	"${JDKS[0]}/bin/java" -Xmx64m -XX:+UseSerialGC -cp "$JDIR" Unload many $MANY_MS >"$WORK/many$k.out" 2>&1 &
	MP_PIDS+=($!)
	PIDS+=($!)
done
bad=0
for p in "${MP_PIDS[@]}"; do wait "$p" || bad=$((bad + 1)); done
((bad == 0)) || fail "$bad of $MANY JVMs failed: $(cat "$WORK"/many*.out | grep -v '^$' | head -3)"
stored # the last batch
kill -0 "$RUN_PID" 2>/dev/null || die "the daemon died"

for i in 0 1; do
	jdk=$(basename "${JDKS[i]}")
	F=$WORK/unload$i.folded
	un=$(grep -c '^gen [0-9]* unloaded true$' "$WORK/unload$i.out")
	((un == GENS)) && ok "$jdk: the JVM unloaded all $GENS generations" ||
		fail "$jdk: the JVM unloaded $un of $GENS generations: $(head -8 "$WORK/unload$i.out" | tr '\n' ' ')"
	cp "$MP/merged/cpu/pid=${UP[i]}/$R/folded.txt" "$F" || { fail "$jdk: read its folded.txt"; continue; }
	# Each generation's samples under each driver.
	for ((g = 1; g <= GENS; g++)); do
		wk=$(printf 'Wk%04d' "$g")
		if ((g % 2)); then own=driveOdd other=driveEven; else own=driveEven other=driveOdd; fi
		n=$(fsum "$F" ";Unload\\.$own \\(Unload\\.java\\);$wk\\.run \\($wk\\.java\\)(;|$)")
		x=$(fsum "$F" ";Unload\\.$other \\(Unload\\.java\\);$wk\\.run \\($wk\\.java\\)(;|$)")
		((n >= 10 && x == 0)) && ok "$jdk: $wk.run: $n samples under Unload.$own, none under $other" ||
			{ fail "$jdk: $wk.run: $n samples under Unload.$own (want >= 10), $x under $other (want 0); the program: $(grep "^gen $g cpu_ms" "$WORK/unload$i.out")"
			  grep -o 'Unload\.drive[A-Za-z]* (Unload\.java);[^;]*' "$F" | sort | uniq -c; }
	done
	# Nothing under a driver but its own generations: the frame right
	# under it is its generations' Wk<n>.run, the loop's own clock
	# (System.nanoTime, a native method: a frame of its own while the
	# driver runs interpreted, as after each new generation's
	# deoptimization), or a native one (the VM's, when a loop goes
	# compiled), never another Java name (a name read from a freed class
	# would be Wk<other parity> or garbage).
	for d in Odd Even; do
		if [[ $d == Odd ]]; then re='^Wk000[135]\.run \(Wk000[135]\.java\)$'; else re='^Wk000[246]\.run \(Wk000[246]\.java\)$'; fi
		read -r t own other clock < <(awk -v d="Unload.drive$d (Unload.java)" -v re="$re" '
			{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";")
			  for (i = 1; i < k; i++) if (f[i] == d) {
				t += n
				if (f[i + 1] ~ re) own += n
				else if (f[i + 1] == "java.lang.System.nanoTime (System.java)") clock += n
				else if (f[i + 1] ~ / \([^;]*\.java\)$/) { other += n; print f[i + 1] > "/dev/stderr" }
				break } }
			END { print t + 0, own + 0, other + 0, clock + 0 }' "$F" 2>"$WORK/other$i$d")
		((t > 0 && own > 0 && other == 0)) && ok "$jdk: under Unload.drive$d only its generations' Java code ($own of $t samples, $clock in System.nanoTime; the rest in the VM)" ||
			{ fail "$jdk: under Unload.drive$d $own of $t samples its own generations', $other another Java frame's"
			  sort "$WORK/other$i$d" | uniq -c | head -3; }
	done
done

M=$WORK/metrics
cp "$MP/metrics" "$M" || die "read metrics"
w=$(metric 'proffs_java_processes_total{state="walked"}' "$M")
((${w:-0} >= MANY + 2)) && ok "metrics: $w JVMs walked ($MANY at once and the two unloading)" ||
	fail "metrics: ${w:-no} JVMs walked, $((MANY + 2)) started"
named=0 whole=0 short=()
for p in "${MP_PIDS[@]}"; do
	F=$WORK/many.folded
	cp "$MP/merged/cpu/pid=$p/$R/folded.txt" "$F" 2>/dev/null || { short+=("$p:unreadable"); continue; }
	n=$(fsum "$F" ';Unload\.many \(Unload\.java\)(;|$)')
	nw=$(awk '{ n = $NF; sub(/ [0-9]+$/, "") } /;Unload\.many \(Unload\.java\)(;|$)/ && /;JavaMain;/ && !/;\[/ { s += n } END { print s + 0 }' "$F")
	((n > 0)) && named=$((named + 1)) || short+=("$p:$n")
	((n > 0 && nw == n)) && whole=$((whole + 1))
done
((named == MANY)) && ok "all $MANY JVMs started at once show Unload.many (Unload.java)" ||
	fail "$named of $MANY JVMs show Unload.many (pid:samples of the others: ${short[*]:0:8})"
((whole == MANY)) && ok "in all $MANY, every sample of Unload.many reaches JavaMain without a marker" ||
	{ fail "in $whole of $MANY JVMs every sample of Unload.many reaches JavaMain without a marker"
	  grep -h 'Unload\.many' "$WORK"/many.folded | grep -Ev ';JavaMain;' | head -2 | cut -c1-400; }
run_stop "$RUN_PID" "$MP"
finish
