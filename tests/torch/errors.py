"""Bad input to the atoll backend raises a Python exception that says what is wrong (one process)."""
import os
import socket
import subprocess
import sys

import torch
import torch.distributed as dist

failures = []


def expect_error(what, fn, *texts):
    try:
        result = fn()
        if hasattr(result, "wait"):
            result.wait()
    except Exception as e:  # noqa: BLE001
        message = str(e)
        missing = [t for t in texts if t not in message]
        if missing:
            failures.append(f"{what}: message lacks {missing}: {message[:300]}")
        return
    failures.append(f"{what}: no error")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if len(sys.argv) > 1 and sys.argv[1] == "--no-library":
    # Run by the main test with ATOLL_LIBRARY pointing nowhere: creating the group must say why.
    import atoll_torch

    expect_error("missing library",
                 lambda: dist.init_process_group(atoll_torch.BACKEND, init_method=f"tcp://127.0.0.1:{free_port()}",
                                                 rank=0, world_size=1), "cannot load Atoll", "/nonexistent")
    print("\n".join(failures))
    sys.exit(1 if failures else 0)

import atoll_torch  # noqa: E402

dist.init_process_group(atoll_torch.BACKEND, init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
t = torch.arange(8, dtype=torch.float32)
dist.all_reduce(t)  # one rank: a working group
if not torch.equal(t, torch.arange(8, dtype=torch.float32)):
    failures.append("all_reduce on one rank changed the data")
expect_error("sparse tensor", lambda: dist.all_reduce(torch.eye(3).to_sparse()), "atoll")
expect_error("uint16 dtype", lambda: dist.all_reduce(torch.zeros(4, dtype=torch.uint16)), "atoll",
             "unsupported tensor dtype")
expect_error("bitwise op", lambda: dist.all_reduce(torch.zeros(4, dtype=torch.int32), op=dist.ReduceOp.BAND),
             "atoll", "not supported")
expect_error("all_gather list size", lambda: dist.all_gather([torch.empty(4), torch.empty(4)], torch.empty(4)),
             "atoll")
# Atoll's own checks come back as DistBackendError carrying its message.
backend = dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu"))
opts = dist.BroadcastOptions()
opts.rootRank = 7
try:
    backend.broadcast([t], opts).wait()
    failures.append("broadcast from root 7 of 1 rank: no error")
except dist.DistBackendError as e:
    if "ncclBroadcast" not in str(e) or "root" not in str(e):
        failures.append(f"broadcast root 7: message does not carry Atoll's: {e}")
if not os.path.exists(atoll_torch.library_path()):
    failures.append(f"library_path() {atoll_torch.library_path()} does not exist")
if atoll_torch.nccl_version() < 23000:
    failures.append(f"nccl_version() = {atoll_torch.nccl_version()}")
dist.destroy_process_group()

env = dict(os.environ, ATOLL_LIBRARY="/nonexistent/libatoll.so")
child = subprocess.run([sys.executable, __file__, "--no-library"], env=env, capture_output=True, text=True)
if child.returncode != 0:
    failures.append(f"--no-library: {child.stdout.strip()} {child.stderr.strip()[-400:]}")

for f in failures:
    print("FAIL:", f)
print(f"torch errors: {'FAILED' if failures else 'passed'}")
sys.exit(1 if failures else 0)
