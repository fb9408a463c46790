#!/usr/bin/env bash
# Installs the real MCP servers the MCP tests start, when missing: the npm servers pinned by
# tests/mcp/package.json into build/mcp-servers, and PyPI's `mcp` (tests/mcp/requirements.txt)
# into the venv build/mcp-venv. A second run with the pinned versions in place installs nothing.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
servers="$root/build/mcp-servers"
venv="$root/build/mcp-venv"
bash "$root/tests/kits/npm_pinned.sh" "$root/tests/mcp/package.json" "$servers" "the pinned npm MCP servers"
if ! cmp -s "$root/tests/mcp/requirements.txt" "$venv/requirements.txt" 2>/dev/null; then
    echo "mcp: installing PyPI's mcp into $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$root/tests/mcp/requirements.txt" >&2
    cp "$root/tests/mcp/requirements.txt" "$venv/requirements.txt"
fi
