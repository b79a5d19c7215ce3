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

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
