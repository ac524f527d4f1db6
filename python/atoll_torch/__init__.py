"""Atoll as a torch.distributed backend for CPU tensors.

    import atoll_torch  # registers backend "atoll"
    torch.distributed.init_process_group("atoll")  # under torchrun, as with "gloo" or "nccl"

The backend is a C++ c10d::Backend over Atoll's NCCL API (atoll_torch._C). It loads Atoll's
libatoll.so by path ($ATOLL_LIBRARY, else the library this package was built against), never
through the nccl* names that NVIDIA's libnccl.so.2, mapped by torch, also exports.
"""
import torch.distributed as dist

from . import _C

__all__ = ["BACKEND", "library_path", "nccl_version"]

BACKEND = "atoll"


def _create(store, rank, size, timeout):
    return _C.create_backend(store, rank, size, timeout)


def library_path():
    """The Atoll library this process uses."""
    return _C.library_path()


def nccl_version():
    """NCCL_VERSION_CODE of that library."""
    return _C.nccl_version()


if BACKEND not in dist.Backend.backend_list:
    dist.Backend.register_backend(BACKEND, _create, devices=["cpu"])
