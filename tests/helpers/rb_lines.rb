# The line oracle's other half (test_rbline): compiles every .rb file of
# Ruby's standard library (files that do not compile are skipped and
# counted), keeps every iseq alive, and prints for each (recursively its
# children) the address of its RubyVM::InstructionSequence wrapper, its
# size in VALUEs and, per instruction, its position, the line to_a gives
# it (the last line number to_a pushed before it; -1 before the first)
# and its length. Then it waits on stdin while the test reads its memory.
#   iseq WRAPPER SIZE pos:line:len pos:line:len ...
#   files N skipped M
# usage: ruby rb_lines.rb [MAX_FILES]
require "fiddle"

$keep = []
max = Integer(ARGV[0] || 0)
dir = RbConfig::CONFIG["rubylibdir"]
files = Dir.glob(File.join(dir, "**", "*.rb")).sort
files = files.first(max) if max > 0
skipped = 0
out = $stdout

def dump(iseq, out)
  $keep << iseq
  line = -1
  pos = 0
  parts = []
  iseq.to_a[13].each do |e|
    case e
    when Integer then line = e
    when Array
      parts << "#{pos}:#{line}:#{e.size}"
      pos += e.size
    end
  end
  out.write("iseq #{Fiddle.dlwrap(iseq).to_s(16)} #{pos} #{parts.join(' ')}\n")
  iseq.each_child { |c| dump(c, out) }
end

files.each do |f|
  begin
    dump(RubyVM::InstructionSequence.compile_file(f), out)
  rescue SyntaxError, StandardError
    skipped += 1
  end
end
out.write("files #{files.size} skipped #{skipped}\n")
out.flush
$stdin.read(1)
