#!/usr/bin/env bash
# Installs the npm packages pinned by a package.json into a build directory (never into the
# repository), unless exactly those versions are already there: `npm_pinned.sh PACKAGE_JSON DIR
# WHAT`, WHAT naming them in the messages. Shared by tests/sessions/pi.sh and tests/mcp/setup.sh.
set -euo pipefail
manifest="$1" dir="$2" what="$3"
mkdir -p "$dir"
# The installed versions must be exactly the pinned ones; anything else reinstalls.
installed_matches() {
    node -e '
const fs = require("fs"), path = require("path");
const pinned = JSON.parse(fs.readFileSync(process.argv[1], "utf8")).dependencies;
for (const [name, version] of Object.entries(pinned)) {
  const manifest = path.join(process.argv[2], "node_modules", name, "package.json");
  if (!fs.existsSync(manifest) || JSON.parse(fs.readFileSync(manifest, "utf8")).version !== version) process.exit(1);
}' "$manifest" "$dir"
}
if ! cmp -s "$manifest" "$dir/package.json" || ! installed_matches; then
    cp "$manifest" "$dir/package.json"
    echo "installing $what into $dir" >&2
    (cd "$dir" && npm install --no-package-lock --no-audit --no-fund --loglevel=error >&2)
    installed_matches || { echo "$dir does not hold the pinned versions of $what after npm install" >&2; exit 1; }
fi
