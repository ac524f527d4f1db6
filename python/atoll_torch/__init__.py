"""Atoll as a torch.distributed backend for CPU tensors.

    import atoll_torch  # registers backend "atoll"
    torch.distributed.init_process_group("atoll")  # under torchrun, as with "gloo" or "nccl"

The backend is a C++ c10d::Backend over Atoll's NCCL API (atoll_torch._C). It loads Atoll's
libatoll.so by path ($ATOLL_LIBRARY, else the library this package was built against), never
through the nccl* names that NVIDIA's libnccl.so.2, mapped by torch, also exports.

Between processes of one host, a collective on a tensor from Atoll's shared pool moves in a single
copy (the peer reads it in place) instead of twice through a shared-memory ring: take tensors from
the backend (``backend.allocate_tensor(n, dtype=..., device="cpu")``, as with NCCL's), or make
torch's CPU allocator take every large tensor from the pool with ``use_shared_memory()``.
"""
import torch.distributed as dist

from . import _C

__all__ = ["BACKEND", "library_path", "nccl_version", "use_shared_memory", "is_shared"]

BACKEND = "atoll"


def _create(store, rank, size, timeout):
    return _C.create_backend(store, rank, size, timeout)


def library_path():
    """The Atoll library this process uses."""
    return _C.library_path()


def nccl_version():
    """NCCL_VERSION_CODE of that library."""
    return _C.nccl_version()


def use_shared_memory(min_bytes=1 << 20, cache_bytes=256 << 20):
    """Takes CPU tensors of at least min_bytes from Atoll's shared pool from now on (None: stop).

    Each such tensor is a memfd region holding one file descriptor while it lives (the soft
    descriptor limit is raised to the hard one). Freed regions of up to cache_bytes in all are kept
    for the next tensor of the same size, as a training step frees and makes the same gradients
    each time; use_shared_memory(None) frees them. Like any MAP_SHARED memory, a fork() child shares
    these pages with its parent instead of copying them, so writes in a forked worker (a DataLoader
    worker, say) to tensors made before the fork are seen by the parent."""
    if min_bytes is None:
        _C.disable_shared_memory()
    else:
        if min_bytes < 0 or cache_bytes < 0:
            raise ValueError(f"use_shared_memory: sizes must be >= 0 (got {min_bytes}, {cache_bytes})")
        _C.enable_shared_memory(int(min_bytes), int(cache_bytes))


def is_shared(tensor):
    """Whether tensor's memory comes from Atoll's shared pool."""
    return _C.is_shared(tensor)


if BACKEND not in dist.Backend.backend_list:
    dist.Backend.register_backend(BACKEND, _create, devices=["cpu"])
