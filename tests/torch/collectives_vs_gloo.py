"""Every collective of the atoll backend against Gloo on the same inputs (run under torchrun).

The default group is Atoll's; a Gloo group over the same ranks computes the reference. Each
check covers several dtypes and, for reductions, every op that maps."""
import os
import sys

import torch
import torch.distributed as dist

import atoll_torch

dist.init_process_group(atoll_torch.BACKEND)
rank, size = dist.get_rank(), dist.get_world_size()
gloo = dist.new_group(backend="gloo")
failures = []


def check(name, got, want):
    if isinstance(got, (list, tuple)):
        for i, (g, w) in enumerate(zip(got, want)):
            check(f"{name}[{i}]", g, w)
        return
    if got.dtype != want.dtype or got.shape != want.shape:
        failures.append(f"{name}: {got.dtype}{list(got.shape)} vs gloo {want.dtype}{list(want.shape)}")
    elif got.is_floating_point():
        # Each rank's rounding of partial sums depends on the algorithm's order, Gloo's and Atoll's
        # differ: allow a few units in the last place per rank, of the largest value.
        eps = torch.finfo(got.dtype).eps
        scale = max(1.0, want.float().abs().max().item()) if want.numel() else 1.0
        tol = size * eps * scale * (2 if got.element_size() < 4 else 8)
        if not torch.allclose(got.float(), want.float(), rtol=0, atol=tol):
            failures.append(f"{name}: differs from gloo (max |diff| {(got.float() - want.float()).abs().max()})")
    elif not torch.equal(got, want):
        failures.append(f"{name}: differs from gloo")


def data(n, dtype, salt=0):
    g = torch.Generator().manual_seed(1000 * rank + salt)
    if dtype.is_floating_point:
        return (torch.rand(n, generator=g) * 4 - 2).to(dtype)
    return torch.randint(-50 if dtype != torch.uint8 else 0, 50, (n,), generator=g).to(dtype)


def both(fn, *tensors):
    """Runs fn(group, *copies) once on Atoll's group and once on Gloo's; returns both copies."""
    mine = [t.clone() for t in tensors]
    ref = [t.clone() for t in tensors]
    work = fn(None, *mine)
    if work is not None:
        work.wait()
    fn(gloo, *ref)
    return mine, ref


R = dist.ReduceOp
reduce_ops = {"sum": R.SUM, "product": R.PRODUCT, "min": R.MIN, "max": R.MAX}
dtypes = [torch.float32, torch.float64, torch.int32, torch.int64, torch.int8, torch.uint8]
counts = [1, 7, 1000, 65537]

for dtype in dtypes:
    for n in counts:
        for opname, op in reduce_ops.items():
            if opname == "product" and n > 7:
                continue  # products of many values overflow differently per algorithm order
            (a,), (b,) = both(lambda g, t: dist.all_reduce(t, op=op, group=g, async_op=g is None), data(n, dtype))
            check(f"all_reduce {opname} {dtype} n={n}", a, b)
        root = n % size
        (a,), (b,) = both(lambda g, t: dist.broadcast(t, src=root, group=g, async_op=g is None), data(n, dtype))
        check(f"broadcast {dtype} n={n}", a, b)
        (a,), (b,) = both(lambda g, t: dist.reduce(t, dst=root, op=R.SUM, group=g, async_op=g is None), data(n, dtype))
        if rank == root:
            check(f"reduce {dtype} n={n}", a, b)

# AVG and PREMUL_SUM against sums computed by Gloo (Gloo has neither).
for dtype in (torch.float32, torch.float64, torch.bfloat16, torch.float16):
    x = data(1031, dtype, salt=5)
    (a,), (b,) = both(lambda g, t: dist.all_reduce(t, op=R.AVG if g is None else R.SUM, group=g), x)
    check(f"all_reduce avg {dtype}", a, (b.double() / size).to(dtype))
    (a,), (b,) = both(
        lambda g, t: dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5) if g is None else R.SUM, group=g), x)
    check(f"all_reduce premul_sum(0.5) {dtype}", a, (b.double() * 0.5).to(dtype))

for dtype in (torch.float32, torch.int64, torch.bfloat16, torch.float16):
    for n in (1, 999):
        x = data(n, dtype, salt=7)
        outs = [torch.empty_like(x) for _ in range(size)]
        refs = [torch.empty_like(x) for _ in range(size)]
        dist.all_gather(outs, x)
        dist.all_gather(refs, x, group=gloo)
        check(f"all_gather {dtype} n={n}", outs, refs)
        big, bigref = torch.empty(n * size, dtype=dtype), torch.empty(n * size, dtype=dtype)
        dist.all_gather_into_tensor(big, x)
        dist.all_gather(list(bigref.chunk(size)), x, group=gloo)
        check(f"all_gather_into_tensor {dtype} n={n}", big, bigref)

        ins = [data(n, dtype, salt=10 + p) for p in range(size)]
        out, ref = torch.empty(n, dtype=dtype), torch.empty(n, dtype=dtype)
        dist.reduce_scatter(out, ins)
        want = torch.empty(n, dtype=dtype)
        for p in range(size):  # Gloo has no reduce_scatter on CPU: reduce each part to its owner
            part = ins[p].clone()
            dist.reduce(part, dst=p, group=gloo)
            if p == rank:
                want = part
        check(f"reduce_scatter {dtype} n={n}", out, want)
        dist.reduce_scatter_tensor(ref, torch.cat(ins))
        check(f"reduce_scatter_tensor {dtype} n={n}", ref, want)

        # all_to_all: equal parts, uneven split sizes, and the list form.
        inp = data(n * size, dtype, salt=20)
        got, want = torch.empty_like(inp), torch.empty_like(inp)
        dist.all_to_all_single(got, inp)
        dist.all_to_all_single(want, inp, group=gloo)
        check(f"all_to_all_single {dtype} n={n}", got, want)
        in_splits = [(rank + p) % 3 + 1 for p in range(size)]
        out_splits = [(p + rank) % 3 + 1 for p in range(size)]
        inp = data(sum(in_splits) * 2, dtype, salt=21).reshape(-1, 2)
        got, want = torch.empty(sum(out_splits), 2, dtype=dtype), torch.empty(sum(out_splits), 2, dtype=dtype)
        dist.all_to_all_single(got, inp, out_splits, in_splits)
        dist.all_to_all_single(want, inp, out_splits, in_splits, group=gloo)
        check(f"all_to_all_single uneven {dtype} n={n}", got, want)
        ins = [data(n, dtype, salt=30 + p) for p in range(size)]
        outs = [torch.empty_like(x) for _ in range(size)]
        refs = [torch.empty_like(x) for _ in range(size)]
        dist.all_to_all(outs, ins)
        dist.all_to_all(refs, ins, group=gloo)
        check(f"all_to_all {dtype} n={n}", outs, refs)

        root = (n + 1) % size
        gl = [torch.empty_like(x) for _ in range(size)] if rank == root else None
        gr = [torch.empty_like(x) for _ in range(size)] if rank == root else None
        dist.gather(x, gl, dst=root)
        dist.gather(x, gr, dst=root, group=gloo)
        if rank == root:
            check(f"gather {dtype} n={n}", gl, gr)
        sl = [data(n, dtype, salt=40 + p) for p in range(size)] if rank == root else None
        so, sr = torch.empty_like(x), torch.empty_like(x)
        dist.scatter(so, sl, src=root)
        dist.scatter(sr, sl, src=root, group=gloo)
        check(f"scatter {dtype} n={n}", so, sr)

# Point to point: a ring shift, blocking and isend/irecv.
x = data(4097, torch.float32, salt=50)
got, want = torch.empty_like(x), torch.empty_like(x)
nxt, prv = (rank + 1) % size, (rank - 1) % size
reqs = [dist.isend(x, nxt), dist.irecv(got, prv)]
for r in reqs:
    r.wait()
reqs = [dist.isend(x, nxt, group=gloo), dist.irecv(want, prv, group=gloo)]
for r in reqs:
    r.wait()
check("isend/irecv ring", got, want)
if size >= 2:
    if rank == 0:
        dist.send(x, 1)
    elif rank == 1:
        y = torch.empty_like(x)
        dist.recv(y, 0)
        want = torch.empty_like(x)
        dist.recv(want, 0, group=gloo)
        check("send/recv", y, want)
    if rank == 0:
        dist.send(x, 1, group=gloo)

# Coalesced calls and a non-contiguous tensor.
ts = [data(n, torch.float32, salt=60 + n) for n in (3, 300, 30000)]
mine, ref = [t.clone() for t in ts], [t.clone() for t in ts]
dist.all_reduce_coalesced(mine)
dist.all_reduce_coalesced(ref, group=gloo)
check("all_reduce_coalesced", mine, ref)
m = data(64 * 64, torch.float32, salt=70).reshape(64, 64).t()
ref = m.clone()
dist.all_reduce(m)
dist.all_reduce(ref, group=gloo)
check("all_reduce non-contiguous", m, ref)

# Async work: a future that completes with the outputs.
t = data(100000, torch.float32, salt=80)
want = t.clone()
fut = dist.all_reduce(t, async_op=True).get_future()
dist.all_reduce(want, group=gloo)
check("future value", fut.wait()[0], want)
dist.barrier()

# Errors carry Atoll's message.
try:
    dist.broadcast(torch.zeros(3), src=size + 5)
    failures.append("broadcast from a rank that does not exist succeeded")
except Exception as e:  # noqa: BLE001
    if "atoll" not in str(e) and "invalid" not in str(e).lower():
        failures.append(f"unexpected error text: {e}")

print(f"rank {rank}: {'FAILED' if failures else 'passed'}: {len(failures)} failures", flush=True)
for f in failures[:20]:
    print(f"rank {rank}: {f}", flush=True)
dist.destroy_process_group()
sys.exit(1 if failures else 0)
