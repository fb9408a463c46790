#!/usr/bin/env bash
# Installs the real MCP servers the MCP tests start, when missing: the npm servers pinned by
# tests/mcp/package.json into build/mcp-servers, and PyPI's `mcp` (tests/mcp/requirements.txt)
# into the venv build/mcp-venv. A second run with the pinned versions in place installs nothing.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
servers="$root/build/mcp-servers"
venv="$root/build/mcp-venv"
mkdir -p "$servers"
installed_matches() {
    node -e '
const fs = require("fs"), path = require("path");
const pinned = JSON.parse(fs.readFileSync(process.argv[1], "utf8")).dependencies;
for (const [name, version] of Object.entries(pinned)) {
  const manifest = path.join(process.argv[2], "node_modules", name, "package.json");
  if (!fs.existsSync(manifest) || JSON.parse(fs.readFileSync(manifest, "utf8")).version !== version) process.exit(1);
}' "$root/tests/mcp/package.json" "$servers"
}
if ! cmp -s "$root/tests/mcp/package.json" "$servers/package.json" || ! installed_matches; then
    cp "$root/tests/mcp/package.json" "$servers/package.json"
    echo "mcp: installing the pinned npm MCP servers into $servers" >&2
    (cd "$servers" && npm install --no-package-lock --no-audit --no-fund --loglevel=error >&2)
    installed_matches || { echo "mcp: $servers does not hold the pinned versions after npm install" >&2; exit 1; }
fi
if ! cmp -s "$root/tests/mcp/requirements.txt" "$venv/requirements.txt" 2>/dev/null; then
    echo "mcp: installing PyPI's mcp into $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$root/tests/mcp/requirements.txt" >&2
    cp "$root/tests/mcp/requirements.txt" "$venv/requirements.txt"
fi
