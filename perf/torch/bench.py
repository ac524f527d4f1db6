"""all_reduce and DDP with torch.distributed: the atoll backend against Gloo, in one run.

    python3 -m torch.distributed.run --standalone --nproc-per-node 4 perf/torch/bench.py [-b 1K -e 64M -f 4]

Both backends run in the same processes (Atoll's default group and a Gloo group over the same
ranks), alternating per size so machine noise hits both alike. Rank 0 prints, per size, the median
time of one all_reduce and its bus bandwidth (2(n-1)/n x bytes / time, as nccl-tests), then the
median DDP step time of a small MLP on each backend. "atoll" all-reduces a tensor from torch's
allocator, "shared" one from Atoll's shared pool (the backend's allocate_tensor), which crosses
shared memory in a single copy; Gloo gets torch's tensor. The DDP "shared" run builds its model
after atoll_torch.use_shared_memory(), so parameters, gradients and buckets come from the pool.
Needs atoll_torch on PYTHONPATH (build/python) or installed."""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import atoll_torch


def size_arg(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def time_allreduce(t, group, iters):
    dist.barrier(group=group)
    samples = []
    for _ in range(iters):
        start = time.perf_counter()
        dist.all_reduce(t, group=group)
        samples.append(time.perf_counter() - start)
    return samples


def slowest_median(samples, group):
    """Every rank's median, then the slowest rank's: a collective is as slow as its last member."""
    med = torch.tensor([statistics.median(samples)], dtype=torch.float64)
    dist.all_reduce(med, op=dist.ReduceOp.MAX, group=group)
    return med.item()


class DdpRun:
    """A small MLP under DDP on one group; step() trains one batch and returns its time."""

    def __init__(self, group):
        torch.manual_seed(0)
        self.group = group
        self.net = DDP(torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048),
                                           torch.nn.ReLU(), torch.nn.Linear(2048, 512)), process_group=group)
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.01)
        self.x, self.y = torch.randn(32, 512), torch.randn(32, 512)
        self.params = sum(p.numel() for p in self.net.parameters())
        for _ in range(2):  # the first steps build DDP's buckets
            self.step()

    def step(self):
        dist.barrier(group=self.group)
        start = time.perf_counter()
        self.opt.zero_grad()
        torch.nn.functional.mse_loss(self.net(self.x), self.y).backward()
        self.opt.step()
        return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-b", "--begin", type=size_arg, default=1 << 10)
    ap.add_argument("-e", "--end", type=size_arg, default=64 << 20)
    ap.add_argument("-f", "--factor", type=int, default=4)
    ap.add_argument("--ddp-steps", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds of every system per size")
    ap.add_argument("--json", help="also write the results here (rank 0)")
    a = ap.parse_args()
    dist.init_process_group(atoll_torch.BACKEND)
    rank, n = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    backend = dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu"))
    rows = []
    size = a.begin
    while size <= a.end:
        t = torch.ones(size // 4, dtype=torch.float32)
        shared = backend.allocate_tensor(size // 4, dtype=torch.float32, device=torch.device("cpu")).fill_(1)
        iters = max(3, min(100, (64 << 20) // max(size, 1) // a.rounds))
        result = {"bytes": size}
        systems = (("atoll", t, None), ("shared", shared, None), ("gloo", t, gloo))
        samples = {name: [] for name, _, _ in systems}
        for name, tensor, group in systems:
            time_allreduce(tensor, group, 2)  # warm-up: links, plans, buffers
        for _ in range(a.rounds):  # interleaved, so a slow spell of the machine hits every system
            for name, tensor, group in systems:
                samples[name] += time_allreduce(tensor, group, iters)
        for name, _, _ in systems:
            secs = slowest_median(samples[name], gloo)
            result[name] = {"us": secs * 1e6, "busbw_GBs": 2 * (n - 1) / n * size / secs / 1e9}
        rows.append(result)
        del shared
        size *= a.factor
    # DDP, interleaved by rounds too; the "shared" model and its steps run with use_shared_memory().
    runs = {"atoll": DdpRun(None), "gloo": DdpRun(gloo)}
    atoll_torch.use_shared_memory()
    runs["shared"] = DdpRun(None)
    atoll_torch.use_shared_memory(None)
    steps = {name: [] for name in runs}
    per_round = max(1, a.ddp_steps // a.rounds)
    for _ in range(a.rounds):
        for name, run in runs.items():
            if name == "shared":
                atoll_torch.use_shared_memory()
            steps[name] += [run.step() for _ in range(per_round)]
            if name == "shared":
                atoll_torch.use_shared_memory(None)
    ddp = {name: {"ms": slowest_median(steps[name], gloo) * 1e3, "params": runs[name].params} for name in runs}
    if rank == 0:
        print(f"# torch.distributed all_reduce, float32, {n} processes (median per call, slowest rank)")
        print(f"#{'bytes':>11} {'atoll us':>10} {'GB/s':>7} {'shared us':>10} {'GB/s':>7} {'gloo us':>10} {'GB/s':>7} "
              f"{'atoll/gloo':>10} {'shared/gloo':>11}")
        for r in rows:
            at, sh, gl = r["atoll"], r["shared"], r["gloo"]
            print(f"{r['bytes']:>12} {at['us']:>10.1f} {at['busbw_GBs']:>7.3f} {sh['us']:>10.1f} {sh['busbw_GBs']:>7.3f} "
                  f"{gl['us']:>10.1f} {gl['busbw_GBs']:>7.3f} {gl['us'] / at['us']:>9.2f}x {gl['us'] / sh['us']:>10.2f}x")
        print(f"# DDP step, MLP of {ddp['atoll']['params']} parameters, batch 32: atoll {ddp['atoll']['ms']:.1f} ms, "
              f"shared {ddp['shared']['ms']:.1f} ms, gloo {ddp['gloo']['ms']:.1f} ms "
              f"({ddp['gloo']['ms'] / ddp['atoll']['ms']:.2f}x, {ddp['gloo']['ms'] / ddp['shared']['ms']:.2f}x)")
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"nprocs": n, "allreduce": rows, "ddp": ddp}, f, indent=1)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
