#!/usr/bin/env bash
# Installs the Node clients of tests/clients into a cache outside the checkout, keyed by the lockfile.
# Prints the node_modules directory. tests/clients/conftest.py computes the same path (or reads
# ACCORD_NODE_MODULES), so the tests find the install without being told.
set -euo pipefail
cd "$(dirname "$0")/.."
lock=tests/clients/node/package-lock.json
if ! command -v npm >/dev/null 2>&1; then
  echo "node-clients: npm not found; the Node client tests will skip" >&2
  exit 0
fi
sha=$(sha256sum "$lock" | cut -c1-16)
dir="${XDG_CACHE_HOME:-$HOME/.cache}/accord/npm-$sha"
if [ ! -d "$dir/node_modules" ]; then
  tmp="$dir.partial.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  cp tests/clients/node/package.json "$lock" "$tmp/"
  (cd "$tmp" && npm ci --no-audit --no-fund --loglevel=error)
  # A half-finished install never becomes the cache: the rename happens only after npm succeeded.
  rm -rf "$dir"
  mv "$tmp" "$dir"
fi
echo "$dir/node_modules"
