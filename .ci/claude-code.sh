#!/usr/bin/env bash
# Install the Claude Code CLI (npm @anthropic-ai/claude-code) for the slow client tests, once per
# version, into a cache outside the repository; prints the path of its `claude` executable.
#   bash .ci/claude-code.sh            -> /path/to/claude   (exit 1 when node or npm is missing)
set -euo pipefail
version="${ACCORD_CLAUDE_CODE_VERSION:-2.1.332}"
cache="${ACCORD_CLAUDE_CODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/accord/claude-code}"
prefix="$cache/$version"
bin="$prefix/node_modules/.bin/claude"
if [ ! -x "$bin" ]; then
  command -v node >/dev/null && command -v npm >/dev/null || { echo "node and npm are needed" >&2; exit 1; }
  mkdir -p "$prefix"
  npm install --prefix "$prefix" "@anthropic-ai/claude-code@$version" --no-audit --no-fund >&2
fi
echo "$bin"
