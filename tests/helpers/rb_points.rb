# Stops where the Ruby walk is checked (test_rbwalk): at each point the
# thread prints its own caller_locations(0) and then blocks reading one
# byte of stdin, on the same line, so the stack a debugger sees is the
# printed one under IO#read. Output per point:
#   point NAME TID
#   loc LABEL<TAB>PATH<TAB>LINENO<TAB>ABSOLUTE_PATH   (newest first)
#   end
# and "done" at the end. usage: ruby rb_points.rb < control-pipe
require_relative "rb_lib"

$name = nil

def stop!
  emit(caller_locations(0)); $stdin.read(1); 0
end

def emit(locs)
  out = +"point #{$name} #{File.readlink('/proc/thread-self').split('/').last}\n"
  locs.each do |l|
    out << "loc #{l.label}\t#{l.path}\t#{l.lineno}\t#{l.absolute_path}\n"
  end
  out << "end\n"
  $stdout.write(out)
  $stdout.flush
end

def point(name)
  $name = name
  yield
end

def leaf
  stop!
end

def mid
  leaf
end

def top
  mid
end

def in_each
  [1].each { |x| leaf }
end

def in_sort_by
  [2, 1].sort_by { |x| x == 1 ? stop! : x }
end

class Shape
  def area
    [1].map do
      RbLib.call_back { stop! }
    end
  end
end

def deep(n)
  n.zero? ? stop! : deep(n - 1)
end

point("nested") { top }
point("each") { in_each }
point("sort_by") { in_sort_by }
point("class+lib") { Shape.new.area }
point("eval") { eval("stop!") }
point("deep") { deep(70) }
point("thread") { Thread.new { mid }.join }
Shape.define_method(:defined) { stop! }
point("define_method") { Shape.new.defined }
puts "done"
