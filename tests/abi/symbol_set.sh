#!/bin/sh
# usage: symbol_set.sh NVIDIA_LIB OUR_LIB
# Fails, listing them, if NVIDIA's library exports nccl*/pnccl* symbols that ours does not.
set -u
nv=$1
ours=$2
exported() { nm -D --defined-only "$1" | awk '{print $3}' | grep -E '^p?nccl' | sed 's/@.*//' | sort -u; }
want=$(exported "$nv") || exit 2
have=$(exported "$ours") || exit 2
[ -n "$want" ] || { echo "no nccl symbols read from $nv" >&2; exit 2; }
missing=$(printf '%s\n' "$want" | while read -r s; do printf '%s\n' "$have" | grep -qx "$s" || echo "$s"; done)
if [ -n "$missing" ]; then
  echo "missing from $ours ($(printf '%s\n' "$missing" | wc -l) of $(printf '%s\n' "$want" | wc -l)):"
  printf '%s\n' "$missing" | tr '\n' ' '
  echo
  exit 1
fi
echo "all $(printf '%s\n' "$want" | wc -l) nccl/pnccl symbols of $nv are exported by $ours"
