#!/usr/bin/env python3
"""Compiles (and, where marked, runs) every code block of the READMEs, in every language.

    python3 tests/readme/check_snippets.py [--python PYTHON] [--out DIR] [README.md ...]

Default files: README.md and bindings/*/README.md. A block may be preceded by a directive line

    <!-- snippet: [template=NAME] [run] [expect="text"] -->

- `template=NAME`: the block is a fragment, put in tests/readme/templates/NAME.<ext> in place of
  the line `// SNIPPET` (or `/* SNIPPET */`); otherwise it is a complete program or file.
- `run`: the program is run (it must exit with 0); `expect`: its output must contain the text
  (`\n` in it stands for a newline).
- `flags="..."`: more compiler flags (c, cpp), e.g. -fno-exceptions.

Per language: c and cpp are compiled with -Werror against include/ and the C++ binding, linked to
target/debug/libagent.so; go is built as a program of a module outside the repository (a
`replace` of the binding's module to this checkout, libagent found through build/pkgconfig, see
`make go-pc`); csharp is compiled by Mono's mcs against the C# binding built from its sources (and
tests/csharp/UnityStandIn.cs, for Unity-shaped code), run under Mono; python is byte-compiled (and run on the sources with target/debug/libagent.so:
LIBAGENT_LIBRARY, PYTHONPATH); sh is parsed by `bash -n`; rust blocks are doctests of the crate
(src/lib.rs includes README.md; `cargo test --doc ReadmeDoctests`), so this script only checks
that a README with Rust code is one the crate includes; text blocks are prose. Untagged fences
and indented code blocks are refused (rustdoc would take them for Rust).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "tests" / "readme" / "templates"
LIBDIR = ROOT / "target" / "debug"
DIRECTIVE = re.compile(r"^<!--\s*snippet:(.*?)-->\s*$")
EXTENSIONS = {"c": "c", "cpp": "cpp", "csharp": "cs", "go": "go", "python": "py"}
LANGUAGES = set(EXTENSIONS) | {"rust", "sh", "text"}
# Files whose Rust blocks the crate runs as doctests (src/lib.rs: #[doc = include_str!(...)]).
RUST_DOCTESTED = {"README.md"}


@dataclass
class Block:
    path: Path
    line: int
    lang: str
    code: str
    options: Dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line} ({self.lang})"


class SnippetError(Exception):
    pass


def parse(path: Path) -> List[Block]:
    lines = path.read_text().split("\n")
    blocks, i, prev_blank = [], 0, True
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^(```+)\s*([\w+-]*)\s*$", line)
        if fence:
            start, lang = i + 1, fence.group(2)
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith(fence.group(1))), None)
            if end is None:
                raise SnippetError(f"{path}:{start}: unclosed code fence")
            options: Dict[str, str] = {}
            directive = DIRECTIVE.match(lines[i - 1]) if i > 0 else None
            if directive:
                for word in shlex.split(directive.group(1)):
                    key, _, value = word.partition("=")
                    options[key] = value
            blocks.append(Block(path, start, lang, "\n".join(lines[i + 1:end]) + "\n", options))
            i, prev_blank = end + 1, False
            continue
        if prev_blank and re.match(r"^ {4}\S", line):
            # An indented code block (a blank line, then 4 spaces): rustdoc would test it as Rust.
            raise SnippetError(f"{path}:{i + 1}: an indented code block: use a fence with a language")
        prev_blank = line.strip() == ""
        i += 1
    return blocks


def source_of(block: Block) -> str:
    template = block.options.get("template")
    if not template:
        return block.code
    path = TEMPLATES / f"{template}.{EXTENSIONS[block.lang]}"
    if not path.is_file():
        raise SnippetError(f"{block.name}: no template {path.relative_to(ROOT)}")
    text = path.read_text()
    marker = re.search(r"^[ \t]*(// SNIPPET|/\* SNIPPET \*/)[ \t]*$", text, re.M)
    if not marker:
        raise SnippetError(f"{path}: no SNIPPET line")
    return text[:marker.start()] + block.code + text[marker.end():]


def run(cmd: List[str], block: Block, what: str, cwd: Optional[Path] = None, env=None) -> str:
    result = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            timeout=600)
    if result.returncode != 0:
        raise SnippetError(f"{block.name}: {what} failed ({' '.join(map(str, cmd))}):\n{result.stdout}")
    return result.stdout


class Checker:
    def __init__(self, out: Path, python: str):
        self.out = out
        self.python = python
        self.go_module: Optional[Path] = None
        self.csharp_lib: Optional[Path] = None
        self.counts: Dict[str, int] = {}

    def check(self, index: int, block: Block) -> None:
        if block.lang not in LANGUAGES:
            raise SnippetError(f"{block.name}: a code block needs a language tag "
                               f"({', '.join(sorted(LANGUAGES))}), got {block.lang!r}")
        if block.lang == "text":
            return
        work = self.out / f"{index:02d}-{block.lang}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        getattr(self, "check_" + block.lang)(block, work)
        self.counts[block.lang] = self.counts.get(block.lang, 0) + 1

    def finish(self, block: Block, binary: List[str], env=None, cwd: Optional[Path] = None) -> None:
        if "run" not in block.options:
            return
        output = run(binary, block, "running it", cwd=cwd or ROOT, env=env)
        expect = block.options.get("expect", "").replace("\\n", "\n")
        if expect and expect not in output:
            raise SnippetError(f"{block.name}: its output lacks {expect!r}:\n{output}")

    def check_c(self, block: Block, work: Path) -> None:
        self._native(block, work, os.environ.get("CC", "cc"), ["-std=c11", "-pedantic"], "c")

    def check_cpp(self, block: Block, work: Path) -> None:
        self._native(block, work, os.environ.get("CXX", "c++"), ["-std=c++17", f"-I{ROOT}/bindings/cpp/include"], "cpp")

    def _native(self, block: Block, work: Path, compiler: str, flags: List[str], ext: str) -> None:
        src = work / f"snippet.{ext}"
        src.write_text(source_of(block))
        common = [compiler, *flags, *shlex.split(block.options.get("flags", "")), "-Wall", "-Wextra", "-Werror",
                  "-Wno-unused-parameter", f"-I{ROOT}/include"]
        if block.options.get("template"):
            run([*common, "-c", str(src), "-o", str(work / "snippet.o")], block, "compiling it")
            return
        binary = work / "snippet"
        run([*common, str(src), f"-L{LIBDIR}", "-lagent", f"-Wl,-rpath,{LIBDIR}", "-lpthread", "-o", str(binary)],
            block, "compiling it")
        self.finish(block, [str(binary)])

    def check_go(self, block: Block, work: Path) -> None:
        module = self._go_module()
        package = module / work.name
        shutil.rmtree(package, ignore_errors=True)
        package.mkdir()
        (package / "main.go").write_text(source_of(block))
        # -mod=mod: the go command completes go.mod with the binding's own requirements.
        env = {**os.environ, "PKG_CONFIG_PATH": str(ROOT / "build" / "pkgconfig"), "GOFLAGS": "-mod=mod -buildvcs=false"}
        go = os.environ.get("GO", "go")
        run([go, "vet", f"./{work.name}"], block, "go vet", cwd=module, env=env)
        run([go, "build", "-buildvcs=false", "-o", str(work / "snippet"), f"./{work.name}"], block, "go build",
            cwd=module, env=env)
        self.finish(block, [str(work / "snippet")])

    def _go_module(self) -> Path:
        if self.go_module is None:
            if not (ROOT / "build" / "pkgconfig" / "libagent.pc").is_file():
                raise SnippetError("build/pkgconfig/libagent.pc is missing: run `make go-pc` first")
            module = self.out / "go-module"
            shutil.rmtree(module, ignore_errors=True)
            module.mkdir(parents=True)
            (module / "go.mod").write_text(
                "module example.com/readme\n\ngo 1.24\n\nrequire github.com/libagent/libagent/bindings/go v0.0.0\n\n"
                f"replace github.com/libagent/libagent/bindings/go => {ROOT}/bindings/go\n")
            shutil.copy(ROOT / "bindings" / "go" / "go.sum", module / "go.sum")
            self.go_module = module
        return self.go_module

    def check_csharp(self, block: Block, work: Path) -> None:
        lib = self._csharp_lib(block)
        src = work / "snippet.cs"
        src.write_text(source_of(block))
        run_it = "run" in block.options
        target = work / ("snippet.exe" if run_it else "snippet.dll")
        run(["mcs", "-langversion:7.2", "-warnaserror", "-nologo", f"-r:{lib}", f"-out:{target}",
             *([] if run_it else ["-target:library"]), str(src), str(ROOT / "tests" / "csharp" / "UnityStandIn.cs")],
            block, "compiling it")
        env = {**os.environ, "LD_LIBRARY_PATH": str(LIBDIR), "MONO_PATH": str(lib.parent)}
        self.finish(block, ["mono", str(target)], env=env)

    def _csharp_lib(self, block: Block) -> Path:
        if self.csharp_lib is None:
            lib = self.out / "csharp" / "LibAgent.dll"
            lib.parent.mkdir(parents=True, exist_ok=True)
            run(["mcs", "-langversion:7.2", "-unsafe", "-nologo", "-target:library", f"-out:{lib}",
                 *sorted(str(f) for f in (ROOT / "bindings" / "csharp").glob("*.cs"))], block, "building the C# binding")
            self.csharp_lib = lib
        return self.csharp_lib

    def check_python(self, block: Block, work: Path) -> None:
        src = work / "snippet.py"
        src.write_text(source_of(block))
        run([self.python, "-m", "py_compile", str(src)], block, "byte-compiling it")
        env = {**os.environ, "LIBAGENT_LIBRARY": str(LIBDIR / "libagent.so"),
               "PYTHONPATH": str(ROOT / "bindings" / "python" / "src")}
        self.finish(block, [self.python, str(src)], env=env, cwd=work)

    def check_sh(self, block: Block, work: Path) -> None:
        src = work / "snippet.sh"
        src.write_text(block.code)
        run(["bash", "-n", str(src)], block, "bash -n")

    def check_rust(self, block: Block, work: Path) -> None:
        if block.path.relative_to(ROOT).as_posix() not in RUST_DOCTESTED:
            raise SnippetError(f"{block.name}: Rust code in a file the crate does not run as doctests")
        lib = (ROOT / "src" / "lib.rs").read_text()
        if 'include_str!("../README.md")' not in lib:
            raise SnippetError("src/lib.rs no longer includes README.md as doctests")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--python", default=sys.executable, help="the Python that runs Python snippets")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "readme")
    args = parser.parse_args()
    files = [f.resolve() for f in args.files] or [ROOT / "README.md", *sorted((ROOT / "bindings").glob("*/README.md"))]
    checker = Checker(args.out.resolve(), args.python)
    failures = []
    index = 0
    for path in files:
        try:
            blocks = parse(path)
        except SnippetError as error:
            failures.append(str(error))
            continue
        for block in blocks:
            index += 1
            try:
                checker.check(index, block)
            except (SnippetError, subprocess.TimeoutExpired) as error:
                failures.append(str(error))
    for failure in failures:
        print("readme snippets: FAILED:", failure, file=sys.stderr)
    counts = ", ".join(f"{n} {lang}" for lang, n in sorted(checker.counts.items()))
    print(f"readme snippets: {counts} checked" + (f"; {len(failures)} failed" if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
