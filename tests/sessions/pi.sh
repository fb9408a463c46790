#!/usr/bin/env bash
# Installs the reference the session tests and bench run beside libagent: the packages pinned by
# tests/sessions/package.json, from the npm registry into build/sessions-pi (never into the
# repository). A second run with the pinned versions already there installs nothing. Prints the
# directory holding node_modules.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$root/build/sessions-pi"
mkdir -p "$dir"
# The installed versions must be exactly the pinned ones; anything else reinstalls.
installed_matches() {
    node -e '
const fs = require("fs"), path = require("path");
const pinned = JSON.parse(fs.readFileSync(process.argv[1], "utf8")).dependencies;
for (const [name, version] of Object.entries(pinned)) {
  const manifest = path.join(process.argv[2], "node_modules", name, "package.json");
  if (!fs.existsSync(manifest) || JSON.parse(fs.readFileSync(manifest, "utf8")).version !== version) process.exit(1);
}' "$root/tests/sessions/package.json" "$dir"
}
if ! cmp -s "$root/tests/sessions/package.json" "$dir/package.json" || ! installed_matches; then
    cp "$root/tests/sessions/package.json" "$dir/package.json"
    echo "sessions: installing the pinned reference (pi-coding-agent 1.6.0) into $dir" >&2
    (cd "$dir" && npm install --no-package-lock --no-audit --no-fund --loglevel=error >&2)
    installed_matches || { echo "sessions: $dir does not hold the pinned versions after npm install" >&2; exit 1; }
fi
echo "$dir"
