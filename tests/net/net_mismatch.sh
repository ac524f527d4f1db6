#!/bin/sh
# usage: net_mismatch.sh ALL_REDUCE_PERF PLUGIN
# Two ranks that disagree on the network (rank 0 loads a plugin net, rank 1 uses the built-in
# socket transport) must both fail init at once with a message naming both choices, not hang or
# fail later on a link.
perf=$1
plugin=$2
port=$((20000 + $$ % 20000))
out0=$(mktemp) out1=$(mktemp)
trap 'rm -f "$out0" "$out1"' EXIT
RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port NCCL_SHM_DISABLE=1 NCCL_NET_PLUGIN=$plugin \
  timeout 60 "$perf" -b 8 -e 8 > "$out0" 2>&1 &
p0=$!
RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port NCCL_SHM_DISABLE=1 NCCL_NET_PLUGIN=none \
  timeout 60 "$perf" -b 8 -e 8 > "$out1" 2>&1 &
p1=$!
wait $p0; s0=$?
wait $p1; s1=$?
cat "$out0" "$out1"
status=0
for r in 0 1; do
  eval s=\$s$r
  eval f=\$out$r
  if [ "$s" -eq 0 ] || [ "$s" -eq 124 ]; then echo "rank $r: exit status $s, expected an init failure"; status=1; fi
  if ! grep -q "uses .* but rank .* uses .*: set NCCL_NET and NCCL_NET_PLUGIN alike" "$f"; then
    echo "rank $r: no message naming both networks"; status=1
  fi
done
grep -q "plugin net 'Socket'" "$out0" && grep -q "built-in socket transport" "$out0" || { echo "rank 0: message does not name both"; status=1; }
exit $status
