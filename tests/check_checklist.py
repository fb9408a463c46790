#!/usr/bin/env python3
"""Checks tests/CHECKLIST.md: every SPEC §10 item 1-220 names at least one test, and every named
`file.rs::function` exists as a test function in tests/."""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent
rows = {}
for line in (root / "CHECKLIST.md").read_text().splitlines():
    match = re.match(r"\| (\d+) \| .* \| (.*) \|$", line)
    if match:
        rows[int(match.group(1))] = re.findall(r"([\w/]+\.rs)::(\w+)", match.group(2))

problems = [f"item {n} has no row" for n in range(1, 221) if n not in rows]
problems += [f"item {n} names no test" for n, tests in rows.items() if not tests]
for n, tests in rows.items():
    for file, function in tests:
        path = root / file
        if not path.exists() or not re.search(rf"fn {function}\b", path.read_text()):
            problems.append(f"item {n}: {file}::{function} does not exist")
for problem in problems:
    print(problem)
print(f"checklist: {len(rows)} items mapped, {len(problems)} problems")
sys.exit(1 if problems else 0)
