#!/usr/bin/env python3
"""Re-records every kit's fixtures with its pinned oracle and compares them with the committed
expected traces (make oracle-check; not part of make test).

    python3 tests/kits/oracle_check.py --shared ../shared [--out build/oracle-check]

Each kit's oracle directory (SHARED/<kit>/oracle) is copied to OUT/<kit>-oracle and its pinned
packages installed there from the npm registry (never into SHARED); the installed versions must be
the pinned ones. Every fixture set, the kits' and the repository's own, is recorded into
OUT/recorded/<set>/ and compared with tests/kits/compare.py: the committed traces as expected, the
new recording as actual, the kit's comparator in between (so its normalisation, `<any>` and masks
apply), the repository's id masks too. Files that are not byte-identical are counted as well. The
coding oracle's grep and find run ripgrep and fd >= 10 from PATH: OUT/tools/bin is put first, and
fd is installed there with `cargo install` when the PATH has none.

Python 3.11 standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FD_VERSION = "10.2.0"


def fixture_sets(shared: Path) -> list[dict]:
    """Every set of fixtures with committed traces: (label, kit, fixtures, expected, trace suffix, masks)."""
    tests = REPO / "tests"
    conformance = {"kit": "conformance", "suffix": ".jsonl", "comparator": shared / "conformance/compare.py"}
    providers = {"kit": "providers", "suffix": ".jsonl", "comparator": shared / "conformance/compare.py"}
    coding = {"kit": "coding", "suffix": ".json", "comparator": shared / "coding/compare.py"}
    sessions = {"kit": "sessions", "suffix": ".json", "comparator": shared / "sessions/compare.py"}
    return [
        dict(conformance, label="conformance", fixtures=shared / "conformance/scenarios", expected=shared / "conformance/expected"),
        dict(conformance, label="conformance-extra", fixtures=tests / "conformance/extra/scenarios",
             expected=tests / "conformance/extra/expected"),
        dict(providers, label="providers", fixtures=shared / "providers/fixtures", expected=shared / "providers/expected"),
        dict(providers, label="providers-more", fixtures=shared / "providers/more/fixtures", expected=shared / "providers/more/expected"),
        dict(providers, label="providers-extra", fixtures=tests / "providers/fixtures", expected=tests / "providers/expected",
             masks=tests / "providers/masks.json"),
        dict(providers, label="providers-result-only", fixtures=tests / "providers/result-only/fixtures",
             expected=tests / "providers/result-only/expected"),
        dict(coding, label="coding", fixtures=shared / "coding/fixtures", expected=shared / "coding/expected"),
        dict(coding, label="coding-extra", fixtures=tests / "coding/fixtures", expected=tests / "coding/expected"),
        dict(sessions, label="sessions", fixtures=shared / "sessions/fixtures", expected=shared / "sessions/expected"),
        dict(sessions, label="sessions-context-extra", fixtures=tests / "sessions/context/fixtures",
             expected=tests / "sessions/context/expected"),
    ]


def record_command(kit: str, oracle: Path, fixtures: Path, out: Path) -> list[str]:
    """The oracle's own command line for a whole directory (each kit's README, "Running")."""
    if kit == "conformance":
        return ["node", str(oracle / "run.mjs"), "--out", str(out), str(fixtures)]
    return ["node", str(oracle / "record.mjs"), str(fixtures), str(out)]


def install_oracle(kit: str, shared: Path, out: Path) -> Path:
    """OUT/<kit>-oracle with the pinned packages installed; fails when npm installed other versions."""
    source = shared / kit / "oracle"
    target = out / f"{kit}-oracle"
    pinned = json.loads((source / "package.json").read_text())["dependencies"]
    target.mkdir(parents=True, exist_ok=True)
    for file in source.iterdir():
        if file.is_file():  # the kit's files are read-only: replace rather than overwrite
            (target / file.name).unlink(missing_ok=True)
            shutil.copyfile(file, target / file.name)
    installed = {name: installed_version(target, name) for name in pinned}
    if installed != pinned:
        print(f"oracle-check: installing {kit}'s oracle ({', '.join(f'{n}@{v}' for n, v in pinned.items())})", flush=True)
        subprocess.run(["npm", "install", "--no-package-lock", "--no-audit", "--no-fund", "--loglevel=error"],
                       cwd=target, check=True)
        installed = {name: installed_version(target, name) for name in pinned}
    if installed != pinned:
        sys.exit(f"oracle-check: {target} holds {installed} after npm install, not the pinned {pinned}.")
    return target


def installed_version(oracle: Path, package: str) -> str | None:
    manifest = oracle / "node_modules" / package / "package.json"
    return json.loads(manifest.read_text()).get("version") if manifest.is_file() else None


def tool_version(command: str, path: str) -> tuple[int, ...] | None:
    try:
        text = subprocess.run([command, "--version"], capture_output=True, text=True, env={"PATH": path}).stdout
    except OSError:
        return None
    found = re.search(r"(\d+)\.(\d+)\.(\d+)", text)
    return tuple(int(part) for part in found.groups()) if found else None


def search_tools(out: Path) -> str:
    """A PATH with ripgrep and fd >= 10 (the coding oracle's grep and find), installing fd if needed."""
    tools = out / "tools"
    path = f"{tools / 'bin'}:{os.environ['PATH']}"
    if tool_version("rg", path) is None:
        sys.exit("oracle-check: ripgrep (rg) is not on PATH; install it (apt-get install ripgrep) and rerun.")
    fd = tool_version("fd", path)
    if fd is None or fd < (10,):
        print(f"oracle-check: installing fd {FD_VERSION} into {tools} (the coding oracle's find needs fd >= 10)", flush=True)
        subprocess.run(["cargo", "install", "--quiet", "--locked", "fd-find", "--version", FD_VERSION, "--root", str(tools)],
                       check=True)
    return path


def byte_identical(expected: Path, recorded: Path, suffix: str) -> tuple[int, int]:
    files = sorted(p.name for p in expected.iterdir() if p.name.endswith(suffix))
    same = sum(1 for name in files if (recorded / name).is_file() and (recorded / name).read_bytes() == (expected / name).read_bytes())
    return same, len(files)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Re-record every kit's fixtures with the pinned oracles and compare.")
    parser.add_argument("--shared", required=True, type=Path, help="the kits (../shared)")
    parser.add_argument("--out", default=REPO / "build/oracle-check", type=Path)
    args = parser.parse_args(argv)
    shared, out = args.shared.resolve(), args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)

    path = search_tools(out)
    oracles = {kit: install_oracle(kit, shared, out) for kit in ("conformance", "providers", "coding", "sessions")}
    # The coding oracle's tools never download ripgrep or fd, nor read a user's ~/.pi.
    env = dict(os.environ, PATH=path, PI_OFFLINE="1", PI_CODING_AGENT_DIR=str(out / "pi-agent"))

    differing: list[str] = []
    for fixture_set in fixture_sets(shared):
        label, kit = fixture_set["label"], fixture_set["kit"]
        recorded = out / "recorded" / label
        shutil.rmtree(recorded, ignore_errors=True)
        recorded.mkdir(parents=True)
        log = out / f"{label}.log"
        print(f"oracle-check: recording {label} ({fixture_set['fixtures']})", flush=True)
        with log.open("w") as handle:
            status = subprocess.run(record_command(kit, oracles[kit], fixture_set["fixtures"], recorded),
                                    cwd=oracles[kit], env=env, stdout=handle, stderr=subprocess.STDOUT).returncode
        if status != 0:
            differing.append(f"{label}: the oracle failed (exit {status}, log {log})")
        command = [sys.executable, str(REPO / "tests/kits/compare.py"), "--kit", f"oracle-check {label}",
                   "--fixtures", str(fixture_set["fixtures"]), "--expected", str(fixture_set["expected"]),
                   "--actual", str(recorded), "--comparator", str(fixture_set["comparator"]),
                   "--trace-suffix", fixture_set["suffix"]]
        if fixture_set.get("masks"):
            command += ["--masks", str(fixture_set["masks"])]
        result = subprocess.run(command, capture_output=True, text=True)
        same, total = byte_identical(fixture_set["expected"], recorded, fixture_set["suffix"])
        if result.returncode != 0:
            sys.stdout.write(result.stdout)
            differing += [f"{label}: {line}" for line in result.stdout.splitlines() if line.startswith("FAIL ")]
            differing += [line for line in result.stdout.splitlines() if line.startswith(f"oracle-check {label}:")]
        else:
            print(result.stdout.strip().splitlines()[-1] + f" ({same} of {total} byte-identical)")

    if differing:
        print(f"oracle-check: {len(differing)} differences between the oracles' recordings and the committed traces:")
        for line in differing:
            print(f"  {line}")
        return 1
    print("oracle-check: every committed expected trace is what its pinned oracle records")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
