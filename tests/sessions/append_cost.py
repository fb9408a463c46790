#!/usr/bin/env python3
"""make sessions-append-cost: appending to a session file costs the same at 1 000 and 100 000
entries (issue 26: appending is O(1) in the file's size). Not wall time, which the loaded machine
makes noisy, but:

- instructions: tests/sessions/append_cost.c under callgrind (the open runs uninstrumented), APPENDS
  appends each dumped apart; the median append at 100 000 entries must cost at most LIMIT times the
  median at 1 000;
- bytes: the same program natively, the bytes read and written (rchar/wchar of /proc/self/io) by
  the appends: nothing read back, and the same bytes written per append at both sizes.

Then the canary: the same measurement with, inside each measured append, a call whose work grows
with the file (agent_session_get of every entry), at 1 000 and 10 000 entries (at 100 000 it would
cost minutes under callgrind, and what is caught at 10 000 would be caught at 100 000), must be
judged superlinear, else this test fails ("the canary was not caught").

The library is the suite's optimized build (target/suite, `make suite-lib`, as make cost-test):
opening 100 000 entries under valgrind takes the debug build minutes. Python 3 standard library
only; LIBAGENT_LIBDIR overrides the library's directory."""
import glob
import os
import re
import statistics
import subprocess
import sys

root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
lib = os.environ.get("LIBAGENT_LIBDIR", os.path.join(root, "target", "suite"))
out = os.path.join(root, "build", "sessions-append-cost")
SMALL, LARGE = 1000, 100000
CANARY_LARGE = 10000
APPENDS = 30
CANARY_APPENDS = 3  # each costs a read of every entry, ~18 MB of JSON at 100 000 entries
# Measured (debug build): the median append costs the same to within a few hundred instructions at
# both sizes; the canary is hundreds of times costlier at 100 000 entries.
LIMIT = 1.10


def fail(message):
    sys.exit(f"sessions-append-cost: {message}")


def run(command, **kwargs):
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, **kwargs)
    if done.returncode != 0 or "ok" not in done.stdout.split():
        fail(f"{' '.join(command)} failed (exit {done.returncode}):\n{done.stdout}{done.stderr[-3000:]}")
    return done.stdout


def instructions(binary, file, canary):
    """The median instructions of one append (callgrind dumps 'append K')."""
    name = os.path.basename(file) + (".canary" if canary else "")
    prefix = os.path.join(out, f"{name}.callgrind")
    for stale in glob.glob(prefix + "*"):
        os.remove(stale)
    # A fresh copy each time: the appends must not grow the file the next measurement opens.
    copy = os.path.join(out, "appended.jsonl")
    with open(file, "rb") as source, open(copy, "wb") as target:
        target.write(source.read())
    appends = CANARY_APPENDS if canary else APPENDS
    run(["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={prefix}", binary, copy,
         str(appends)] + (["canary"] if canary else []))
    counts = []
    for path in glob.glob(prefix + ".*"):
        text = open(path).read()
        if re.search(r"^desc: Trigger: Client Request: append \d+$", text, re.M):
            counts.append(int(re.search(r"^totals: (\d+)", text, re.M).group(1)))
    if len(counts) != appends:
        fail(f"{len(counts)} callgrind dumps of appends for {file}, expected {appends}")
    return statistics.median(counts)


def io(binary, file):
    copy = os.path.join(out, "appended.jsonl")
    with open(file, "rb") as source, open(copy, "wb") as target:
        target.write(source.read())
    line = next(l for l in run([binary, copy, str(APPENDS)]).splitlines() if l.startswith("io "))
    _, appends, read_bytes, written_bytes = line.split()
    return int(read_bytes) / int(appends), int(written_bytes) / int(appends)


def main():
    if not os.path.exists(os.path.join(lib, "libagent.so")):
        fail(f"no {lib}/libagent.so: run `make suite-lib` first")
    os.makedirs(out, exist_ok=True)
    binary = os.path.join(out, "append_cost")
    subprocess.run(["cc", "-Wall", "-Wextra", "-Werror", "-std=c11", "-O1", "-g", "-Iinclude", "-Itests/c",
                    "tests/sessions/append_cost.c", f"-L{lib}", "-lagent", f"-Wl,-rpath,{lib}", "-lpthread",
                    "-o", binary], cwd=root, check=True)
    files = {}
    for entries in (SMALL, CANARY_LARGE, LARGE):
        files[entries] = os.path.join(out, f"session-{entries}.jsonl")
        subprocess.run([sys.executable, os.path.join(root, "tests", "sessions", "generate.py"), files[entries],
                        str(entries), "--small"], check=True)
    good = True
    small, large = instructions(binary, files[SMALL], False), instructions(binary, files[LARGE], False)
    ratio = large / small
    verdict = "ok" if ratio <= LIMIT else "FAIL"
    good &= ratio <= LIMIT
    print(f"{verdict:5} instructions per append: {small:.0f} at {SMALL} entries, {large:.0f} at {LARGE} "
          f"({ratio:.3f}x, limit {LIMIT})")
    (read_small, written_small), (read_large, written_large) = io(binary, files[SMALL]), io(binary, files[LARGE])
    bytes_good = read_small == 0 and read_large == 0 and written_small == written_large and written_small > 0
    good &= bytes_good
    print(f"{'ok' if bytes_good else 'FAIL':5} bytes per append: read {read_small:.0f} / {read_large:.0f}, "
          f"written {written_small:.0f} / {written_large:.0f} (at {SMALL} / {LARGE} entries; expected nothing read, "
          f"the same written)")
    canary_small = instructions(binary, files[SMALL], True)
    canary_large = instructions(binary, files[CANARY_LARGE], True)
    caught = canary_large / canary_small > LIMIT
    good &= caught
    print(f"{'ok' if caught else 'FAIL':5} canary (an append followed by a read of every entry): "
          f"{canary_large / canary_small:.1f}x at {CANARY_LARGE} entries what it costs at {SMALL}: "
          f"{'caught' if caught else 'the canary was not caught'}")
    print(f"sessions-append-cost: {'appending costs the same at both sizes' if good else 'FAILED'}")
    sys.exit(0 if good else 1)


if __name__ == "__main__":
    main()
