#!/usr/bin/env python3
"""make cost-test: instruction counts, not time. Builds tests/cost/stream_work.c against the debug
libagent, runs it once under callgrind (every scenario with N, 2N and 4N deltas, each run's
instructions dumped apart), and fails when the instructions of the second N..4N deltas are more
than RATIO_LIMIT times those of N..2N: linear work gives 2, work that re-reads what was streamed so
far gives 4 (allocation counts cannot see a re-scan that allocates nothing; this can)."""
import glob
import os
import re
import subprocess
import sys

N = int(os.environ.get("COST_DELTAS", "1000"))
RATIO_LIMIT = 2.6
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
lib = os.path.join(root, "target", "debug")
out = os.path.join(root, "build", "cost")
os.makedirs(out, exist_ok=True)
binary = os.path.join(out, "stream_work")
subprocess.run(["cc", "-Wall", "-Wextra", "-Werror", "-std=c11", "-O1", "-g", "-Iinclude",
                "tests/cost/stream_work.c", f"-L{lib}", "-lagent", f"-Wl,-rpath,{lib}", "-o", binary],
               cwd=root, check=True)
for stale in glob.glob(os.path.join(out, "callgrind.out*")):
    os.remove(stale)
run = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/callgrind.out",
                      binary, str(N)], cwd=root, capture_output=True, text=True)
if run.returncode != 0 or "ok" not in run.stdout:
    sys.exit(f"cost: stream_work failed under callgrind (exit {run.returncode}):\n{run.stdout}{run.stderr[-3000:]}")

totals = {}  # scenario -> {deltas: instructions}
for path in glob.glob(os.path.join(out, "callgrind.out.*")):
    text = open(path).read()
    label = re.search(r"^desc: Trigger: Client Request: (\S+) (\d+)$", text, re.M)
    count = re.search(r"^totals: (\d+)", text, re.M)
    if label and count:
        totals.setdefault(label.group(1), {})[int(label.group(2))] = int(count.group(1))

failed = False
for scenario in ["text-json", "text-typed", "thinking", "toolcall", "toolcall-json", "transcript"]:
    runs = totals.get(scenario, {})
    if set(runs) != {N, 2 * N, 4 * N}:
        print(f"cost: {scenario}: missing dumps ({sorted(runs)})")
        failed = True
        continue
    first, second = runs[2 * N] - runs[N], runs[4 * N] - runs[2 * N]
    ratio = second / first if first > 0 else float("inf")
    verdict = "ok" if ratio < RATIO_LIMIT else "FAIL"
    print(f"{verdict:5} {scenario}: {runs[N] / N:.0f} instructions per delta at N={N}; "
          f"deltas {2 * N}..{4 * N} cost {ratio:.2f}x deltas {N}..{2 * N} (linear 2, quadratic 4)")
    failed |= verdict != "ok"
print(f"cost: {'FAILED' if failed else 'every scenario is linear'}")
sys.exit(1 if failed else 0)
