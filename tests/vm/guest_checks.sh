#!/usr/bin/env bash
# guest_checks.sh - the profiler's known answers on whatever kernel this runs
# on: inside a VM booted by tests/vm/run.sh (tests/integration/kernels_vm.sh
# runs it on Debian 12's 6.1 and 6.12), or directly on the host (where it
# must pass too: that checks the script itself). Root, ~110 s of wall time
# in a TCG guest.
#
# ONE `proffs run --offcpu --batch-interval 2s` (otherwise its defaults: the
# default rate, 19 Hz, and the default unwinder; no PROFFS_* switches),
# the workloads in three phases of PHASE seconds so that at most three
# CPU-bound threads share the two vCPUs, results read through the mounted
# tree. Each check mirrors a host integration test's regex and bound; a
# share is judged within sampler_lib's `band` (3 sigma of the samples it is
# measured from, >= 3 pp) because at 19 Hz a phase holds ~300 samples of a
# program, where the host tests have thousands.
#  a. no `refused` line in the daemon's log; proffs_kernel_feature 1 for
#     cpu_sampler unwind_tables python ruby java js offcpu
#  b. truth (frame pointers): iterateLong 90.9% of the samples under
#     iterateLong or iterateShort, within band; those two >= 94% of the
#     program's samples; the stack main;iterateLong;iterate whole in >= 90% of its samples
#     (sampler_run.sh)
#  c. truth_nofp: the same shares; _start;...;main;
#     iterateLong;iterate whole in >= 95% (sampler_unwind.sh)
#  d. off-CPU: the 900:100 ms sleeper (offcpu_truth sleeper): waitLong
#     87.9-93.9% of its off-CPU time, its stack whole from _start through
#     main;waitLong to the kernel's hrtimer_nanosleep in >= 90% of it, and
#     its blocks add up to its run (+- 5%) (offcpu.sh)
#  e. py_known.py under Debian's python3.11: >= 95% of the samples taken
#     after the interpreter's start-up carry its frames; heavy
#     (py_known.py)'s share within band of the program's own figure
#     (sampler_python.sh's `known`; the denominators differ from there,
#     see below: start-up is not negligible under TCG)
#  f. rb_known.rb under Debian's ruby 3.1: heavy's share of the main
#     thread's samples within band of its own figure (sampler_ruby.sh;
#     start-up counted on both sides, as for Python)
#  g. Known.java under Debian's JDK 17: Known.heavy's share of heavy +
#     light under Known.hot within band of the JVM's own (ThreadMXBean)
#     figure (sampler_java.sh's known_share; Known.class and its JNI
#     library are the Makefile's, build/tests/java, as there)
#  h. known.js under NodeSource's node 20: per thread (main, worker),
#     heavy's share of heavy + light within band of the program's own
#     figure (sampler_node.sh)
#  and SIGTERM: exit 0, no mount left.
# Sample-count minimums are the host tests' scaled by the samples a phase
# here can hold: MIN * (19 Hz * PHASE s) / (host Hz * host seconds), see
# `scaled` (e.g. truth: 1500 at 99 Hz over 62 s -> 116).
# With VM_SHARE set (tests/vm/run.sh), the profiles, the programs' outputs
# and the daemon's log are left in VM_SHARE/$(uname -r)/.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PROFFS=$ROOT/build/proffs
TESTS_BIN=$ROOT/build/tests
source "$ROOT/tests/integration/sampler_lib.bash"

HZ=19     # proffs run's default rate (no --hz given)
PHASE=25  # seconds per phase
# The runtimes' phases: on one vCPU (kernels_vm runs both guests at once,
# one each) their threads get a third or half of a CPU: longer phases
# give them the samples the minimums (scaled to PHASE on two) ask for.
RT_PHASE=$PHASE JVM_PHASE=$PHASE
if (($(nproc) < 2)); then RT_PHASE=40 JVM_PHASE=45; fi
HELP=$ROOT/tests/helpers
STORE=$WORK/store
MP=$WORK/mp
R=last-15m
PYBIN=/usr/bin/python3.11
RUBY=/usr/bin/ruby
NODE=/usr/bin/node
JDK=/usr/lib/jvm/java-17-openjdk-amd64
JDIR=$TESTS_BIN/java
mkdir -p "$MP"
# The daemon runs from a copy: other work in this tree rebuilds
# build/proffs in place now and then, which kills a daemon running from
# it with SIGBUS.
cp "$PROFFS" "$WORK/proffs" || die "copy $PROFFS"
PROFFS=$WORK/proffs
for x in "$PROFFS" "$TESTS_BIN/truth" "$TESTS_BIN/truth_nofp" "$TESTS_BIN/offcpu_truth" $PYBIN $RUBY $NODE "$JDK/bin/java"; do
	[[ -x $x ]] || die "$x is missing (make all; deps.sh)"
done
[[ -f $JDIR/Known.class && -f $JDIR/libknownjni.so ]] || die "Known.class or libknownjni.so missing in $JDIR (make all)"
T_START=$SECONDS
log "kernel $(uname -r)${VM:+ (VM)}, $(nproc) CPUs"

# scaled MIN HOST_HZ HOST_SECS: a host test's minimum sample count for a
# run of HOST_SECS at HOST_HZ, scaled to a PHASE-second run at HZ.
scaled() { awk -v m="$1" -v h="$2" -v s="$3" -v g=$HZ -v p=$PHASE 'BEGIN { printf "%d\n", m * g * p / (h * s) + 0.5 }'; }
# share_check LABEL GOT WANT N MIN: GOT% within band(WANT, N) of WANT%,
# from N >= MIN samples.
share_check() {
	local label=$1 got=$2 want=$3 n=$4 min=$5 tol
	tol=$(band "$want" "$n")
	if ((n >= min)) && within "$got" "$(awk -v w="$want" -v t="$tol" 'BEGIN { print w - t }')" \
		"$(awk -v w="$want" -v t="$tol" 'BEGIN { print w + t }')"; then
		ok "$label: $got% of $n samples (want $want +- $tol pp, >= $min samples)"
	else
		fail "$label: $got% of $n samples, want $want +- $tol pp from >= $min samples"
		return 1
	fi
}
# split_shares F NAME: sets tot (F's samples), long (under iterateLong),
# pair (under iterateLong or iterateShort), share (long in pair, %) and pp
# (pair in tot, %). The truth is 10:1 between the two calls. What else the
# program does is not part of it: its start and exit (ld.so and the 9p
# reads behind it, ~1%) and its clock once a cycle, which on 6.1 here is a
# system call (the guest's clocksource has no vDSO read; ~2% of samples
# under main;__clock_gettime, 6.12: 0.3%). Judged against the whole
# process, that cost put 6.1's mean share at 87.7 (7 runs) against 90.9.
split_shares() {
	tot=$(fsum "$1"); long=$(fsum "$1" ';iterateLong(;|$)')
	pair=$((long + $(fsum "$1" ';iterateShort(;|$)')))
	share=$(pct "$long" "$pair"); pp=$(pct "$pair" "$tot")
	log "$2: $tot samples, $pair under iterateLong or iterateShort, iterateLong $share% of those"
}
# heaviest_other F: the three heaviest stacks of F under neither call.
heaviest_other() { grep -Ev ';iterate(Long|Short)(;|$)' "$1" | awk '{ print $NF "\t" $0 }' | sort -nr | head -3 | cut -c1-300; }
# heaviest F: the three heaviest stacks of folded.txt F (for a failure).
heaviest() { awk '{ print $NF "\t" $0 }' "$1" | sort -nr | head -3 | cut -c1-300; }

# ================= the daemon =================
t0=$EPOCHREALTIME
run_start "$STORE" "$MP" --offcpu --batch-interval 2s
log "daemon up (pid $RUN_PID) in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s"

# --- a. features ---
for f in cpu_sampler unwind_tables python ruby java js offcpu; do
	v=$(metric "proffs_kernel_feature{feature=\"$f\"}")
	[[ $v == 1 ]] && ok "metrics: proffs_kernel_feature{feature=\"$f\"} 1" ||
		fail "metrics: proffs_kernel_feature{feature=\"$f\"} is '${v:-missing}', want 1"
done
# As offcpu.sh: the tables of what already runs are built first (up to 20 s).
for i in $(seq 100); do [[ $(metric proffs_unwind_builds_queued) == 0 ]] && break; sleep 0.2; done
log "unwind tables of running processes built after $((i / 5)) s"

# ================= phase 1: truth, truth_nofp, python3.11 =================
# (and the off-CPU sleeper through phases 1 and 2: it sleeps, no CPU)
SLEEP_SECS=$((2 * PHASE))
"$TESTS_BIN/offcpu_truth" sleeper $SLEEP_SECS >"$WORK/sleeper.out" & LP=$!; PIDS+=("$LP")
T1=$SECONDS
# (a unit 10 times shorter: this CPU is emulated, see tests/helpers/truth.c)
TRUTH_UNIT=20000 "$TESTS_BIN/truth" $PHASE >/dev/null & TP=$!; PIDS+=("$TP")
TRUTH_UNIT=20000 "$TESTS_BIN/truth_nofp" $PHASE >/dev/null & NP=$!; PIDS+=("$NP")
"$PYBIN" "$HELP/py_known.py" $PHASE >"$WORK/py.out" & PP=$!; PIDS+=("$PP")
wait "$TP" || fail "truth failed"
wait "$NP" || fail "truth_nofp failed"
wait "$PP" || fail "py_known.py failed"
log "phase 1 (truth, truth_nofp, python3.11): $((SECONDS - T1)) s"

# ================= phase 2: ruby (one CPU: its GVL), node (two threads) =================
T2=$SECONDS
"$RUBY" "$HELP/rb_known.rb" $RT_PHASE >"$WORK/rb.out" & RP=$!; PIDS+=("$RP")
"$NODE" "$HELP/js/known.js" run $RT_PHASE >"$WORK/node.out" 2>&1 & JSP=$!; PIDS+=("$JSP")
wait "$RP" || fail "rb_known.rb failed"
wait "$JSP" || fail "known.js failed: $(tail -3 "$WORK/node.out")"
wait "$LP" || fail "offcpu_truth sleeper failed"
log "phase 2 (ruby, node): $((SECONDS - T2)) s"

# ================= phase 3: JDK 17 (k-hot, k-jni) =================
# As sampler_java.sh's jvm(), with the spin told once the JVM is ready.
T3=$SECONDS
mkfifo "$WORK/jvm.in"
"$JDK/bin/java" -XX:CompileCommand=quiet -XX:CompileCommand=dontinline,Known::heavy \
	-XX:CompileCommand=dontinline,Known::light -cp "$JDIR" Known "$JDIR/libknownjni.so" \
	<"$WORK/jvm.in" >"$WORK/jvm.out" 2>&1 & JP=$!; PIDS+=("$JP")
exec 7>"$WORK/jvm.in"
for i in $(seq 600); do grep -q '^ready$' "$WORK/jvm.out" && break; sleep 0.1; done
grep -q '^ready$' "$WORK/jvm.out" || fail "Known under JDK 17 not ready in 60 s: $(tail -3 "$WORK/jvm.out")"
log "JVM ready after $((SECONDS - T3)) s"
echo "spin $((JVM_PHASE * 1000))" >&7
sleep "$JVM_PHASE.5"
echo times >&7
echo quit >&7
exec 7>&-
wait "$JP" || fail "Known under JDK 17 failed: $(tail -3 "$WORK/jvm.out")"
log "phase 3 (JDK 17): $((SECONDS - T3)) s"

stored # every sample taken so far is in the tree
kill -0 "$RUN_PID" 2>/dev/null || die "the daemon died"

# ================= b. truth, frame pointers =================
F=$WORK/truth.folded
cp "$MP/merged/cpu/pid=$TP/$R/folded.txt" "$F" || die "read truth's folded.txt"
split_shares "$F" truth
# sampler_run.sh: >= 1500 samples of a 62 s run at 99 Hz
share_check "truth: iterateLong share of the two" "$share" 90.9 "$pair" "$(scaled 1500 99 62)" || heaviest "$F"
within "$pp" 94 100 && ok "truth: iterateLong and iterateShort $pp% of $tot samples" ||
	{ fail "truth: iterateLong and iterateShort only $pp% of $tot samples"; heaviest_other "$F"; }
# (a sample taken in the kernel, an interrupt's return to user mode,
# ends in its kernel frames: 8% of them in one run on 6.12)
whole=$(fsum "$F" '^truth;(_start;__libc_start_main[^;]*;)?(__libc_start_call_main;)?main;iterateLong;iterate(;[^;]*_\[k\])*$')
wp=$(pct "$whole" "$long")
within "$wp" 90 100 && ok "truth: stack truth;main;iterateLong;iterate whole in $wp% of iterateLong's $long samples" ||
	{ fail "truth: stack truth;main;iterateLong;iterate whole in only $wp% of $long"; grep iterateLong "$F" | sort -t' ' -k2 -nr | head -5 | cut -c1-300; }

# ================= c. truth without frame pointers =================
F=$WORK/truth_nofp.folded
cp "$MP/merged/cpu/pid=$NP/$R/folded.txt" "$F" || die "read truth_nofp's folded.txt"
split_shares "$F" truth_nofp
# sampler_unwind.sh: >= 500 samples of a >= 30 s run at 99 Hz
share_check "truth_nofp: iterateLong share of the two" "$share" 90.9 "$pair" "$(scaled 500 99 30)" || heaviest "$F"
within "$pp" 94 100 && ok "truth_nofp: iterateLong and iterateShort $pp% of $tot samples" ||
	{ fail "truth_nofp: iterateLong and iterateShort only $pp% of $tot samples"; heaviest_other "$F"; }
whole=$(fsum "$F" '^truth_nofp;_start;__libc_start_main[^;]*;__libc_start_call_main;main;iterateLong;iterate(;[^;]*_\[k\])*$')
wp=$(pct "$whole" "$long")
within "$wp" 95 100 && ok "truth_nofp: _start;...;main;iterateLong;iterate whole in $wp% of iterateLong's $long samples" ||
	{ fail "truth_nofp: whole stack in only $wp% of iterateLong's $long samples"; grep iterateLong "$F" | sort -t' ' -k2 -nr | head -5 | cut -c1-300; }

# ================= d. off-CPU: the sleeper =================
F=$WORK/sleeper.folded
cp "$MP/merged/offcpu/pid=$LP/$R/folded.txt" "$F" || die "read the sleeper's offcpu folded.txt"
ms() { awk -v v="$1" 'BEGIN { printf "%.0f\n", v / 1000 }'; } # offcpu counts are µs
long=$(fsum "$F" ';main;waitLong;'); short=$(fsum "$F" ';main;waitShort;'); all=$(fsum "$F")
share=$(pct "$long" "$all")
log "sleeper: $(ms "$all") ms off CPU: waitLong $(ms "$long") ms, waitShort $(ms "$short") ms; slept $(cat "$WORK/sleeper.out") s by its own clock"
within "$share" 87.9 93.9 && ok "offcpu: waitLong $share% of the sleeper's off-CPU time (90.0 expected; 90.9 +- 3)" ||
	{ fail "offcpu: waitLong $share%, want 90.9 +- 3"; heaviest "$F"; }
within "$(pct "$all" $((SLEEP_SECS * 1000000)))" 95 105 && ok "offcpu: the sleeper's blocks add up to $(ms "$all") ms of its $SLEEP_SECS s" ||
	fail "offcpu: the sleeper's blocks add up to $(ms "$all") ms, want $((SLEEP_SECS * 1000)) +- 5%"
whole=$(fsum "$F" '^offcpu_truth;_start;__libc_start_main[^;]*;__libc_start_call_main;main;waitLong;nap;[^;]*nanosleep[^;]*;[^;]*clock_nanosleep;entry_SYSCALL_64[^;]*_\[k\];do_syscall_64_\[k\];.*hrtimer_nanosleep_\[k\]$')
within "$(pct "$whole" "$long")" 90 100 &&
	ok "offcpu: waitLong's stack whole (user frames from _start through main;waitLong, kernel frames to hrtimer_nanosleep) in $(pct "$whole" "$long")% of its time" ||
	{ fail "offcpu: waitLong's stack whole in only $(pct "$whole" "$long")%"; grep waitLong "$F" | sort -t' ' -k2 -nr | head -3 | cut -c1-400; }

# ================= e. Python =================
# The program's figure is heavy's share of ALL its thread's CPU time since
# it started, start-up included; on the host start-up is ~20 ms and
# sampler_python.sh divides by the samples that carry Python frames.
# Under TCG the interpreter's start-up (Py_InitializeFromConfig: imports,
# and the guest's first /dev/urandom read generating entropy) takes 2-4 s
# of CPU, 10-15% of the run, so here both sides keep it: heavy's samples
# over all of the process's samples (one thread). And "carries Python
# frames" is judged, as its comment means it, on the samples taken once
# the interpreter runs the script (under Py_RunMain); the share over all
# samples is printed.
F=$WORK/py.folded
cp "$MP/merged/cpu/pid=$PP/$R/folded.txt" "$F" || die "read py_known.py's folded.txt"
tot=$(fsum "$F"); py=$(fsum "$F" ' \(py_known\.py\)')
run=$(fsum "$F" ';Py_RunMain;'); runpy=$(fsum "$F" ';Py_RunMain;(.*;)?[^;]* \(py_known\.py\)')
log "python3.11: $tot samples, $py with py_known.py frames ($(pct "$py" "$tot")%), $run after start-up (under Py_RunMain); the program says: $(cat "$WORK/py.out")"
within "$(pct "$runpy" "$run")" 95 100 && ok "python3.11: $(pct "$runpy" "$run")% of the $run samples after start-up carry Python frames" ||
	{ fail "python3.11: only $(pct "$runpy" "$run")% of the $run samples after start-up carry Python frames"; heaviest "$F"; }
want=$(sed -n 's/.*heavy=\([0-9.]*\).*/\1/p' "$WORK/py.out")
got=$(pct "$(fsum "$F" ';heavy \(py_known\.py\)(;|$)')" "$tot")
# sampler_python.sh: >= 500 samples of a 20 s run at 499 Hz
[[ -n $want ]] || fail "python3.11: the program printed no figure for heavy"
[[ -z $want ]] || share_check "python3.11: heavy (py_known.py) of all samples" "$got" "$want" "$tot" "$(scaled 500 499 20)" || heaviest "$F"

# ================= f. Ruby =================
# As for Python: the program's figure is heavy's share of all of the main
# thread's CPU time since it started; Ruby's start-up (rubygems and the
# default gems, ~3-5 s of CPU under TCG, a third of the run) is in it, so
# the samples' denominator is all of the main thread's samples (those not
# under start_thread, where its spinner and sleeper threads run), not
# sampler_ruby.sh's samples under <main>;main (the same on the host, where
# start-up is ~50 ms). Its minimum still counts the samples under main.
F=$WORK/rb.folded
cp "$MP/merged/cpu/pid=$RP/$R/folded.txt" "$F" || die "read rb_known.rb's folded.txt"
mainre='^ruby;(.*;)?<main> \(rb_known\.rb\);main \(rb_known\.rb\);'
inmain=$(fsum "$F" "$mainre")
tot=$(($(fsum "$F") - $(fsum "$F" ';start_thread;')))
want=$(sed -n 's/.*heavy=\([0-9.]*\).*/\1/p' "$WORK/rb.out")
got=$(pct "$(fsum "$F" "$mainre(.*;)?heavy \\(rb_known\\.rb\\)(;|\$)")" "$tot")
log "ruby: $(fsum "$F") samples, $tot of the main thread, $inmain of them under main (rb_known.rb); the program says: $(grep '=' "$WORK/rb.out" | head -1)"
# sampler_ruby.sh: >= 300 main-thread samples of a 20 s run at 99 Hz
((inmain >= $(scaled 300 99 20))) || fail "ruby: only $inmain samples under main (rb_known.rb), want >= $(scaled 300 99 20)"
[[ -n $want ]] || fail "ruby: the program printed no figure for heavy"
[[ -z $want ]] || share_check "ruby: heavy (rb_known.rb) of the main thread" "$got" "$want" "$tot" "$(scaled 300 99 20)" || heaviest "$F"

# ================= g. Java =================
F=$WORK/jvm.folded
cp "$MP/merged/cpu/pid=$JP/$R/folded.txt" "$F" || die "read the JVM's folded.txt"
hn=$(awk '$1 == "heavy" { print $2 }' "$WORK/jvm.out"); ln=$(awk '$1 == "light" { print $2 }' "$WORK/jvm.out")
if [[ -n $hn && -n $ln ]]; then
	want=$(awk -v h="$hn" -v l="$ln" 'BEGIN { printf "%.1f", 100 * h / (h + l) }')
	h=$(fsum "$F" ';Known\.hot \(Known\.java\);Known\.heavy \(Known\.java\)(;|$)')
	l=$(fsum "$F" ';Known\.hot \(Known\.java\);Known\.light \(Known\.java\)(;|$)')
	log "jdk17: $(fsum "$F") samples, heavy $h + light $l under Known.hot; the JVM: heavy ${hn} ns, light ${ln} ns"
	# sampler_java.sh: MIN_N 500 of an 8 s run at 99 Hz
	share_check "jdk17: Known.heavy (Known.java) of heavy + light" "$(pct "$h" $((h + l)))" "$want" $((h + l)) "$(scaled 500 99 8)" || heaviest "$F"
else
	fail "jdk17: the JVM printed no CPU figures: $(tail -3 "$WORK/jvm.out")"
fi

# ================= h. Node =================
F=$WORK/node.folded
cp "$MP/merged/cpu/pid=$JSP/$R/folded.txt" "$F" || die "read node's folded.txt"
K='\(known\.js\)'
log "node20: $(fsum "$F") samples"
for th in main worker; do
	if [[ $th == main ]]; then root='^node;_start;'; tag=''; else root='^node;__GI___clone3;start_thread;'; tag='worker-'; fi
	hn=$(awk -v k="${tag}heavy" '$1 == "TRUTH" && $2 == k { print $3 }' "$WORK/node.out")
	ln=$(awk -v k="${tag}light" '$1 == "TRUTH" && $2 == k { print $3 }' "$WORK/node.out")
	[[ -n $hn && -n $ln ]] || { fail "node20: the program printed no figures for its $th thread"; continue; }
	want=$(awk -v h="$hn" -v l="$ln" 'BEGIN { printf "%.1f", 100 * h / (h + l) }')
	h=$(fsum "$F" "$root(.*;)?outer $K;heavy $K(;|\$)")
	l=$(fsum "$F" "$root(.*;)?outer $K;light $K(;|\$)")
	# sampler_node.sh: MIN_N 500 of a 16 s run at 99 Hz
	share_check "node20 $th thread: heavy (known.js) of heavy + light" "$(pct "$h" $((h + l)))" "$want" $((h + l)) "$(scaled 500 99 16)" ||
		heaviest "$F"
done

# ================= the end =================
run_stop "$RUN_PID" "$MP" && ok "SIGTERM: exit 0 in $RUN_STOP_S s, no mount left"
if grep -q 'refused' "$RUN_LOG"; then
	fail "the daemon's log has 'refused' lines:"; grep -A 3 'refused' "$RUN_LOG" | head -30
else
	ok "no 'refused' line in the daemon's log ($(wc -l <"$RUN_LOG") lines)"
fi
grep -E 'error|warning' "$RUN_LOG" | head -5
# For the host: the profiles and the daemon's log, in VM_SHARE.
if [[ -n ${VM_SHARE:-} && -d $VM_SHARE ]]; then
	mkdir -p "$VM_SHARE/$(uname -r)"
	cp "$WORK"/*.folded "$WORK"/*.out "$RUN_LOG" "$VM_SHARE/$(uname -r)/" 2>/dev/null
fi
log "kernel $(uname -r): $((SECONDS - T_START)) s"
finish
