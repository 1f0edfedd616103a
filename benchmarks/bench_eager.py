"""Eager ops on small tensors: the framework's cost per op against PyTorch eager, all timed in turn in one process.

1. 8x8 float32 tensors, one rank: an elementwise add, a matmul, and a small forward+backward
   (`(relu(x @ w) * x).sum().backward()`, four ops and their backward into a leaf's `.grad`), on local tensors
   and on global tensors placed on one rank — vs the same in PyTorch eager (target: <= 3x, goal 1.5x);
2. on 2 ranks (`--dtensor`, launched under the venv's `mpiexec -n 2`): an add and a matmul on global tensors
   split across the ranks (no communication), and S(0) -> B (an all-gather), vs PyTorch DTensor over gloo
   (both on loopback; gloo's loopback transport is slow on a shared machine, so the all-gather ratio favours us
   and says little: read it as "no worse than").

A timed step is 100 ops, so its milliseconds read as microseconds per op.

Global-tensor programs cannot share a process with the legacy benchmarks (one API per process), so the timing
runs in a child process (`--worker`) that prints its rows.

    python benchmarks/bench_eager.py [--rounds 7] [--threads 1 2] [--quick] [--dtensor]"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402

MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")
OPS_PER_STEP = 100  # a timed step is 100 ops (its milliseconds read as µs per op)
STEPS_PER_SAMPLE = 20


def _sides(kind, make_flow, make_torch):
    """[(label, step)] for one case: torch first (the reference), then ours."""
    return lambda: [("torch eager", make_torch()), ("oneflow_compat " + kind, make_flow())]


def cases(quick=False):
    import numpy as np
    import torch

    import oneflow_compat as flow

    rng = np.random.default_rng(0)
    a, b = (rng.random((8, 8), dtype=np.float32) for _ in range(2))
    steps = STEPS_PER_SAMPLE // 5 if quick else STEPS_PER_SAMPLE

    def repeated(op):
        def step():
            for _ in range(OPS_PER_STEP):
                op()
        return step

    def flow_tensors(kind, grad=False):
        x, w = flow.tensor(a), flow.tensor(b)
        if kind == "global, 1 rank":
            p = flow.placement("cpu", [0])
            x, w = x.to_global(p, flow.sbp.broadcast), w.to_global(p, flow.sbp.broadcast)
        if grad:
            w = w.detach().requires_grad_(True)
        return x, w

    def torch_tensors(grad=False):
        return torch.from_numpy(a.copy()), torch.from_numpy(b.copy()).requires_grad_(grad)

    def fwd_bwd(x, w, relu, matmul):
        def once():
            (relu(matmul(x, w)) * x).sum().backward()
            w.grad = None
        return repeated(once)

    out = []
    for kind in ("local", "global, 1 rank"):
        def add_flow(kind=kind):
            x, w = flow_tensors(kind)
            return repeated(lambda: x + w)

        def add_torch():
            x, w = torch_tensors()
            return repeated(lambda: x + w)

        def mm_flow(kind=kind):
            x, w = flow_tensors(kind)
            return repeated(lambda: flow.matmul(x, w))

        def mm_torch():
            x, w = torch_tensors()
            return repeated(lambda: torch.matmul(x, w))

        def fb_flow(kind=kind):
            x, w = flow_tensors(kind, grad=True)
            return fwd_bwd(x, w, flow.relu, flow.matmul)

        def fb_torch():
            x, w = torch_tensors(grad=True)
            return fwd_bwd(x, w, torch.relu, torch.matmul)

        note = "eager: a step is %d ops (or %d forward+backward passes): its ms are µs per op" % (
            OPS_PER_STEP, OPS_PER_STEP)
        out.append(harness.Case("eager", "add 8x8, %s" % kind, _sides(kind, add_flow, add_torch), steps=steps,
                                target=3.0, note=note))
        out.append(harness.Case("eager", "matmul 8x8, %s" % kind, _sides(kind, mm_flow, mm_torch), steps=steps,
                                target=3.0, note=note))
        out.append(harness.Case("eager", "fwd+bwd 4 ops 8x8, %s" % kind, _sides(kind, fb_flow, fb_torch),
                                steps=max(1, steps // 10), target=3.0, note=note))
    return out


def worker(rounds, threads, quick):
    rows = harness.run_cases(cases(quick), threads, rounds)
    print("RESULT " + json.dumps(rows))


# --- 2 ranks: global tensors split across the ranks vs DTensor over gloo ----------------------------------------
def worker_dtensor(rounds, quick):
    import numpy as np
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    import oneflow_compat as flow
    from oneflow_compat.comm import world

    rank = world.get_process_comm().rank
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29531")
    dist.init_process_group("gloo", rank=rank, world_size=2)
    mesh = init_device_mesh("cpu", (2,))
    rng = np.random.default_rng(0)
    a, b = rng.random((8, 8), dtype=np.float32), rng.random((8, 8), dtype=np.float32)
    p = flow.placement("cpu", [0, 1])
    fx = flow.tensor(a).to_global(p, flow.sbp.broadcast).to_global(sbp=flow.sbp.split(0))
    fw = flow.tensor(b).to_global(p, flow.sbp.broadcast)
    tx = distribute_tensor(torch.from_numpy(a), mesh, [Shard(0)])
    tw = distribute_tensor(torch.from_numpy(b), mesh, [Replicate()])
    steps = STEPS_PER_SAMPLE // (5 if quick else 1)

    def repeated(op):
        def step():
            for _ in range(OPS_PER_STEP):
                op()
        return step

    def to_b(t, replicate):
        return lambda: t.redistribute(mesh, [Replicate()]) if replicate else t.to_global(sbp=flow.sbp.broadcast)

    cases_ = [
        harness.Case("eager", "add 8x8, S(0)+S(0) on 2 ranks", [("DTensor gloo", repeated(lambda: tx + tx)),
                                                               ("oneflow_compat", repeated(lambda: fx + fx))],
                     steps=steps, target=1.0),
        harness.Case("eager", "matmul 8x8, S(0)@B on 2 ranks",
                     [("DTensor gloo", repeated(lambda: torch.matmul(tx, tw))),
                      ("oneflow_compat", repeated(lambda: flow.matmul(fx, fw)))], steps=steps, target=1.0),
        harness.Case("eager", "S(0) -> B of 8x8 on 2 ranks (an all-gather)",
                     [("DTensor gloo", repeated(to_b(tx, True))), ("oneflow_compat", repeated(to_b(fx, False)))],
                     steps=max(1, steps // 4), target=1.0)]
    rows = []
    for case in cases_:
        rows.extend(harness.measure(case.resolve(), 1, rounds))
    for r in rows:
        r["note"] = ("eager, 2 ranks on one host: DTensor over gloo on loopback (slow here), ours over MPI; a step "
                     "is %d ops: its ms are µs per op" % OPS_PER_STEP)
    dist.destroy_process_group()
    if rank == 0:
        print("RESULT " + json.dumps(rows))


def _child(args, ranks=None):
    cmd = [sys.executable, os.path.abspath(__file__)] + args
    if ranks:
        cmd = [MPIEXEC, "-n", str(ranks), sys.executable, "-m", "mpi4py", os.path.abspath(__file__)] + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800,
                       env=dict(os.environ, ONEFLOW_COMPAT_SEED="1", OMP_NUM_THREADS="1"))
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError("bench_eager %s failed:\n%s%s" % (" ".join(args), p.stdout, p.stderr))


def rows(threads=None, rounds=7, quick=False, dtensor=False):
    args = ["--worker", "--rounds", str(rounds)] + (["--quick"] if quick else [])
    if threads:
        args += ["--threads"] + [str(t) for t in threads]
    out = _child(args)
    if dtensor:
        out += _child(["--worker-dtensor", "--rounds", str(rounds)] + (["--quick"] if quick else []), ranks=2)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, nargs="*")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--dtensor", action="store_true", help="also 2 ranks vs DTensor over gloo (mpiexec -n 2)")
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--worker-dtensor", action="store_true")
    a = ap.parse_args()
    if a.worker:
        return worker(a.rounds, a.threads, a.quick)
    if a.worker_dtensor:
        return worker_dtensor(a.rounds, a.quick)
    print(harness.format_table(rows(a.threads, a.rounds, a.quick, a.dtensor)))


if __name__ == "__main__":
    main()
