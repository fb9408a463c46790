#!/usr/bin/env bash
# Installs the reference the session tests and bench run beside libagent: the packages pinned by
# tests/sessions/package.json, from the npm registry into build/sessions-pi (never into the
# repository). A second run with the pinned versions already there installs nothing. Prints the
# directory holding node_modules.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$root/build/sessions-pi"
bash "$root/tests/kits/npm_pinned.sh" "$root/tests/sessions/package.json" "$dir" \
    "the pinned reference (pi-coding-agent 1.6.0)"
echo "$dir"
