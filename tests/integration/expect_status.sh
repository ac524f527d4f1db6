#!/bin/sh
# usage: expect_status.sh STATUS command [args...]
# Runs the command and succeeds only if it exits with exactly STATUS.
want=$1
shift
"$@"
got=$?
if [ "$got" -ne "$want" ]; then
  echo "expected exit status $want, got $got: $*" >&2
  exit 1
fi
exit 0
