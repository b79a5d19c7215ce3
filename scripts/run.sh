#!/usr/bin/env bash
# The main job: install dependencies, build the release preset, and run deepinfer on the default
# model. Until the model and server issues land, the main job validates the bundled tiny V4.1
# checkpoint (../shared/fixtures/v41-tiny-a) and prints its layout and layer roles.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
MODEL="${DEEPINFER_MODEL:-../shared/fixtures/v41-tiny-a}"
./build/release/deepinfer cpu-info
./build/release/deepinfer inspect --model "$MODEL"
