#!/bin/sh
# usage: perf_report_last.sh FIFO command [args...]
# Runs a checked perf job whose results are wrong (every process then exits 1) while process 0 is
# by far the last to finish: its JSON report (-J) goes into a FIFO that nobody reads for 2 s. The
# other processes must wait for process 0's report (perf/common/tally.h, Tally::release) instead of
# exiting first, which makes a launcher like atollrun stop process 0 before its report is written.
fifo=$1
shift
rm -f "$fifo" "$fifo.json"
mkfifo "$fifo" || exit 1
(sleep 2; timeout 10 cat "$fifo" > "$fifo.json") &
out=$("$@" -J "$fifo" 2>&1)
got=$?
wait
printf '%s\n' "$out"
rm -f "$fifo"
if [ "$got" -ne 1 ]; then
  echo "expected exit status 1 (wrong results), got $got: $*" >&2
  exit 1
fi
if ! printf '%s\n' "$out" | grep -q "Out of bounds values : 8 FAILED"; then
  echo "process 0 did not print its summary" >&2
  exit 1
fi
if ! grep -q '"results"' "$fifo.json" || ! grep -q '"wrong": 1' "$fifo.json"; then
  echo "process 0 did not write its JSON report ($fifo.json):" >&2
  cat "$fifo.json" >&2
  exit 1
fi
