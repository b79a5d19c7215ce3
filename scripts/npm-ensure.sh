#!/usr/bin/env bash
# Installs the npm packages pinned by SRC/package.json + SRC/package-lock.json into DEST (both
# relative to the repository root) with `npm ci`, unless DEST already holds that lock file and a
# node_modules folder. Used by install-deps.sh (tests) and install-train-deps.sh (text corpora).
#   usage: scripts/npm-ensure.sh SRC DEST
set -euo pipefail
SRC="$1"
DEST="$2"
cd "$(dirname "$0")/.."
if ! cmp -s "$SRC/package-lock.json" "$DEST/package-lock.json" || [ ! -d "$DEST/node_modules" ]; then
  echo "installing npm packages into $DEST"
  mkdir -p "$DEST"
  cp "$SRC/package.json" "$SRC/package-lock.json" "$DEST/"
  npm ci --prefix "$DEST" --no-audit --no-fund
fi
