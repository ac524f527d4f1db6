"""DDP on the atoll backend trains like DDP on Gloo (run under torchrun).

Two copies of one small MLP start from the same weights; one trains 20 steps with DDP over Atoll's
default group, the other over a Gloo group, on the same per-rank batches. Their parameters must
agree within float tolerance at the end, and they must have moved (the gradients were reduced).
With --shared, atoll_torch.use_shared_memory() puts the model, its gradients and DDP's buckets in
Atoll's shared pool first, so the buckets cross shared memory in a single copy."""
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import atoll_torch

shared = "--shared" in sys.argv[1:]
if shared:
    atoll_torch.use_shared_memory(64 << 10)
dist.init_process_group(atoll_torch.BACKEND)
rank, size = dist.get_rank(), dist.get_world_size()
gloo = dist.new_group(backend="gloo")


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(),
                               torch.nn.Linear(256, 10))


def train(group):
    net = DDP(model(), process_group=group, bucket_cap_mb=0.1)  # several buckets per step
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(100 + rank)
    for _ in range(20):
        x = torch.randn(64, 32, generator=g)
        y = torch.randint(0, 10, (64,), generator=g)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    return [p.detach().clone() for p in net.module.parameters()]


initial = [p.detach().clone() for p in model().parameters()]
atoll_params = train(None)
gloo_params = train(gloo)
worst = max((a - b).abs().max().item() for a, b in zip(atoll_params, gloo_params))
moved = max((a - i).abs().max().item() for a, i in zip(atoll_params, initial))
# Every rank must hold the same weights too.
flat = torch.cat([p.reshape(-1) for p in atoll_params])
copies = [torch.empty_like(flat) for _ in range(size)]
dist.all_gather(copies, flat, group=gloo)
spread = max((c - flat).abs().max().item() for c in copies)
in_pool = atoll_torch.is_shared(atoll_params[2])  # the 256x256 weight, 256 KiB
ok = worst < 1e-4 and moved > 1e-3 and spread == 0.0 and in_pool == shared
print(f"rank {rank}: {'passed' if ok else 'FAILED'}: max |atoll - gloo| = {worst:.3g}, moved {moved:.3g}, "
      f"ranks differ by {spread:.3g}, weights in the shared pool: {in_pool}", flush=True)
dist.destroy_process_group()
sys.exit(0 if ok else 1)
