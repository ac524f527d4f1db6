/* A whole-number command-line argument in [lo, hi], or exit(2) naming the tool and the argument:
 * shared by the small C yardsticks (core_rtt, lockstep). */
#pragma once
#include <stdio.h>
#include <stdlib.h>

static inline long parseCount(const char* tool, const char* text, long lo, long hi, const char* what) {
  char* end = NULL;
  long v = strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "%s: %s must be %ld..%ld, not '%s'\n", tool, what, lo, hi, text);
    exit(2);
  }
  return v;
}
