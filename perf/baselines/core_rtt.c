/* core_rtt: how long one cache line takes to go from one core to another and back, right now.
 *
 * Why: on a cloud VM the hypervisor moves virtual CPUs between physical cores. On the 2-vCPU
 * development VM this round trip swung between about 110 and 520 ns from one second to the next
 * (the two vCPUs on cores that share a cache, or not). Shared-memory collectives live on exactly
 * this transfer, so a benchmark's time moves with it, 2-3x at small and mid sizes, and two systems
 * run one after the other can see different machines. run_baselines.sh runs this before every
 * benchmark run and files each result under the round trip it started in (phases.csv), so ratios
 * can be taken between runs that saw the same machine.
 *
 * Two threads pinned to the first two CPUs this process may use bounce a counter: each waits for
 * the other's increment, then increments it. Several short bursts are timed; the median burst's
 * time per round trip is printed (a burst is short, so it describes one placement, and the median
 * ignores a burst cut by a preemption).
 *
 * usage: core_rtt [round trips per burst (default 20000)] [bursts (default 5)]
 * prints: core_rtt_ns <median> min <fastest burst> max <slowest burst> cpus <a>,<b> */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "parse_count.h"

enum { kMaxBursts = 101 };

static _Alignas(64) atomic_long gCounter;
static atomic_int gResponder;  /* 1: pinned and answering, -1: could not pin */
static long gTrips;
static int gBursts;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int pinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* Waits for the counter to reach `want` and hands it on as want + 1. */
static void bounce(long want) {
  while (atomic_load_explicit(&gCounter, memory_order_acquire) != want) {
  }
  atomic_store_explicit(&gCounter, want + 1, memory_order_release);
}

static void* responder(void* cpu) {
  if (pinTo(*(int*)cpu) != 0) {
    atomic_store(&gResponder, -1);
    return NULL;
  }
  atomic_store(&gResponder, 1);
  /* The counter only grows, so the responder answers the odd values of every burst in turn. */
  for (long b = 0; b < gBursts; ++b)
    for (long i = 0; i < gTrips; ++i) bounce(2 * (b * gTrips + i) + 1);
  return NULL;
}

static int cmpDouble(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  if (argc > 3) {
    fprintf(stderr, "usage: core_rtt [round trips per burst] [bursts]\n");
    return 2;
  }
  gTrips = argc > 1 ? parseCount("core_rtt", argv[1], 1, 100000000, "round trips per burst") : 20000;
  gBursts = argc > 2 ? (int)parseCount("core_rtt", argv[2], 1, kMaxBursts, "bursts") : 5;

  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
    perror("core_rtt: sched_getaffinity");
    return 2;
  }
  int cpus[2], found = 0;
  for (int c = 0; c < CPU_SETSIZE && found < 2; ++c)
    if (CPU_ISSET(c, &allowed)) cpus[found++] = c;
  if (found < 2) {
    fprintf(stderr, "core_rtt: needs two CPUs, this process may use %d\n", found);
    return 2;
  }
  if (pinTo(cpus[0]) != 0) {
    fprintf(stderr, "core_rtt: cannot pin to CPU %d\n", cpus[0]);
    return 2;
  }
  pthread_t other;
  if (pthread_create(&other, NULL, responder, &cpus[1]) != 0) {
    fprintf(stderr, "core_rtt: cannot start the second thread\n");
    return 2;
  }
  while (atomic_load(&gResponder) == 0) {
  }
  if (atomic_load(&gResponder) < 0) {
    pthread_join(other, NULL);
    fprintf(stderr, "core_rtt: cannot pin to CPU %d\n", cpus[1]);
    return 2;
  }
  double perTrip[kMaxBursts];
  for (long b = 0; b < gBursts; ++b) {
    const double start = now();
    for (long i = 0; i < gTrips; ++i) bounce(2 * (b * gTrips + i));
    perTrip[b] = (now() - start) * 1e9 / (double)gTrips;
  }
  pthread_join(other, NULL);
  qsort(perTrip, (size_t)gBursts, sizeof perTrip[0], cmpDouble);
  printf("core_rtt_ns %.1f min %.1f max %.1f cpus %d,%d\n", perTrip[gBursts / 2], perTrip[0], perTrip[gBursts - 1],
         cpus[0], cpus[1]);
  return 0;
}
