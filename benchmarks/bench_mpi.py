"""MPI measurements, each inside one `mpiexec -n 2` run that this script launches with the venv's mpiexec:

1. a gradient all-reduce through our boxing (P -> B on 2 ranks, the plan's collective) vs raw mpi4py Allreduce of
   the same buffers, 1-16 MB, alternating one call of each (target <= 1.1x from 1 MB);
2. the data-parallel MLP and LeNet train steps on 2 ranks vs the same job on rank 0 alone (both jobs in one
   session, timed in turn; 1 thread per rank, as the launcher gives 2 ranks on 2 cores).

    python benchmarks/bench_mpi.py [--rounds 7] [--quick]"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402

MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")


def worker_allreduce(calls):
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
    rows = []
    for mb in (1, 4, 16):
        n = mb * 1024 * 1024 // 4
        meta = TensorMeta((n,), dtypes.float32)
        box = distributed.make_boxing(rt, {"src_placement": pl, "src_sbp": sbp.P, "dst_placement": pl,
                                           "dst_sbp": sbp.B}, meta, owned=True)  # as for a matmul's gradient
        grad = np.random.default_rng(comm.rank).random(n, dtype=np.float32)
        raw_buf = np.empty_like(grad)
        ours, raw = [], []
        for k in range(calls + 2):
            fresh = grad.copy()  # each step's gradient is a fresh array, reduced in place
            MPI.COMM_WORLD.Barrier()
            t = time.perf_counter()
            box(fresh)
            a = time.perf_counter() - t
            MPI.COMM_WORLD.Barrier()
            t = time.perf_counter()
            MPI.COMM_WORLD.Allreduce(grad, raw_buf)
            b = time.perf_counter() - t
            if k >= 2:  # warm-up
                ours.append(a)
                raw.append(b)
        ours = np.max(MPI.COMM_WORLD.allgather(ours), axis=0)  # a call takes as long as its slowest rank
        raw = np.max(MPI.COMM_WORLD.allgather(raw), axis=0)
        ratios = sorted(float(x / y) for x, y in zip(ours, raw))
        rows.append({"bench": "mpi", "case": "gradient all-reduce %d MB, 2 ranks" % mb, "threads": 1,
                     "side": "boxing / raw Allreduce", "cpu_text": "-",
                     "wall_text": "%.2f [%.2f-%.2f]" % (statistics.median(ratios), ratios[0], ratios[-1]),
                     "target_text": "<= 1.10", "met_text": "yes" if statistics.median(ratios) <= 1.1 else "NO",
                     "cpu_ms_text": "-", "wall_ms_text": "%.2f / %.2f" % (statistics.median(ours) * 1e3,
                                                                         statistics.median(raw) * 1e3)})
    if comm.rank == 0:
        print("RESULT " + json.dumps(rows))


def worker_steps(rounds, quick):
    import models
    from oneflow_compat.comm import world

    rows = []
    for name, model, steps in (("MLP 784-512-10", models.mlp, 40), ("LeNet", models.lenet, 5)):
        def sides(model=model):
            fns = models.train_steps(model, placements={1: "0:0", 2: ["0:0", "1:0"]})
            return [("1 rank", fns[1]), ("2 ranks", fns[2])]

        case = harness.Case("mpi", "%s train step, batch %d" % (name, models.B), sides,
                            max(1, steps // 4) if quick else steps)
        rows.extend(harness.measure(case.resolve(), 1, rounds))
    if world.get_process_comm().rank == 0:
        print("RESULT " + json.dumps(rows))


def launch(ranks, *args):
    env = dict(os.environ, ONEFLOW_COMPAT_SEED="1")
    p = subprocess.run([MPIEXEC, "-n", str(ranks), sys.executable, "-m", "mpi4py", os.path.abspath(__file__)]
                       + list(args), capture_output=True, text=True, env=env, timeout=1800)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(p.stdout + p.stderr)


def rows(rounds=7, quick=False):
    out = launch(2, "--worker", "allreduce", "--calls", str(5 * rounds))
    return out + launch(2, "--worker", "steps", "--rounds", str(rounds), *(["--quick"] if quick else []))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--worker", choices=["allreduce", "steps"])
    a = ap.parse_args()
    if a.worker == "allreduce":
        return worker_allreduce(a.calls)
    if a.worker == "steps":
        return worker_steps(a.rounds, a.quick)
    print(harness.format_table(rows(a.rounds, a.quick)))


if __name__ == "__main__":
    main()
