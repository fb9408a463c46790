"""Hatchling build hook: builds libagent (cargo build --release of the repository two levels
up) and puts the shared library inside the wheel, next to libagent/__init__.py, so that the
installed package loads it without any environment variable. The wheel is tagged
py3-none-<platform>: the library is loaded with ctypes, so it depends on the platform, not on
the Python version or ABI.

Environment: CARGO (the cargo binary), CARGO_TARGET_DIR (where cargo builds; default: the
repository's target/), LIBAGENT_CARGO_FEATURES (cargo features of the build; default
"mimalloc", the feature set of the Makefile's release build, so `make release` and this hook
share one build), LIBAGENT_CARGO_PROFILE (cargo profile; default "release", the shipped build;
the test suite uses "suite", thin LTO), LIBAGENT_PREBUILT (a libagent shared library to bundle instead of
building one), LIBAGENT_KEEP_DEBUG (bundle the library with its debug info).

pip captures a build backend's output (shown only with `pip install -v`), and a cold cargo
build takes minutes: when pip runs from a terminal, cargo's progress goes to that terminal.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

LIBRARY = {"darwin": "libagent.dylib", "win32": "agent.dll"}.get(sys.platform, "libagent.so")


class CargoBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"
    _scratch = None

    def finalize(self, version: str, build_data: dict, artifact_path: str) -> None:
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)

    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel":
            return
        library = self._library()
        build_data["pure_python"] = False
        platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
        build_data["tag"] = f"py3-none-{platform}"
        library = self._stripped(library)
        if version == "editable":
            # Editable installs import src/libagent directly: put the library there.
            shutil.copy2(library, Path(self.root) / "src" / "libagent" / LIBRARY)
        else:
            build_data["force_include"][str(library)] = f"libagent/{LIBRARY}"

    def _stripped(self, library: Path) -> Path:
        """A copy without debug info when `strip` is available (the release profile keeps
        line tables: 70 MB instead of a few): smaller wheels, faster installs."""
        strip = shutil.which("strip")
        if strip is None or sys.platform != "linux" or os.environ.get("LIBAGENT_KEEP_DEBUG"):
            return library
        self._scratch = tempfile.mkdtemp(prefix="libagent-wheel-")
        out = Path(self._scratch) / LIBRARY
        subprocess.run([strip, "--strip-debug", "-o", str(out), str(library)], check=True)
        return out

    def _library(self) -> Path:
        prebuilt = os.environ.get("LIBAGENT_PREBUILT")
        if prebuilt:
            return Path(prebuilt).resolve()
        repo = Path(self.root).resolve().parents[1]
        if not (repo / "Cargo.toml").is_file():
            raise RuntimeError(
                f"libagent: no Cargo.toml in {repo}: build the wheel from bindings/python of a "
                "libagent checkout, or set LIBAGENT_PREBUILT to a built libagent shared library")
        cargo = os.environ.get("CARGO", "cargo")
        target = Path(os.environ.get("CARGO_TARGET_DIR", repo / "target"))
        if not target.is_absolute():
            target = repo / target
        features = os.environ.get("LIBAGENT_CARGO_FEATURES", "mimalloc")
        profile = os.environ.get("LIBAGENT_CARGO_PROFILE", "release")
        command = [cargo, "build", "--profile", profile, "--lib", "--features", features]
        self.app.display_info(f"libagent: {' '.join(command[1:])} (target dir {target})")
        with _progress_stream() as progress:
            subprocess.run(command, cwd=repo, check=True, stderr=progress,
                           env={**os.environ, "CARGO_TARGET_DIR": str(target)})
        library = target / ("debug" if profile == "dev" else profile) / LIBRARY
        if not library.is_file():
            raise RuntimeError(f"libagent: cargo did not produce {library}")
        return library


@contextlib.contextmanager
def _progress_stream():
    """Where cargo's progress goes: the terminal pip runs in when pip captures our output,
    otherwise (pip -v, a plain build, no terminal) our own stderr."""
    if sys.stderr.isatty():
        yield None
        return
    try:
        tty = open("/dev/tty", "w")
    except OSError:
        yield None
        return
    with tty:
        tty.write("libagent: building the Rust library (a cold build takes a few minutes)\n")
        tty.flush()
        yield tty
