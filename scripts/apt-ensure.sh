#!/usr/bin/env bash
# apt-ensure.sh PACKAGE...: installs with apt-get whichever of the Debian packages are missing (sudo
# when not root); does nothing, and needs no network, when all are installed. Shared by
# scripts/install-deps.sh and scripts/install-train-deps.sh.
set -euo pipefail
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
