#!/usr/bin/env python3
# pyline_dump.py - the oracle behind tests/unit/test_pyline.c.
#
# Run by the interpreter under test: compiles every .py file below LIBDIR
# (the interpreter's standard library; site-packages/dist-packages left
# out, files that do not compile skipped and counted), walks every code
# object (co_consts, recursively) and prints, one line per code object:
#
#   C <co_firstlineno> <len(co_code)> <co_linetable as hex or -> <start>,<end>,<line|N> ...
#
# where the triples are co_lines() as this interpreter yields them (N:
# None). The first line "V <major> <minor>" names the version; the last,
# "E <files compiled> <files skipped> <code objects>", ends the dump. MAX_FILES > 0 stops after that
# many files (sorted by path), for a bounded run.
# Written for 3.10 to 3.13; nothing outside the standard library is used.
import os
import sys
import warnings


def walk(code, out):
    table = code.co_linetable
    triples = " ".join(
        "%d,%d,%s" % (s, e, "N" if l is None else l) for s, e, l in code.co_lines()
    )
    out.write("C %d %d %s %s\n" % (code.co_firstlineno, len(code.co_code),
                                   table.hex() or "-", triples))
    n = 1
    for c in code.co_consts:
        if hasattr(c, "co_lines"):
            n += walk(c, out)
    return n


def main():
    libdir = sys.argv[1]
    max_files = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    paths = []
    for root, dirs, files in os.walk(libdir):
        dirs[:] = sorted(d for d in dirs if d not in ("site-packages", "dist-packages", "__pycache__"))
        paths.extend(os.path.join(root, f) for f in sorted(files) if f.endswith(".py"))
    paths.sort()
    if max_files > 0:
        paths = paths[:max_files]
    out = sys.stdout
    used = skipped = codes = 0
    out.write("V %d %d\n" % (sys.version_info[0], sys.version_info[1]))
    warnings.simplefilter("ignore")
    for p in paths:
        try:
            with open(p, "rb") as f:
                src = f.read()
            code = compile(src, p, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, OSError, UnicodeDecodeError, RecursionError,
                MemoryError, OverflowError):
            skipped += 1
            continue
        used += 1
        codes += walk(code, out)
    out.write("E %d %d %d\n" % (used, skipped, codes))
    out.flush()


if __name__ == "__main__":
    main()
