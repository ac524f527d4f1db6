#!/usr/bin/env bash
# Installs the Debian packages Atoll builds and tests with (only those missing; needs root).
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config libssl-dev libgtest-dev libgmock-dev libbenchmark-dev
      iproute2 procps openmpi-bin libopenmpi-dev libgloo-dev gnuplot-nox libhwloc-dev hwloc
      clang libclang-rt-14-dev libdivide-dev libucx-dev libibverbs-dev libfabric-dev)
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
# From PyPI: NVIDIA NCCL 2.30.7 (nvidia-nccl-cu13: the header, library and symbol set the 2.30 ABI
# tests compare against) and the PyTorch that links it (the drop-in import test; its CUDA wheels
# install and import on a machine without a GPU).
if ! python3 -c "import torch, nvidia.nccl" 2>/dev/null; then
  echo "atoll: installing torch 2.15.0 and nvidia-nccl-cu13 2.30.7 from PyPI"
  python3 -m pip install --quiet --disable-pip-version-check "torch==2.15.0" "nvidia-nccl-cu13==2.30.7"
fi
