#!/usr/bin/env bash
# Installs what train/prepare_data.py reads on Debian 12 (training-only tooling, never needed to
# build, test or run deepinfer): the text corpora as Debian packages and numpy. Run
# scripts/install-deps.sh first (the tokenizer, the build). Idempotent: skips apt when every
# package is present. train/README.md ("Data") says which licence each corpus is under.
set -euo pipefail

PACKAGES=(
  bible-kjv-text bible-kjv  # King James Bible text + the `bible` reader that prints it
  wordnet-base              # WordNet 3.0 glosses and examples
  fortunes fortunes-min     # sayings (filtered to public-domain authors and proverbs)
  python3.11-doc            # Python 3.11 documentation (HTML)
  python3-numpy             # /usr/bin/python3 train/prepare_data.py
)

"$(dirname "$0")/apt-ensure.sh" "${PACKAGES[@]}"
