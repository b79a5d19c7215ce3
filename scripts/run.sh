#!/usr/bin/env bash
# The main job: install dependencies, build the release preset, and run deepinfer on the default
# model. Until the server issue lands, the main job validates the bundled tiny V4.1 checkpoint
# (../shared/fixtures/v41-tiny-a), prints its layout and layer roles, and generates from it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
MODEL="${DEEPINFER_MODEL:-../shared/fixtures/v41-tiny-a}"
./build/release/deepinfer cpu-info
./build/release/deepinfer inspect --model "$MODEL"
# The fixture has no tokenizer, so the prompt is given as ids (its golden input's first tokens).
./build/release/deepinfer generate --model "$MODEL" --prompt-ids 0,394,467,297,400,226,343,207 \
    --max-tokens 16
