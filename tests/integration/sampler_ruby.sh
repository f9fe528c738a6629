#!/usr/bin/env bash
# timeout: 180 (three times its longest run on a clean clone, stop 48)
# sampler_ruby: Ruby shows as Ruby (SPEC §3). One `proffs run` at 99 Hz
# with Debian's ruby (3.1), no flag in the process:
#  - a known answer (tests/helpers/rb_known.rb): heavy and light run the
#    same loop 10:1, cb runs it as sort_by's block (Ruby -> C -> Ruby),
#    each call timed with the thread's own CPU clock; in the main
#    thread's samples heavy, light and cb are within 3 pp of the
#    program's own figures; names are `label (file.rb)`;
#  - the spinner and sleeper threads show their own frames only: no
#    impossible stack (cb under heavy, the sleeper under a busy frame);
#  - lines: each frame above `work` (a method, a block, the C methods
#    each and sort_by) has the line Ruby's own caller_locations gave at
#    that call, in profile.pb (go tool pprof -traces -lines);
#  - a thread that runs the GC: its samples carry [ruby: gc];
#  - 40 short scripts (0.3 s) started while two spinners keep the host
#    busy: >= 98% of their samples that ran Ruby code carry Ruby frames
#    (set up from their maps at exec, before their samples are drained);
#  - /prof/metrics: Ruby processes walked, walks complete, frames;
#  - a second daemon that withholds 3.1's layout (PROFFS_RB_WITHHOLD):
#    native frames only, the process counted as unsupported_version.
# alone: yes (shares are judged on samples)
source "$(dirname "$0")/sampler_lib.bash"

HZ=99
SECS=20
RUBY=/usr/bin/ruby
HELP=$ROOT/tests/helpers
STORE=$WORK/store
MP=$WORK/mp
mkdir -p "$MP"
[[ -x $RUBY ]] || die "Debian's ruby is needed at $RUBY (deps.sh installs it)"
command -v go >/dev/null || die "go is needed for go tool pprof"

PROFFS_DEBUG=1 run_start "$STORE" "$MP" --hz $HZ
log "daemon up (pid $RUN_PID)"

# --- the known answer, and a GC thread beside it ---
"$RUBY" "$HELP/rb_known.rb" $SECS >"$WORK/known.out" & KP=$!; PIDS+=("$KP")
"$RUBY" -e 'a = []; t = Time.now + 8; while Time.now < t; 2000.times { a << "x" * 64 }; a.clear; GC.start; end' & GP=$!; PIDS+=("$GP")
wait "$GP" || fail "the GC script failed"
wait "$KP" || fail "rb_known.rb failed"

# --- 40 short scripts while two spinners keep the host busy ---
BURST=() HOGS=()
for i in 1 2; do timeout 8 sh -c 'while :; do :; done' & HOGS+=($!); PIDS+=($!); done
for i in $(seq 40); do
	"$RUBY" -e 't = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 0.3
def spin_short(t) = (x = 0; x += 1 while Process.clock_gettime(Process::CLOCK_MONOTONIC) < t; x)
spin_short(t)' & BURST+=($!); PIDS+=($!)
	sleep 0.15
done
wait "${BURST[@]}"
kill "${HOGS[@]}" 2>/dev/null
stored # the last batch
kill -0 "$RUN_PID" 2>/dev/null || die "the daemon died"
R=last-15m

# --- shares of the main thread ---
F=$WORK/known.folded
cp "$MP/merged/cpu/pid=$KP/$R/folded.txt" "$F" || die "read rb_known's folded.txt"
log "the program says: $(head -2 "$WORK/known.out" | tail -1)"
mainre='^ruby;(.*;)?<main> \(rb_known\.rb\);main \(rb_known\.rb\);'
tot=$(FOLDED_SCALE=1 fsum "$F" "$mainre")
((tot >= 300)) || fail "the main thread has only $tot samples (want >= 300)"
for fn in heavy light cb; do
	got=$(pct "$(FOLDED_SCALE=1 fsum "$F" "$mainre(.*;)?$fn \\(rb_known\\.rb\\)(;|\$)")" "$tot")
	want=$(sed -n "s/.*$fn=\([0-9.]*\).*/\1/p" "$WORK/known.out")
	[[ -n $want ]] || { fail "the program printed no figure for $fn"; continue; }
	within "$got" "$(awk -v w="$want" 'BEGIN{print w-3}')" "$(awk -v w="$want" 'BEGIN{print w+3}')" &&
		ok "$fn (rb_known.rb): $got% of the main thread's $tot samples (program: $want%)" ||
		fail "$fn (rb_known.rb): $got% of the main thread's $tot samples, the program says $want% (+- 3 pp)"
done
# cb through sort_by (a C method) and its C frames, under via_c.
c=$(FOLDED_SCALE=1 fsum "$F" ';cb \(rb_known\.rb\)(;|$)')
cw=$(FOLDED_SCALE=1 fsum "$F" ';via_c \(rb_known\.rb\);sort_by \(rb_known\.rb\);each \(rb_known\.rb\);(.*;)?block in via_c \(rb_known\.rb\);cb \(rb_known\.rb\)(;|$)')
((c > 0 && cw == c)) && ok "cb: all $c samples run via_c;sort_by;each;<C frames>;block in via_c;cb" ||
	{ fail "cb: $cw of $c samples through via_c;sort_by;each;...;block in via_c"; grep 'cb (rb_known' "$F" | head -2 | cut -c1-300; }
# No impossible stack.
bad=$(FOLDED_SCALE=1 fsum "$F" '(heavy|light) \(rb_known\.rb\);(.*;)?(cb|spin) \(rb_known|spin \(rb_known\.rb\);(.*;)?(heavy|light|cb) \(|sleeper \(rb_known\.rb\);(.*;)?(work|heavy|spin) \(')
((bad == 0)) && ok "no impossible stack (cb or spin under heavy/light, the sleeper under busy frames)" ||
	{ fail "$bad samples in impossible stacks"; grep -E 'sleeper \(rb_known\.rb\);(.*;)?(work|heavy|spin) \(' "$F" | head -2 | cut -c1-300; }
sp=$(FOLDED_SCALE=1 fsum "$F" ';spin \(rb_known\.rb\);work \(rb_known\.rb\)(;|$)')
((sp * 4 >= tot)) && ok "the spinner thread shows its own frames: $sp samples in spin;work" || fail "the spinner: $sp samples in spin;work"

# --- lines, as caller_locations gave them ---
cp "$MP/merged/cpu/pid=$KP/$R/profile.pb" "$WORK/known.pb" || die "read rb_known's profile.pb"
HOME=$WORK go tool pprof -traces -lines "$WORK/known.pb" >"$WORK/traces" 2>/dev/null || fail "go tool pprof -traces -lines"
# A trace's frames (leaf first) as "label:line", from "name (file) path:line".
awk '/^-+\+/ { if (t != "") print t; t = ""; next }
	/rb_known\.rb:[0-9]+$/ { n = $0; sub(/^ *[0-9.]+[a-z]* +/, "", n); sub(/^ +/, "", n)
	  l = n; sub(/.*:/, "", l); sub(/ \(rb_known\.rb\) .*/, "", n); t = t (t == "" ? "" : ";") n ":" l }
	END { if (t != "") print t }' "$WORK/traces" >"$WORK/trace.lines"
while read -r _ want; do
	# Ruby's frames from the caller of work up to (not with) main, whose
	# own line here is the probe's, not the timed loop's.
	chain=${want%%;main:*}
	first=${chain%%:*}
	n=$(grep -c "^work:[0-9]*;$first:" "$WORK/trace.lines")
	good=$(grep -c "^work:[0-9]*;$chain;" "$WORK/trace.lines")
	((n > 0 && good == n)) && ok "lines: $good traces through $first read $chain, as caller_locations said" ||
		{ fail "lines: $good of $n traces through $first read $chain"; grep "^work:[0-9]*;$first:" "$WORK/trace.lines" | head -2; }
done < <(grep '^stack ' "$WORK/known.out")

# --- the GC ---
F=$WORK/gc.folded
cp "$MP/merged/cpu/pid=$GP/$R/folded.txt" "$F" || fail "read the GC script's folded.txt"
g=$(FOLDED_SCALE=1 fsum "$F" ';start \([^)]*\);\[ruby: gc\](;|$)'); gt=$(FOLDED_SCALE=1 fsum "$F")
((g * 10 >= gt && gt > 0)) && ok "GC: $g of $gt samples carry [ruby: gc] under GC.start (start)" ||
	{ fail "GC: $g of $gt samples carry [ruby: gc] under start"; sort -t' ' -k2 -n "$F" | tail -2 | cut -c1-300; }

# --- short scripts ---
# A sample can carry Ruby frames once the VM runs Ruby code: its native
# stack holds rb_vm_exec (or the walk found Ruby frames). Before that
# (ld.so, ruby_setup, option parsing) and after (the VM's teardown) a
# process runs C only: ~3.5% of a 0.3 s script's samples, measured here,
# whatever the profiler does. Judged: the samples that ran Ruby code.
# (a Ruby frame: "label (file.rb)", "(-e)", or Ruby's own "(<internal:...>)")
read -r all rb vm < <(burst_samples "$R" ' \(([^();]*\.rb|-e|<internal:[^();]*>)\)(;| )' ';rb_vm_exec(;| )' "${BURST[@]}")
log "burst: $rb of $all samples of 40 short scripts carry Ruby frames; $vm ran Ruby code"
((all >= 200)) && within "$(pct "$rb" "$vm")" 98 100 &&
	ok "40 short scripts on a busy host: $(pct "$rb" "$vm")% of the $vm samples that ran Ruby code carry Ruby frames ($(pct "$rb" "$all")% of all $all)" ||
	fail "40 short scripts: $(pct "$rb" "$vm")% of the $vm samples that ran Ruby code carry Ruby frames (want >= 98; $all in all)"

# --- metrics ---
M=$WORK/metrics
cp "$MP/metrics" "$M" || die "read metrics"
for k in 'proffs_ruby_processes_total{state="walked"}' 'proffs_ruby_frames_total' 'proffs_ruby_walks_total{end="complete"}' 'proffs_ruby_gc_samples_total'; do
	v=$(metric "$k" "$M")
	((${v:-0} > 0)) && ok "metrics: $k $v" || fail "metrics: $k is ${v:-missing}"
done
# what samples cost the BPF program, told apart by runtime: Ruby's
# samples were timed under ruby (the spinners' and the daemon's under
# native), each at some ns and not over a millisecond
for rtk in ruby native; do
	n=$(metric "proffs_bpf_samples_by_runtime_total{runtime=\"$rtk\"}" "$M")
	t=$(metric "proffs_bpf_sample_seconds_total{runtime=\"$rtk\"}" "$M")
	awk -v n="${n:-0}" -v t="${t:-0}" 'BEGIN { exit !(n > 100 && t > 0 && t / n < 0.001) }' &&
		ok "metrics: $n $rtk samples timed, $(awk -v n="$n" -v t="$t" 'BEGIN { printf "%.0f", t * 1e9 / n }') ns each" ||
		fail "metrics: $rtk samples timed ${n:-missing}, seconds ${t:-missing}"
done
w=$(metric 'proffs_ruby_processes_total{state="walked"}' "$M")
((${w:-0} >= 42)) && ok "metrics: $w Ruby processes walked (42 started)" || fail "metrics: $w Ruby processes walked, 42 started"
run_stop "$RUN_PID" "$MP"

# --- an unknown version: native frames, counted ---
PROFFS_RB_WITHHOLD=3.1 run_start "$STORE" "$MP" --hz $HZ
"$RUBY" "$HELP/rb_known.rb" 4 >/dev/null & KP=$!; PIDS+=("$KP")
wait "$KP"
stored
F=$WORK/withheld.folded
cp "$MP/merged/cpu/pid=$KP/$R/folded.txt" "$F" || fail "read the withheld run's folded.txt"
n=$(FOLDED_SCALE=1 fsum "$F"); r=$(FOLDED_SCALE=1 fsum "$F" '\.rb\)(;| )')
((n > 100 && r == 0)) && grep -q 'rb_vm_exec' "$F" &&
	ok "3.1 withheld: $n samples, native frames only (rb_vm_exec kept), no Ruby frame" ||
	fail "3.1 withheld: $n samples, $r with Ruby frames"
u=$(metric 'proffs_ruby_processes_total{state="unsupported_version"}')
((${u:-0} >= 1)) && ok "metrics: $u Ruby processes of an unknown version" || fail "metrics: unsupported_version ${u:-missing}"
run_stop "$RUN_PID" "$MP"
finish
