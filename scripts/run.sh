#!/usr/bin/env bash
# The main job: install dependencies, build the `deepinfer` tool alone (release preset), expand the
# bundled trained default model if it is missing (scripts/default-model.sh: models/v41-small, a
# small DeepSeek-V4.1-architecture model trained on licensed English text, with the real DeepSeek
# tokenizer; train/README.md), and serve it with `deepinfer serve` on http://127.0.0.1:8000
# (OpenAI- and Anthropic-compatible API, docs/server.md). The server names the model and prints a
# curl example at start-up; Ctrl-C stops it.
#   DEEPINFER_MODEL=DIR serves another model folder; DEEPINFER_PORT, DEEPINFER_API_KEY as named.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target deepinfer  # only the tool: no tests, no benchmarks
MODEL="${DEEPINFER_MODEL:-build/default-model}"
[ -n "${DEEPINFER_MODEL:-}" ] || ./scripts/default-model.sh build/release/deepinfer "$MODEL"
exec ./build/release/deepinfer serve --model "$MODEL" --port "${DEEPINFER_PORT:-8000}" \
    --served-model-name "${DEEPINFER_MODEL_NAME:-deepinfer-default}" --kv-budget 1G
