# A known answer for the Ruby walk: `heavy` and `light` run the same
# inner loop, called 10:1 per round, and `cb` runs it as the block of
# Array#sort_by (a C method), so its frames are Ruby -> C -> Ruby. Each
# call is timed with the thread's CPU clock; at the end the main thread
# prints each one's share of the CPU time it used since it started, to
# compare with a profile. Two more threads: `spinner` burns CPU in
# `spin`, `sleeper` sleeps in Kernel#sleep (its samples, off CPU, must
# show its own frames, never the busy thread's).
#
# usage: ruby rb_known.rb SECONDS
# Prints "threads TID_MAIN TID_SPIN TID_SLEEP" once all run, then at the
# end "heavy=H light=L cb=C" (percent of the main thread's CPU time) and
# "stack LABEL:LINE;..." lines: caller_locations above `work` for each of
# heavy, light and cb, as Ruby reports them.

# A snapshot of Ruby's own view of the stack, taken once per caller when
# the main thread asks (a cheap flag check otherwise), printed at the end:
# each frame's label and line as caller_locations reports them.
$snap = nil
$snaps = []
$main_thread = Thread.current

def work
  # (the main thread's: the spinner runs work too, and one that took the
  # GVL between `$snap = true` and main's call took the snapshot)
  if $snap && Thread.current == $main_thread
    $snaps << caller_locations(1).map { |l| "#{l.label}:#{l.lineno}" }.join(";")
    $snap = nil
  end
  acc = 0
  i = 0
  while i < 20_000
    acc ^= i
    i += 1
  end
  acc
end

def heavy
  work
end

def light
  work
end

def cb(x)
  work
end

def via_c
  [1].sort_by { |x| cb(x) }
end

def spin(stop)
  $spinning = true
  work until stop.call
end

def sleeper(stop)
  $sleeping = true
  sleep 0.05 until stop.call
end

def tid
  File.readlink("/proc/thread-self").split("/").last
end

def main(secs)
  clock = Process::CLOCK_THREAD_CPUTIME_ID
  t = { "heavy" => 0, "light" => 0, "cb" => 0 }
  done = false
  stop = -> { done }
  tids = Queue.new
  th = [Thread.new { tids << [1, tid]; spin(stop) },
        Thread.new { tids << [2, tid]; sleeper(stop) }]
  got = [[0, tid], tids.pop, tids.pop].sort.map(&:last)
  # Both threads in their own methods before anyone looks: a thread
  # that pushed its tid may wait for the GVL inside Queue#push a while.
  sleep 0.01 until $spinning && $sleeping
  puts "threads #{got.join(' ')}"
  $stdout.flush
  # Ruby's own view of each call site, once (not timed).
  $snap = true; heavy
  $snap = true; light
  $snap = true; via_c
  t_end = Process.clock_gettime(Process::CLOCK_MONOTONIC) + secs
  while Process.clock_gettime(Process::CLOCK_MONOTONIC) < t_end
    10.times do
      t0 = Process.clock_gettime(clock, :nanosecond)
      heavy
      t["heavy"] += Process.clock_gettime(clock, :nanosecond) - t0
    end
    t0 = Process.clock_gettime(clock, :nanosecond)
    light
    t["light"] += Process.clock_gettime(clock, :nanosecond) - t0
    t0 = Process.clock_gettime(clock, :nanosecond)
    via_c
    t["cb"] += Process.clock_gettime(clock, :nanosecond) - t0
  end
  total = Process.clock_gettime(clock, :nanosecond)
  done = true
  th.each(&:join)
  puts t.map { |k, v| format("%s=%.2f", k, 100.0 * v / total) }.join(" ")
  $snaps.each { |s| puts "stack #{s}" }
end

main(Float(ARGV[0] || 5))
