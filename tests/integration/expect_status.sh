#!/bin/sh
# usage: expect_status.sh [-m REGEX | -x REGEX]... STATUS command [args...]
# Runs the command and succeeds only if it exits with exactly STATUS and, for each -m, some line of
# its output (stdout and stderr together) matches the extended regex REGEX, and for each -x none
# does. ctest's WILL_FAIL passes
# on any failure and PASS_REGULAR_EXPRESSION ignores the exit status; a test that checks both fails
# when the program fails, or succeeds, for a reason other than the one it is about.
nl='
'
pats=
nots=
while [ "$1" = "-m" ] || [ "$1" = "-x" ]; do
  if [ "$1" = "-m" ]; then pats="$pats$2$nl"; else nots="$nots$2$nl"; fi
  shift 2
done
want=$1
shift
if [ -z "$pats$nots" ]; then
  "$@"
  got=$?
else
  out=$("$@" 2>&1)
  got=$?
  printf '%s\n' "$out"
fi
if [ "$got" -ne "$want" ]; then
  echo "expected exit status $want, got $got: $*" >&2
  exit 1
fi
# The loop runs in a subshell; its status is the pipeline's.
printf '%s' "$pats" | while IFS= read -r p; do
  if ! printf '%s\n' "$out" | grep -Eq -- "$p"; then
    echo "expected output matching /$p/: $*" >&2
    exit 1
  fi
done || exit 1
printf '%s' "$nots" | while IFS= read -r p; do
  if printf '%s\n' "$out" | grep -Eq -- "$p"; then
    echo "expected no output matching /$p/: $*" >&2
    exit 1
  fi
done || exit 1
exit 0
