"""MPI measurements, in one run (this script launches the venv's mpiexec itself):

1. a gradient all-reduce through our boxing (P -> B on 2 ranks, the plan's collective) vs raw mpi4py Allreduce of
   the same buffers, for 1-16 MB (target <= 1.1x for >= 1 MB);
2. the data-parallel MLP and LeNet train steps on 2 ranks vs 1 rank.

    python benchmarks/bench_mpi.py [--steps 10]"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")


def worker_allreduce():
    import numpy as np
    from mpi4py import MPI

    from oneflow_compat.comm import world
    from oneflow_compat.ir import dtypes, placement, sbp
    from oneflow_compat.ir.graph import TensorMeta
    from oneflow_compat.runtime import distributed
    from oneflow_compat.runtime.runtime import Runtime

    comm = world.get_process_comm()
    rt = Runtime(comm, comm.rank)
    pl = placement.Placement("cpu", [(0, 0), (1, 0)])
    out = {}
    for mb in (1, 4, 16):
        n = mb * 1024 * 1024 // 4
        meta = TensorMeta((n,), dtypes.float32)
        box = distributed.make_boxing(rt, {"src_placement": pl, "src_sbp": sbp.P, "dst_placement": pl,
                                           "dst_sbp": sbp.B}, meta, owned=True)  # as for a matmul's gradient
        grad = np.random.default_rng(comm.rank).random(n, dtype=np.float32)
        raw_buf = np.empty_like(grad)
        ours, raw = [], []
        for _ in range(15):
            fresh = grad.copy()  # each step's gradient is a fresh array, reduced in place
            MPI.COMM_WORLD.Barrier()
            t = time.perf_counter()
            box(fresh)
            ours.append(time.perf_counter() - t)
            MPI.COMM_WORLD.Barrier()
            t = time.perf_counter()
            MPI.COMM_WORLD.Allreduce(grad, raw_buf)
            raw.append(time.perf_counter() - t)
        out[mb] = (float(np.median(ours)), float(np.median(raw)))
    if comm.rank == 0:
        print("RESULT " + json.dumps(out))


def worker_steps(steps):
    sys.path.insert(0, HERE)
    import models
    from oneflow_compat.comm import world

    res = {}
    for name, model, n in (("MLP", models.mlp, steps * 5), ("LeNet", models.lenet, steps)):
        res[name] = models.best_time(models.make_train_step(model, 1), n)
    if world.get_process_comm().rank == 0:
        print("RESULT " + json.dumps(res))


def launch(ranks, *args):
    env = dict(os.environ, ONEFLOW_COMPAT_SEED="1")
    p = subprocess.run([MPIEXEC, "-n", str(ranks), sys.executable, "-m", "mpi4py", os.path.abspath(__file__)]
                       + list(args), capture_output=True, text=True, env=env, timeout=900)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(p.stdout + p.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--worker", choices=["allreduce", "steps"])
    a = ap.parse_args()
    if a.worker == "allreduce":
        return worker_allreduce()
    if a.worker == "steps":
        return worker_steps(a.steps)
    ar = launch(2, "--worker", "allreduce")
    print("gradient all-reduce through boxing vs raw mpi4py Allreduce, 2 ranks (median of 15):")
    for mb, (ours, raw) in ar.items():
        print("  %3s MB: boxing %7.3f ms  raw %7.3f ms  ratio %.3f (target <= 1.1)" % (mb, ours * 1e3, raw * 1e3,
                                                                                      ours / raw))
    one = launch(1, "--worker", "steps", "--steps", str(a.steps))
    two = launch(2, "--worker", "steps", "--steps", str(a.steps))
    print("data-parallel train step, batch 100 split over the ranks (1 device per rank):")
    for name in one:
        print("  %-6s 1 rank %8.2f ms   2 ranks %8.2f ms   ratio %.3f" % (name, one[name] * 1e3, two[name] * 1e3,
                                                                         two[name] / one[name]))


if __name__ == "__main__":
    main()
