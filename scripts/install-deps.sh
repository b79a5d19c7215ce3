#!/usr/bin/env bash
# Installs everything deepinfer needs to build and test on Debian 12: apt packages, then the npm
# packages the tests read (scripts/npm/package-lock.json: the DeepSeek-V3 tokenizer.json, the
# Hugging Face tokenizers oracle, the openai and @anthropic-ai/sdk clients for the server tests)
# into .deps/npm (gitignored). Idempotent: skips apt when every package is present and npm when
# the installed lock equals the committed one.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git ccache
  nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang clang-format clang-tidy libclang-rt-14-dev
  libpcre2-dev libicu-dev libxxhash-dev
  libboost1.74-dev  # Boost.Asio + Beast: the HTTP server (src/server)
  python3 python3-jsonschema  # tests/structured/validate_outputs.py
  gnuplot-nox  # deepinfer bench-serve --plot (throughput-latency SVG)
  libopenmpi-dev openmpi-bin  # Open MPI: one instance over several ranks (src/dist)
  libucx-dev ucx-utils  # UCX: request/reply between instances, KV-page hand-off (src/dist)
  python3-numpy python3-torch libopenblas0-pthread  # the trainer's tests (train/tests, CTest label train)
  wamerican  # /usr/share/dict/words: tests/model (replies made of English words)
)
# Node.js from Debian unless some node/npm is already installed (e.g. NodeSource's).
command -v npm >/dev/null 2>&1 || PACKAGES+=(nodejs npm)

"$(dirname "$0")/apt-ensure.sh" "${PACKAGES[@]}"

# npm packages for the tokenizer tests, pinned by the committed lock file.
"$(dirname "$0")/npm-ensure.sh" scripts/npm .deps/npm
