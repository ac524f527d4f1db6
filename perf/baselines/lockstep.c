/* lockstep: the floor under a small 2-rank collective on this machine, right now.
 *
 * Why: a small all-reduce between two processes is a lockstep loop. Each rank does its share of
 * software (for Atoll's 16-byte all-reduce about 1,260 instructions, 0.14 us on one rank), publishes
 * one cache line and waits for the other's. core_rtt times the bare line transfer; this times the
 * loop with the software in it. On the 2-vCPU development VM `lockstep 100` (about 140 ns of work)
 * took 215-248 ns in some runs and 332-451 ns in others, the work alone unchanged: the floor under
 * Atoll's and Open MPI's 8-64 B times moves by that much there (perf/baselines/README.md).
 *
 * Two processes (fork, one shared mapping, not pinned: as the ranks of all_reduce_perf) run
 * `iterations` rounds of: `work` steps of local arithmetic and stores, then a release store of the
 * round number to its own line and a spin on the other's. The same work alone is timed first.
 *
 * usage: lockstep [work steps (default 100)] [iterations (default 1000000)]
 * prints: lockstep_ns <per round> alone_ns <work alone per round> work <steps> */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "parse_count.h"

struct Line {
  _Alignas(64) atomic_ulong round;
  unsigned char pad[56];
};

static uint64_t gLocal[512];
static volatile uint64_t gSink;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A dependent multiply chain with stores, standing in for a call's bookkeeping. */
static void work(long steps, uint64_t seed) {
  uint64_t acc = seed;
  for (long k = 0; k < steps; ++k) {
    acc = acc * 6364136223846793005ULL + gLocal[k & 511];
    gLocal[(k * 7) & 511] = acc;
  }
  gSink = acc;
}

int main(int argc, char** argv) {
  if (argc > 3) {
    fprintf(stderr, "usage: lockstep [work steps] [iterations]\n");
    return 2;
  }
  const long steps = argc > 1 ? parseCount("lockstep", argv[1], 0, 1000000, "work steps") : 100;
  const long iters = argc > 2 ? parseCount("lockstep", argv[2], 1, 1000000000, "iterations") : 1000000;

  double start = now();
  for (long i = 1; i <= iters; ++i) work(steps, (uint64_t)i);
  const double alone = (now() - start) * 1e9 / (double)iters;

  struct Line* lines = mmap(NULL, 2 * sizeof(struct Line), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (lines == MAP_FAILED) {
    perror("lockstep: mmap");
    return 2;
  }
  atomic_init(&lines[0].round, 0);
  atomic_init(&lines[1].round, 0);
  const pid_t child = fork();
  if (child < 0) {
    perror("lockstep: fork");
    return 2;
  }
  const int me = child == 0 ? 1 : 0;
  start = now();
  for (long i = 1; i <= iters; ++i) {
    work(steps, (uint64_t)i);
    atomic_store_explicit(&lines[me].round, (unsigned long)i, memory_order_release);
    while (atomic_load_explicit(&lines[1 - me].round, memory_order_acquire) < (unsigned long)i) {
    }
  }
  const double together = (now() - start) * 1e9 / (double)iters;
  if (child == 0) return 0;
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "lockstep: the second process failed\n");
    return 1;
  }
  printf("lockstep_ns %.1f alone_ns %.1f work %ld\n", together, alone, steps);
  return 0;
}
