#!/usr/bin/env bash
# Configures and builds one flavour of Atoll: tools/build.sh [release|asan|tsan] -> build[-asan|-tsan]/
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-release}
case "$flavour" in
  release) dir=build; extra=() ;;
  asan) dir=build-asan; extra=(-DATOLL_SANITIZE=address -DATOLL_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug) ;;
  tsan) dir=build-tsan; extra=(-DATOLL_SANITIZE=thread -DATOLL_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo) ;;
  *) echo "usage: $0 [release|asan|tsan]" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" -G Ninja -DATOLL_WERROR=ON "${extra[@]}" >/dev/null
ninja -C "$dir" -j"$(nproc)"
echo "$dir"
