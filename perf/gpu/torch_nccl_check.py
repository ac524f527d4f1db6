"""torch.distributed's NCCL backend on CUDA tensors, for perf/gpu/check.sh.

Run with LD_PRELOAD pointing at Atoll's libnccl.so.2 to check Atoll, without it for NVIDIA's NCCL.
Checks an all-reduce's values, runs a few DDP steps (gradients must match across ranks), and prints
the busbw of a 64 MiB float all-reduce. Exit status 1 on a wrong value.

    python3 perf/gpu/torch_nccl_check.py --nproc 2
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, nproc, port, failed):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(0)  # every rank shares the one GPU
    dist.init_process_group("nccl", rank=rank, world_size=nproc)
    dev = torch.device("cuda", 0)

    x = torch.arange(1 << 20, device=dev, dtype=torch.float32) * (rank + 1)
    dist.all_reduce(x)
    want = torch.arange(1 << 20, device=dev, dtype=torch.float32) * (nproc * (nproc + 1) / 2)
    if not torch.equal(x, want):
        print(f"rank {rank}: all_reduce wrong, max error {(x - want).abs().max().item()}", flush=True)
        failed.value = 1

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(dev)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    torch.manual_seed(100 + rank)  # different data per rank: the gradients only agree if reduced
    for _ in range(5):
        opt.zero_grad()
        loss = ddp(torch.randn(32, 256, device=dev)).square().mean()
        loss.backward()
        opt.step()
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(nproc)]
    dist.all_gather(gathered, flat)
    if any(not torch.equal(g, gathered[0]) for g in gathered):
        print(f"rank {rank}: DDP parameters differ between ranks", flush=True)
        failed.value = 1

    big = torch.ones(16 << 20, device=dev, dtype=torch.float32)
    for _ in range(3):
        dist.all_reduce(big)
    torch.cuda.synchronize()
    iters = 10
    t0 = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(big)
    torch.cuda.synchronize()
    sec = (time.perf_counter() - t0) / iters
    if rank == 0:
        factor = 2 * (nproc - 1) / nproc if nproc > 1 else 1
        print(f"nproc {nproc}: 64 MiB all_reduce {sec * 1e6:.1f} us, busbw {big.numel() * 4 / sec * factor / 1e9:.2f} GB/s",
              flush=True)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--port", type=int, default=29533)
    args = ap.parse_args()
    failed = mp.get_context("spawn").Value("i", 0)
    mp.spawn(worker, args=(args.nproc, args.port, failed), nprocs=args.nproc, join=True)
    print("FAILED" if failed.value else "OK", flush=True)
    sys.exit(1 if failed.value else 0)


if __name__ == "__main__":
    main()
