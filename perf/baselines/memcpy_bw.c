/* memcpy_bw: single-core memcpy bandwidth on out-of-cache buffers, the yardstick the baseline
 * targets divide by. Prints bytes copied per second (one stream, the unit busbw uses for the data
 * a rank moves); the memory traffic is twice that (read + write, write-allocate not counted).
 * The best of several timed runs is kept, since a shared machine only ever makes a run slower.
 *
 * With "cma" it also times process_vm_readv of the same bytes out of a child process's buffer,
 * the single-copy mechanism (CMA) a shared-memory transport could use instead of copying through a
 * ring, interleaved run by run with the memcpys so both see the same machine.
 *
 * usage: memcpy_bw [bytes (default 64M; K/M/G suffixes)] [runs (default 7)] [cma] */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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
  const int cma = argc > 3 && strcmp(argv[3], "cma") == 0;
  if (argc > 4 || (argc > 3 && !cma) || (argc > 1 && !parseSize(argv[1], &bytes)) ||
      (argc > 2 && (runs = atoi(argv[2])) < 1)) {
    fprintf(stderr, "usage: memcpy_bw [bytes (default 64M)] [runs (default 7)] [cma]\n");
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
  /* CMA: a child holds a filled copy of the buffer at the same address (fork), until killed. */
  pid_t child = -1;
  if (cma) {
    child = fork();
    if (child == 0) {
      for (;;) pause();
    }
    if (child < 0) return 2;
  }
  double best = 0, bestCma = 0;
  for (int r = 0; r < runs; ++r) {
    if (cma) {
      const struct iovec local = {dst, bytes}, remote = {src, bytes};
      const double t0 = now();
      for (int i = 0; i < copies; ++i)
        if (process_vm_readv(child, &local, 1, &remote, 1, 0) != (ssize_t)bytes) {
          perror("memcpy_bw: process_vm_readv");
          kill(child, SIGKILL);
          return 1;
        }
      const double gbps = (double)bytes * copies / ((now() - t0) * 1e9);
      if (gbps > bestCma) bestCma = gbps;
    }
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
  if (cma) {
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    printf("memcpy_bw: process_vm_readv from another process, same runs: %.3f GB/s copied (%.2fx memcpy)\n", bestCma,
           bestCma / best);
    printf("cma_gbps %.6f\n", bestCma);
  }
  free(src);
  free(dst);
  return 0;
}
