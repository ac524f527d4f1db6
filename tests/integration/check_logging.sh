#!/bin/sh
# usage: check_logging.sh ATOLLRUN ALL_REDUCE_PERF
# Runs 2 ranks with NCCL_DEBUG=INFO and NCCL_DEBUG_FILE=<dir>/log.%h.%p, then checks that each rank
# wrote its own file (host and pid substituted) in NCCL's "host:pid:tid [rank] NCCL INFO" format,
# that NCCL_DEBUG_SUBSYS filters, that TUNING reports the algorithm each call ran, and that WARN is
# the default (nothing printed on success).
set -u
run=$1
perf=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "check_logging: $*" >&2; exit 1; }

NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT NCCL_DEBUG_FILE="$dir/log.%h.%p" \
  "$run" -np 2 "$perf" -b 8 -e 8 -n 1 -w 0 -c 1 >/dev/null || fail "run with logging failed"
host=$(hostname | cut -d. -f1)
n=$(ls "$dir" | grep -c "^log\.$host\.[0-9][0-9]*$")
[ "$n" -ge 2 ] || fail "expected one log file per rank named log.$host.<pid>, found: $(ls "$dir")"
for f in "$dir"/log.*; do
  pid=${f##*.}
  grep -Eq "^$host:$pid:[0-9]+ \[[0-9]+\] NCCL INFO " "$f" || fail "$f has no 'host:pid:tid [rank] NCCL INFO' line"
  grep -q "NCCL INFO .*ready" "$f" || fail "$f lacks the INIT 'ready' line"
done

rm -f "$dir"/log.*
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL NCCL_DEBUG_FILE="$dir/log.%p" \
  "$run" -np 2 "$perf" -b 8 -e 8 -n 1 -w 0 -c 1 >/dev/null || fail "second run failed"
if cat "$dir"/log.* | grep -q "NCCL INFO .*ready"; then fail "NCCL_DEBUG_SUBSYS=COLL still logged INIT lines"; fi

# TUNING: one line per launched collective saying what ran, after any fallback (NCCL_ALGO=rd on
# 3 ranks is not a power of two, so the ring runs and must be what the line says).
rm -f "$dir"/log.*
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING NCCL_ALGO=rd NCCL_DEBUG_FILE="$dir/log.%p" \
  "$run" -np 3 "$perf" -b 1K -e 1K -n 2 -w 1 -c 1 >/dev/null || fail "TUNING run failed"
for f in "$dir"/log.*; do
  n=$(grep -Ec "NCCL INFO AllReduce: count 256 float algorithm ring protocol Simple channels [0-9]+" "$f")
  [ "$n" -ge 3 ] || fail "$f: expected a TUNING line per all-reduce (3 or more) naming the ring, found $n"
  if grep -q "algorithm rd " "$f"; then fail "$f reports rd, which cannot run on 3 ranks"; fi
done

# NCCL_PROTO=LL changes nothing (docs/ENV.md): it warns, and every call still reports Simple.
rm -f "$dir"/log.*
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING NCCL_PROTO=LL NCCL_DEBUG_FILE="$dir/log.%p" \
  "$run" -np 2 "$perf" -b 1K -e 1K -n 1 -w 0 -c 1 >/dev/null || fail "NCCL_PROTO=LL run failed"
for f in "$dir"/log.*; do
  grep -q "NCCL WARN NCCL_PROTO=\"LL\": the host backend implements only the Simple protocol" "$f" ||
    fail "$f: no warning that NCCL_PROTO=LL keeps Simple"
  grep -Eq "AllReduce: count 256 float algorithm [a-z]+ protocol Simple" "$f" || fail "$f: no call reported Simple"
  if grep -Eq "algorithm [a-z]+ protocol LL" "$f"; then fail "$f reports an LL protocol, which does not exist here"; fi
done

out=$("$run" -np 2 "$perf" -b 8 -e 8 -n 1 -w 0 -c 1 2>&1)
if echo "$out" | grep -q "NCCL INFO"; then fail "INFO lines printed without NCCL_DEBUG"; fi
echo "logging checks passed"
