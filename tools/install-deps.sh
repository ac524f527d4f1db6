#!/usr/bin/env bash
# Installs the Debian packages Atoll builds and tests with (only those missing; needs root).
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config libssl-dev libgtest-dev libgmock-dev libbenchmark-dev
      iproute2 procps openmpi-bin libopenmpi-dev libgloo-dev gnuplot-nox libhwloc-dev hwloc
      clang libclang-rt-14-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "atoll: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
