#!/usr/bin/env python3
"""elfsyms.py - gives an ELF file a symbol table of our making, for the
tests of the symbol loader's caps (tests/integration/elf_caps.sh).

  elfsyms.py IN OUT NSYMS NAMELEN

OUT is IN (a stripped x86-64 executable) with a .symtab of NSYMS function
symbols (over its .text, 1 byte each, wrapping) whose names are NAMELEN
bytes long, and its .strtab, appended after the file's contents with the
section header table moved behind them. Nothing that runs changes: the
program still runs as IN did.
"""
import struct
import sys

src, dst, nsyms, namelen = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
b = bytearray(open(src, "rb").read())
assert b[:4] == b"\x7fELF" and b[4] == 2 and b[5] == 1, "a 64-bit little-endian ELF"
(e_shoff,) = struct.unpack_from("<Q", b, 0x28)
e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", b, 0x3A)
shdrs = [bytearray(b[e_shoff + i * 64:e_shoff + (i + 1) * 64]) for i in range(e_shnum)]
# .text's address and size, and the section names' table
shstr = shdrs[e_shstrndx]
str_off, str_size = struct.unpack_from("<QQ", shstr, 0x18)
names = bytes(b[str_off:str_off + str_size])
def sname(h):
    (n,) = struct.unpack_from("<I", h, 0)
    return names[n:names.index(b"\0", n)].decode()
text = [h for h in shdrs if sname(h) == ".text"][0]
text_ndx = shdrs.index(text)
(t_addr,) = struct.unpack_from("<Q", text, 0x10)
(t_size,) = struct.unpack_from("<Q", text, 0x20)
# new section names, appended to a copy of .shstrtab at the end
new_names = names + b".symtab\0.strtab\0"
symtab_name, strtab_name = len(names), len(names) + len(".symtab\0")
strtab = bytearray(b"\0")
syms = bytearray(24)  # the null symbol
for i in range(nsyms):
    nm = (b"f%09d_" % i).ljust(namelen, b"x")[:namelen]
    off = len(strtab)
    strtab += nm + b"\0"
    syms += struct.pack("<IBBHQQ", off, 0x12, 0, text_ndx, t_addr + i % max(t_size, 1), 1)
out = bytearray(b[:e_shoff]) if e_shoff == len(b) - e_shnum * 64 else bytearray(b)
# A build id of its own: the daemon shares symbol tables by build id, and
# these files are one program with other tables.
bid = [h for h in shdrs if sname(h) == ".note.gnu.build-id"]
if bid:
    (o,) = struct.unpack_from("<Q", bid[0], 0x18)
    namesz, descsz = struct.unpack_from("<II", out, o)
    d = o + 12 + (namesz + 3) // 4 * 4
    tag = struct.pack("<II", nsyms, namelen)
    for i in range(8):
        out[d + descsz - 8 + i] ^= tag[i]
def append(data):
    while len(out) % 8:
        out.append(0)
    at = len(out)
    out.extend(data)
    return at
shstr_at = append(new_names)
sym_at = append(syms)
str_at = append(strtab)
struct.pack_into("<QQ", shstr, 0x18, shstr_at, len(new_names))
n = len(shdrs)
symh = struct.pack("<IIQQQQIIQQ", symtab_name, 2, 0, 0, sym_at, len(syms), n + 1, 1, 8, 24)
strh = struct.pack("<IIQQQQIIQQ", strtab_name, 3, 0, 0, str_at, len(strtab), 0, 0, 1, 0)
sh_at = append(b"".join(bytes(h) for h in shdrs) + symh + strh)
struct.pack_into("<Q", out, 0x28, sh_at)
struct.pack_into("<H", out, 0x3C, n + 2)
open(dst, "wb").write(out)
