#!/usr/bin/env bash
# The pinned nightly toolchain of the sanitizer builds, fuzzing and the Windows cross build: NIGHTLY
# (the Makefile's `NIGHTLY ?=` line, exported to the scripts; set it to try another). Installs it
# with the rust-src component (-Zbuild-std) when missing; fails with a sentence naming it when it
# cannot be installed. Run it (`bash tests/nightly.sh`) or source it (then `ensure_nightly`).
NIGHTLY="${NIGHTLY:-$(sed -n 's/^NIGHTLY ?= *//p' "$(dirname "${BASH_SOURCE[0]}")/../Makefile")}"

ensure_nightly() {
    if [ -z "$NIGHTLY" ]; then
        echo "The pinned nightly is not set: the Makefile's NIGHTLY line is missing." >&2
        return 1
    fi
    # (Lists read whole: `grep -q` closing a pipe early would fail it under pipefail.)
    local installed
    installed="$(rustup component list --toolchain "$NIGHTLY" --installed 2>/dev/null)"
    grep -qx 'rust-src' <<<"$installed" && return 0
    echo "installing the pinned toolchain $NIGHTLY (with rust-src)" >&2
    if ! rustup toolchain install "$NIGHTLY" --profile minimal --component rust-src >&2; then
        echo "The pinned toolchain $NIGHTLY cannot be installed: check its name (NIGHTLY in the Makefile) and the network." >&2
        return 1
    fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    ensure_nightly || exit 1
fi
