"""all_reduce and DDP with torch.distributed: the atoll backend against Gloo, in one run.

    python3 -m torch.distributed.run --standalone --nproc-per-node 4 perf/torch/bench.py [-b 1K -e 64M -f 4]

Both backends run in the same processes (Atoll's default group and a Gloo group over the same
ranks), alternating per size so machine noise hits both alike. Rank 0 prints, per size, the median
time of one all_reduce and its bus bandwidth (2(n-1)/n x bytes / time, as nccl-tests), then the
median DDP step time of a small MLP on each backend. Needs atoll_torch on PYTHONPATH (build/python)
or installed."""
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
    # Every rank's median, then the slowest rank: a collective is as slow as its last member.
    med = torch.tensor([statistics.median(samples)], dtype=torch.float64)
    dist.all_reduce(med, op=dist.ReduceOp.MAX, group=group)
    return med.item()


def ddp_step_time(group, steps):
    torch.manual_seed(0)
    net = DDP(torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048),
                                  torch.nn.ReLU(), torch.nn.Linear(2048, 512)), process_group=group)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    x, y = torch.randn(32, 512), torch.randn(32, 512)
    samples = []
    for i in range(steps + 2):
        dist.barrier(group=group)
        start = time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.mse_loss(net(x), y).backward()
        opt.step()
        if i >= 2:  # the first steps build DDP's buckets
            samples.append(time.perf_counter() - start)
    med = torch.tensor([statistics.median(samples)], dtype=torch.float64)
    dist.all_reduce(med, op=dist.ReduceOp.MAX, group=group)
    return med.item(), sum(p.numel() for p in net.parameters())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-b", "--begin", type=size_arg, default=1 << 10)
    ap.add_argument("-e", "--end", type=size_arg, default=64 << 20)
    ap.add_argument("-f", "--factor", type=int, default=4)
    ap.add_argument("--ddp-steps", type=int, default=10)
    ap.add_argument("--json", help="also write the results here (rank 0)")
    a = ap.parse_args()
    dist.init_process_group(atoll_torch.BACKEND)
    rank, n = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    rows = []
    size = a.begin
    while size <= a.end:
        t = torch.ones(size // 4, dtype=torch.float32)
        iters = max(5, min(200, (256 << 20) // max(size, 1) // 4))
        result = {"bytes": size}
        for name, group in (("atoll", None), ("gloo", gloo)):
            time_allreduce(t, group, 2)  # warm-up: links, plans, buffers
            secs = time_allreduce(t, group, iters)
            result[name] = {"us": secs * 1e6, "busbw_GBs": 2 * (n - 1) / n * size / secs / 1e9}
        rows.append(result)
        size *= a.factor
    ddp = {}
    for name, group in (("atoll", None), ("gloo", gloo)):
        secs, params = ddp_step_time(group, a.ddp_steps)
        ddp[name] = {"ms": secs * 1e3, "params": params}
    if rank == 0:
        print(f"# torch.distributed all_reduce, float32, {n} processes (median per call, slowest rank)")
        print(f"#{'bytes':>11} {'atoll us':>10} {'atoll GB/s':>10} {'gloo us':>10} {'gloo GB/s':>10} {'speedup':>8}")
        for r in rows:
            at, gl = r["atoll"], r["gloo"]
            print(f"{r['bytes']:>12} {at['us']:>10.1f} {at['busbw_GBs']:>10.3f} {gl['us']:>10.1f} "
                  f"{gl['busbw_GBs']:>10.3f} {gl['us'] / at['us']:>7.2f}x")
        print(f"# DDP step, MLP of {ddp['atoll']['params']} parameters, batch 32: atoll {ddp['atoll']['ms']:.1f} ms, "
              f"gloo {ddp['gloo']['ms']:.1f} ms ({ddp['gloo']['ms'] / ddp['atoll']['ms']:.2f}x)")
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"nprocs": n, "allreduce": rows, "ddp": ddp}, f, indent=1)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
