#!/usr/bin/env bash
# The main job (README): installs what is missing, builds, and runs the all-reduce bandwidth test
# on 4 local ranks (processes) over shared memory. Extra arguments go to all_reduce_perf.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
bash tools/build.sh release >/dev/null
args=("$@")
((${#args[@]})) || args=(-b 8 -e 64M -f 2 -c 1)
exec build/bin/atollrun -np 4 build/perf/all_reduce_perf "${args[@]}"
