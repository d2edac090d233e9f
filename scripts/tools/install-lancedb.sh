#!/usr/bin/env bash
# Installs the optional LanceDB peer (@lancedb/lancedb 0.37.1 with apache-arrow 18.1.0) into this
# checkout, for the lance: index store and its specs (.ci/run calls it after npm ci).
#
# Why not `npm install`: npm does not install a package that the root project declares as an optional
# peer (it answers "up to date"), and a devDependency on it would put lockfile entries for platform
# packages the registry lacks into package-lock.json, which `npm ci` then refuses (docs/stack.md,
# section 10). So it goes into a project of its own under node_modules/.lancedb, whose overrides leave
# out LanceDB's optional @huggingface/transformers and openai, and node_modules/@lancedb and
# node_modules/apache-arrow link there. Rerunning it replaces that install.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
[ -d "$root/node_modules" ] || { echo "install-lancedb: run npm ci first (no node_modules in $root)" >&2; exit 1; }
prefix="$root/node_modules/.lancedb"
rm -rf "$prefix" "$root/node_modules/@lancedb" "$root/node_modules/apache-arrow"
mkdir -p "$prefix"
cat > "$prefix/package.json" <<'JSON'
{
  "name": "dmlkit-lancedb-peer",
  "private": true,
  "dependencies": { "@lancedb/lancedb": "0.37.1", "apache-arrow": "18.1.0" },
  "overrides": { "@lancedb/lancedb": { "@huggingface/transformers": "0.0.0-omitted", "openai": "0.0.0-omitted" } }
}
JSON
npm install --prefix "$prefix" --no-audit --no-fund --no-package-lock >/dev/null
ln -s .lancedb/node_modules/@lancedb "$root/node_modules/@lancedb"
ln -s .lancedb/node_modules/apache-arrow "$root/node_modules/apache-arrow"
echo "installed @lancedb/lancedb $(node -p "require('$prefix/node_modules/@lancedb/lancedb/package.json').version") ($(du -sh "$prefix" | cut -f1)) into node_modules/.lancedb"
