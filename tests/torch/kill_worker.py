"""kill -9 of one worker: every other worker's pending collective raises, naming the dead rank,
within the reliability bound, and no process hangs.

    kill_worker.py --nproc 4 [--bound 3.0]

Launches the workers itself, torchrun-style (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), because a
launcher that kills the survivors once one worker dies (torchrun's agent does) would hide a hang.
The last rank SIGKILLs itself mid-loop after stamping CLOCK_MONOTONIC; each survivor stamps the
moment its call raised and writes a verdict file. The launcher fails if a survivor is still running
after 60 s, reports nothing, or raised too late or without naming the victim."""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time


def worker(report_dir):
    import torch
    import torch.distributed as dist

    import atoll_torch

    dist.init_process_group(atoll_torch.BACKEND)
    rank, size = dist.get_rank(), dist.get_world_size()
    victim = size - 1
    t = torch.ones(1 << 18)
    for step in range(1000000):
        if rank == victim and step == 5:
            with open(os.path.join(report_dir, "victim"), "w") as f:
                f.write(repr(time.monotonic()))
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            dist.all_reduce(t)
        except Exception as e:  # noqa: BLE001  (DistBackendError is what Atoll raises)
            raised = time.monotonic()
            verdict = {"rank": rank, "raised": raised, "step": step, "type": type(e).__name__, "message": str(e)}
            with open(os.path.join(report_dir, f"rank{rank}"), "w") as f:
                json.dump(verdict, f)
            start = time.monotonic()
            dist.destroy_process_group()  # must not wait on the dead rank
            verdict["destroy_s"] = time.monotonic() - start
            with open(os.path.join(report_dir, f"rank{rank}"), "w") as f:
                json.dump(verdict, f)
            return 0
        t.fill_(1.0)
    return 1


def launch(nproc, bound):
    report_dir = tempfile.mkdtemp(prefix="atoll_kill_")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for r in range(nproc):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(nproc), LOCAL_WORLD_SIZE=str(nproc),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen([sys.executable, __file__, "--worker", report_dir], env=env))
    deadline = time.monotonic() + 60
    hung = []
    for r, p in enumerate(procs):
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            hung.append(r)
            p.kill()
            p.wait()
    failures = [f"rank {r} still running after 60 s (killed)" for r in hung]
    victim = nproc - 1
    try:
        with open(os.path.join(report_dir, "victim")) as f:
            killed = float(f.read())
    except OSError:
        print(f"the victim (rank {victim}) never reached its kill point")
        return 1
    for r in range(victim):
        try:
            with open(os.path.join(report_dir, f"rank{r}")) as f:
                v = json.load(f)
        except OSError:
            failures.append(f"rank {r} reported nothing (exit status {procs[r].returncode})")
            continue
        after = v["raised"] - killed
        print(f"rank {r}: {v['type']} {after:.3f} s after the kill, destroy took {v.get('destroy_s', -1):.3f} s: "
              f"{v['message'][:160]}")
        if after > bound:
            failures.append(f"rank {r} raised {after:.3f} s after the kill (bound {bound} s)")
        if f"rank {victim}" not in v["message"]:
            failures.append(f"rank {r}'s error does not name rank {victim}")
        if procs[r].returncode != 0:
            failures.append(f"rank {r} exited with status {procs[r].returncode}")
    for f in failures:
        print("FAIL:", f)
    print(f"kill_worker: {'FAILED' if failures else 'passed'} ({nproc} workers)")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        sys.exit(worker(sys.argv[2]))
    ap = argparse.ArgumentParser()
    ap.add_argument("--nproc", type=int, default=4)
    ap.add_argument("--bound", type=float, default=3.0, help="seconds from the kill to each survivor's exception")
    a = ap.parse_args()
    sys.exit(launch(a.nproc, a.bound))
