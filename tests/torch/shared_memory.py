"""Tensors from Atoll's shared pool (run under torchrun): the backend's allocate_tensor and
atoll_torch.use_shared_memory() hand out pool memory, collectives on it agree with Gloo, and the
peers really read it in place: each rank ends up mapping another rank's pool regions."""
import sys

import torch
import torch.distributed as dist

import atoll_torch

dist.init_process_group(atoll_torch.BACKEND)
rank, size = dist.get_rank(), dist.get_world_size()
gloo = dist.new_group(backend="gloo")
backend = dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu"))
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def pool_tokens():
    """The pool tokens of the memfd regions this process maps: its own, and its peers' once read."""
    tokens = set()
    with open("/proc/self/maps") as f:
        for line in f:
            at = line.find("/memfd:atoll-pool-")
            if at >= 0:
                tokens.add(line[at:].split("-")[2])
    return tokens


expect(backend.supports_tensor_alloc(torch.device("cpu")), "supports_tensor_alloc(cpu) is False")
for count in (1, 1000, 1 << 18, (1 << 20) + 3):
    for dtype in (torch.float32, torch.bfloat16, torch.int64):
        t = backend.allocate_tensor(count, dtype=dtype, device=torch.device("cpu"))
        expect(atoll_torch.is_shared(t) and t.numel() == count and t.dtype == dtype,
               f"allocate_tensor({count}, {dtype}) gave {t.dtype}{list(t.shape)}, shared={atoll_torch.is_shared(t)}")
        g = torch.Generator().manual_seed(rank * 7 + count)
        t.copy_((torch.rand(count, generator=g) * 8 - 4).to(dtype))
        ref = t.clone()
        dist.all_reduce(t)
        dist.all_reduce(ref, group=gloo)
        tol = 0.0 if not dtype.is_floating_point else size * 4 * (8e-3 if dtype == torch.bfloat16 else 1e-6)
        expect(torch.allclose(t.float(), ref.float(), rtol=0, atol=tol),
               f"all_reduce of a pool {dtype} tensor of {count} differs from gloo")

# all_gather_into_tensor and broadcast, both ends in pool memory.
n = 1 << 18
src = backend.allocate_tensor(n, dtype=torch.float32, device=torch.device("cpu")).fill_(rank + 1)
out = backend.allocate_tensor(n * size, dtype=torch.float32, device=torch.device("cpu"))
dist.all_gather_into_tensor(out, src)
want = torch.cat([torch.full((n,), r + 1.0) for r in range(size)])
expect(torch.equal(out, want), "all_gather_into_tensor of pool tensors is wrong")
dist.broadcast(src, src=size - 1)
expect(torch.equal(src, torch.full((n,), float(size))), "broadcast of a pool tensor is wrong")

# The peers mapped this rank's regions and read them in place: every rank maps regions of others.
tokens = pool_tokens()
expect(len(tokens) >= 2, f"no peer's pool region is mapped here (tokens {sorted(tokens)}): no single copy ran")

# The global switch: large tensors from the pool, small ones and later ones from torch.
with torch.no_grad():
    atoll_torch.use_shared_memory(64 << 10)
    big, small = torch.empty(1 << 16), torch.empty(100)
    expect(atoll_torch.is_shared(big) and not atoll_torch.is_shared(small),
           f"use_shared_memory(64K): 256 KiB shared={atoll_torch.is_shared(big)}, 400 B shared={atoll_torch.is_shared(small)}")
    big.fill_(rank)
    dist.all_reduce(big)
    expect(torch.equal(big, torch.full_like(big, size * (size - 1) / 2)), "all_reduce of a use_shared_memory tensor")
    # A freed region serves the next tensor of its size (the cache), and only of its size.
    scratch = torch.empty(3 << 16)
    where = scratch.data_ptr()
    del scratch
    again = torch.empty(3 << 16)
    expect(again.data_ptr() == where, "a freed pool region was not reused for a tensor of the same size")
    other = torch.empty(1 << 18)
    expect(other.data_ptr() != where and atoll_torch.is_shared(other), "a pool region served a tensor of another size")
    atoll_torch.use_shared_memory(None)
    expect(not atoll_torch.is_shared(torch.empty(1 << 16)), "use_shared_memory(None) left the pool allocator on")
    del again, other
try:
    atoll_torch.use_shared_memory(-1)
    failures.append("use_shared_memory(-1) was accepted")
except ValueError:
    pass

print(f"rank {rank}: {'passed' if not failures else 'FAILED: ' + '; '.join(failures)}", flush=True)
dist.destroy_process_group()
sys.exit(1 if failures else 0)
