#!/usr/bin/env python3
"""Compares a kit's traces so that the comparison cannot pass on nothing.

    python3 tests/kits/compare.py --kit NAME --fixtures DIR --expected DIR --actual DIR \\
        --comparator KIT/compare.py [--trace-suffix .jsonl] [--masks FILE] [--ops OP,OP]

Before the kit's own comparator runs, the three directories must agree: at least one fixture
(`*.json` directly in --fixtures), an expected trace for every fixture and a fixture for every
expected trace, an actual trace for every expected one and an expected trace for every actual one.
The trace comparison itself (and its normalisation) is the kit's compare.py, run on EXPECTED and
ACTUAL; its summary line (`... N passed, M failed[, K skipped]`) must count exactly one compared
and passed case per fixture. The last line printed is

    NAME: N/N fixtures compared, N passed

and the exit status is 0 only then. --masks names a JSON file mapping fixture names to
`{"generatedIds": [regex, ...]}`: in those traces every string that matches one of the patterns
(ids the implementation generates, which differ between the reference and libagent) becomes
`<generated id K>`, K counting distinct ids in order of first appearance, in expected and actual
alike, before the kit's comparator sees them. A missing or malformed id is not masked, so it
still differs. --ops keeps only the fixtures whose `op` member is one of the named ops (a kit whose
runner takes some of its ops): the others and their expected traces are left out of every check
and of the comparison, and a fixture that cannot be read as JSON is an error.

Python 3.11 standard library only.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# The kits' summary lines: "conformance: 3 passed, 0 failed", "coding conformance: 3 passed,
# 0 failed", "sessions conformance: ...", the agent kit's optional ", K skipped".
SUMMARY = re.compile(r"^[A-Za-z][A-Za-z -]*: (\d+) passed, (\d+) failed(?:, (\d+) skipped)?$")
FAILED_CASE = re.compile(r"^FAIL ([^\s:]+)")


def names(directory: Path, suffix: str) -> set[str]:
    return {path.name.removesuffix(suffix) for path in directory.iterdir() if path.name.endswith(suffix) and path.is_file()}


def mask_value(value, patterns: list[re.Pattern], seen: dict[str, str]):
    if isinstance(value, str):
        if any(pattern.fullmatch(value) for pattern in patterns):
            return seen.setdefault(value, f"<generated id {len(seen) + 1}>")
        return value
    if isinstance(value, list):
        return [mask_value(item, patterns, seen) for item in value]
    if isinstance(value, dict):
        return {key: mask_value(item, patterns, seen) for key, item in value.items()}
    return value


def mask_file(path: Path, patterns: list[re.Pattern]) -> None:
    """Rewrites one trace (JSON Lines or one JSON document) with its generated ids masked."""
    seen: dict[str, str] = {}
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        lines = [json.dumps(mask_value(json.loads(line), patterns, seen), ensure_ascii=False)
                 for line in text.splitlines() if line.strip()]
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    else:
        path.write_text(json.dumps(mask_value(json.loads(text), patterns, seen), ensure_ascii=False) + "\n",
                        encoding="utf-8")


def masked_copies(expected: Path, actual: Path, masks: dict, suffix: str, scratch: Path) -> tuple[Path, Path]:
    """Copies of both directories with the masked fixtures' generated ids replaced."""
    copies = []
    for label, source in (("expected", expected), ("actual", actual)):
        target = scratch / label
        shutil.copytree(source, target)
        for name, mask in masks.items():
            patterns = [re.compile(p) for p in mask.get("generatedIds", [])]
            trace = target / f"{name}{suffix}"
            if patterns and trace.is_file():
                mask_file(trace, patterns)
        copies.append(target)
    return copies[0], copies[1]


def select_ops(kit: str, fixtures: Path, expected: Path, ops: set[str], suffix: str,
               scratch: Path) -> tuple[Path, Path, list[str]]:
    """Copies of the fixtures and expected traces whose fixture's `op` is in `ops` (the given
    directories when one is missing: the set checks then name it)."""
    problems = []
    if not (fixtures.is_dir() and expected.is_dir()):
        return fixtures, expected, problems
    selected_fixtures, selected_expected = scratch / "fixtures", scratch / "expected"
    selected_fixtures.mkdir()
    selected_expected.mkdir()
    for path in sorted(fixtures.glob("*.json")):
        try:
            op = json.loads(path.read_text(encoding="utf-8")).get("op")
        except (ValueError, AttributeError) as error:
            problems.append(f"{kit}: fixture {path} is not a JSON object ({error}), so its op is unknown.")
            continue
        if op not in ops:
            continue
        shutil.copy(path, selected_fixtures / path.name)
        trace = expected / (path.stem + suffix)
        if trace.is_file():
            shutil.copy(trace, selected_expected / trace.name)
    for trace in expected.iterdir():
        name = trace.name.removesuffix(suffix)
        if trace.name.endswith(suffix) and not (fixtures / f"{name}.json").is_file():
            shutil.copy(trace, selected_expected / trace.name)  # reported as without a fixture
    return selected_fixtures, selected_expected, problems


def check_sets(kit: str, fixtures: Path, expected: Path, actual: Path, suffix: str) -> tuple[int, list[str]]:
    """The fixture count and one sentence per way the three directories disagree."""
    problems = []
    for label, directory in (("fixtures", fixtures), ("expected", expected), ("actual", actual)):
        if not directory.is_dir():
            problems.append(f"{kit}: the {label} directory {directory} does not exist.")
    if problems:
        return 0, problems
    fixture_names = names(fixtures, ".json")
    expected_names = names(expected, suffix)
    actual_names = names(actual, suffix)
    if not fixture_names:
        problems.append(f"{kit}: {fixtures} holds no fixtures (*.json); a set of nothing cannot pass.")
    for name in sorted(fixture_names - expected_names):
        problems.append(f"{kit}: fixture {name} has no expected trace {expected / (name + suffix)}; record it with the kit's oracle.")
    for name in sorted(expected_names - fixture_names):
        problems.append(f"{kit}: expected trace {expected / (name + suffix)} has no fixture in {fixtures}; remove it or restore the fixture.")
    for name in sorted(expected_names - actual_names):
        problems.append(f"{kit}: expected trace {name}{suffix} has no actual trace in {actual}; the runner did not write it.")
    for name in sorted(actual_names - expected_names):
        problems.append(f"{kit}: actual trace {actual / (name + suffix)} has no expected trace in {expected}; nothing checks it.")
    return len(fixture_names), problems


def run_comparator(kit: str, comparator: Path, expected: Path, actual: Path, fixture_count: int) -> list[str]:
    """Runs the kit's compare.py (its output shown as is) and checks what it counted."""
    result = subprocess.run([sys.executable, str(comparator), str(expected), str(actual)],
                            capture_output=True, text=True)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    summary = SUMMARY.match(lines[-1].strip()) if lines else None
    if summary is None:
        return [f"{kit}: the last line of {comparator}'s output is not a 'N passed, M failed' summary, so nothing can be counted."]
    passed, failed, skipped = (int(group or 0) for group in summary.groups())
    compared = passed + failed - skipped
    problems = []
    if result.returncode != 0 or failed:
        failing = [match.group(1) for match in map(FAILED_CASE.match, lines) if match]
        problems.append(f"{kit}: {failed} of {passed + failed} traces differ from the expected ones (exit {result.returncode}): "
                        f"{', '.join(failing) or 'see above'}.")
    if compared != fixture_count or passed != fixture_count:
        problems.append(f"{kit}: the comparator compared {compared} traces and passed {passed}, "
                        f"but there are {fixture_count} fixtures.")
    return problems


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Compare a kit's traces; fail when anything is uncounted.")
    parser.add_argument("--kit", required=True, help="the name printed in the summary (e.g. provider-conformance)")
    parser.add_argument("--fixtures", required=True, type=Path, help="the fixtures (or scenarios) directory")
    parser.add_argument("--expected", required=True, type=Path, help="the expected traces")
    parser.add_argument("--actual", required=True, type=Path, help="the traces the runner wrote")
    parser.add_argument("--comparator", required=True, type=Path, help="the kit's compare.py")
    parser.add_argument("--trace-suffix", default=".jsonl", help="a trace's file name ending (default .jsonl)")
    parser.add_argument("--masks", type=Path, help="JSON: fixture name -> {generatedIds: [regex, ...]}")
    parser.add_argument("--ops", help="compare only the fixtures whose op is one of these (comma-separated)")
    args = parser.parse_args(argv)

    if args.ops:
        with tempfile.TemporaryDirectory(prefix="kit-ops-") as scratch:
            ops = {op for op in args.ops.split(",") if op}
            args.fixtures, args.expected, problems = select_ops(args.kit, args.fixtures, args.expected, ops,
                                                                args.trace_suffix, Path(scratch))
            status = compare(args)
            for problem in problems:
                print(problem)
            return 1 if problems else status
    return compare(args)


def compare(args: argparse.Namespace) -> int:
    if not args.comparator.is_file():
        print(f"{args.kit}: the comparator {args.comparator} does not exist.")
        return 1
    fixture_count, problems = check_sets(args.kit, args.fixtures, args.expected, args.actual, args.trace_suffix)
    if args.expected.is_dir() and args.actual.is_dir():
        with tempfile.TemporaryDirectory(prefix="kit-compare-") as scratch:
            expected, actual = args.expected, args.actual
            if args.masks:
                masks = json.loads(args.masks.read_text(encoding="utf-8"))
                if args.fixtures.is_dir():
                    problems += [f"{args.kit}: {args.masks} masks {name}, which is not a fixture in {args.fixtures}."
                                 for name in sorted(set(masks) - names(args.fixtures, ".json"))]
                expected, actual = masked_copies(expected, actual, masks, args.trace_suffix, Path(scratch))
            problems += run_comparator(args.kit, args.comparator, expected, actual, fixture_count)
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"{args.kit}: {fixture_count}/{fixture_count} fixtures compared, {fixture_count} passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
