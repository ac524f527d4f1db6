"""PyTorch drop-in: run with Atoll's libnccl.so.2 preloaded (argv[1]). libtorch_cuda links NVIDIA's
libnccl.so.2 (2.30); every nccl symbol it imports must resolve in ours, and the entry points it
binds to (the process's global scope, where the preload comes first) must be in our file. torch may
still map NVIDIA's copy by path (its CUDA-dependency preloading); nothing binds to it."""
import ctypes
import os
import sys

ours = os.path.realpath(sys.argv[1])
import torch  # noqa: E402  (fails with "undefined symbol: nccl..." if one is missing)

version = torch.cuda.nccl.version()
if version != (2, 30, 7):
    sys.exit(f"torch.cuda.nccl.version() = {version}, expected (2, 30, 7)")


class DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


libc = ctypes.CDLL(None)
for symbol in ("ncclGetVersion", "ncclCommInitRankConfig", "ncclAllReduce", "ncclCommGrow", "ncclCommSuspend"):
    address = ctypes.cast(getattr(libc, symbol), ctypes.c_void_p)
    info = DlInfo()
    if not libc.dladdr(address, ctypes.byref(info)):
        sys.exit(f"dladdr({symbol}) failed")
    where = os.path.realpath(info.dli_fname.decode())
    if where != ours:
        sys.exit(f"{symbol} resolves to {where}, expected {ours}")
print(f"torch {torch.__version__} imports with Atoll preloaded; torch.cuda.nccl.version() = {version}")
