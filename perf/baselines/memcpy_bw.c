/* memcpy_bw: single-core memcpy bandwidth on out-of-cache buffers, the yardstick the baseline
 * targets divide by. Prints bytes copied per second (one stream, the unit busbw uses for the data
 * a rank moves); the memory traffic is twice that (read + write, write-allocate not counted).
 * The best of several timed runs is kept, since a shared machine only ever makes a run slower.
 *
 * usage: memcpy_bw [bytes (default 64M; K/M/G suffixes)] [runs (default 7)] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parseSize(const char* text, size_t* out) {
  char* end = NULL;
  unsigned long long v = strtoull(text, &end, 10);
  if (end == text) return 0;
  const char* units = "KMG";
  const char* unit = *end ? strchr(units, *end & ~0x20) : NULL;
  if (unit != NULL) {
    v <<= 10 * (unit - units + 1);
    ++end;
  }
  if (*end == 'B') ++end;
  if (*end != '\0' || v == 0) return 0;
  *out = (size_t)v;
  return 1;
}

int main(int argc, char** argv) {
  size_t bytes = (size_t)64 << 20;
  int runs = 7;
  if (argc > 3 || (argc > 1 && !parseSize(argv[1], &bytes)) || (argc > 2 && (runs = atoi(argv[2])) < 1)) {
    fprintf(stderr, "usage: memcpy_bw [bytes (default 64M)] [runs (default 7)]\n");
    return 2;
  }
  char* src = malloc(bytes);
  char* dst = malloc(bytes);
  if (src == NULL || dst == NULL) {
    fprintf(stderr, "memcpy_bw: cannot allocate 2 x %zu bytes\n", bytes);
    return 2;
  }
  /* Fault every page in and warm the copy path before anything is timed. */
  memset(src, 1, bytes);
  memset(dst, 0, bytes);
  memcpy(dst, src, bytes);
  /* Enough copies per run that one run lasts tens of milliseconds. */
  const int copies = bytes >= ((size_t)16 << 20) ? 4 : (int)(((size_t)64 << 20) / bytes);
  double best = 0;
  for (int r = 0; r < runs; ++r) {
    const double t0 = now();
    for (int i = 0; i < copies; ++i) {
      src[(size_t)i % bytes] = (char)i; /* keeps the copies from being merged */
      memcpy(dst, src, bytes);
    }
    const double gbps = (double)bytes * copies / ((now() - t0) * 1e9);
    if (gbps > best) best = gbps;
  }
  if (dst[0] != src[0]) return 1;
  printf("memcpy_bw: %zu bytes, best of %d runs x %d copies: %.3f GB/s copied (%.3f GB/s read+write)\n", bytes, runs,
         copies, best, 2 * best);
  printf("memcpy_gbps %.6f\n", best);
  free(src);
  free(dst);
  return 0;
}
