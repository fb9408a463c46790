#!/usr/bin/env python3
"""Code and data of a library by crate, from its symbol table (make size-report).

usage: size-by-crate.py LIB [TOP]

Reads `nm -S -C LIB` (demangled, with sizes) and adds each symbol's size to the crate its path
starts with (`<T as core::fmt::Debug>::fmt` counts for T's crate: generic code is charged to the
crate whose type it was instantiated for, which is where monomorphisation shows up). cargo-bloat
does the same for binaries but refuses a package whose library is also a staticlib and an rlib.
"""
import collections
import re
import subprocess
import sys

lib = sys.argv[1]
top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
out = subprocess.run(["nm", "-S", "-C", lib], capture_output=True, text=True, check=True).stdout
code, data = collections.Counter(), collections.Counter()
for line in out.splitlines():
    parts = line.split(" ", 3)
    if len(parts) < 4:
        continue
    try:
        size = int(parts[1], 16)
    except ValueError:
        continue
    kind, name = parts[2], parts[3]
    name = re.sub(r"^(?:[<&]|dyn |impl |mut )+", "", name)
    crate = re.split(r"::|[<> ,(\[]", name)[0] or "?"
    (code if kind in "tTwW" else data)[crate] += size
total_code, total_data = sum(code.values()), sum(data.values())
print(f"  code in named symbols: {total_code:>10} B   data: {total_data:>10} B")
print(f"  {'code B':>10} {'data B':>10}  crate")
for crate, size in (code + data).most_common(top):
    print(f"  {code[crate]:>10} {data[crate]:>10}  {crate}")
