"""Data-parallel training with global tensors on 2 ranks vs 1 rank, inside one `mpiexec -n 2` run that this script
launches with the venv's mpiexec: the MLP 784-512-512-10, batch 64 per rank, SGD with momentum,

1. eager: forward, backward (the gradients all-reduced through one gradient bucket, whose check carries the loss's
   partial sums), step, loss.numpy() (no collective: the bucket summed it) (target: 2 ranks / 1 rank <= 1.25);
2. nn.Graph: the same step compiled (target <= 1.15; the call's check, in its bucket's all-reduce, carries the loss:
   its numpy() sends nothing);
3. and 4.: the same with the feeds cast with `to_global(..., check_meta=False)` (OneFlow 0.9's promise that every
   rank feeds one shape: no shapes exchanged, no collective for the feeds on 2 ranks);
5. the floor of this machine, no framework: the same step written in numpy, its gradients and loss summed by one
   mpi4py Allreduce of one flat buffer (the least a data-parallel step can communicate). Its ratio is what 2 ranks
   cost over 1 on this hardware alone (shared caches and memory bandwidth, the wait in the Allreduce): reported, not
   judged; the framework's ratios above are read against it.

The step is oneflow_compat/tools/data_parallel_mlp.py's (the one tests/mpi_scripts/engine_data_parallel.py checks).

Each rank's BLAS uses its share of the threads a measurement gives the job: at 2 threads the 1-rank side's rank
uses 2, each of the 2 ranks 1 (as torchrun sets OMP_NUM_THREADS = cores / ranks).

The 1-rank side is the same program on a placement of rank 0 alone (rank 1 runs it too, holding no pieces); the
2-rank side feeds each rank its own 64 rows. Sides are timed in turn (A B, B A, ...) on rank 0; the collectives
each side issues per step are counted (`comm.collectives_issued()`) and shown in the note.

    python benchmarks/bench_data_parallel.py [--rounds 7] [--quick] [--threads 1 2]"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402

MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")
BATCH = 64


def _steps(kind, quick, check_meta=True):
    """[(label, step)] of the 1-rank and 2-rank sides: the step of oneflow_compat/tools/data_parallel_mlp.py (the
    one tests/mpi_scripts/engine_data_parallel.py checks), each rank feeding the same local tensors every step."""
    import numpy as np

    import oneflow_compat as flow
    from oneflow_compat.runtime import global_eager
    from oneflow_compat.tools.data_parallel_mlp import DataParallelMLP

    rank = global_eager.rank()
    rng = np.random.default_rng(rank)
    xs = rng.random((BATCH, 784), dtype=np.float32)
    ys = rng.integers(0, 10, BATCH)

    def side(ranks):
        dp = DataParallelMLP(flow.placement("cpu", ranks), lr=0.01, momentum=0.9, graph=kind == "graph",
                             check_meta=check_meta)
        holds = rank in ranks
        x_local = flow.tensor(xs if holds else xs[:0])
        y_local = flow.tensor(ys if holds else ys[:0], dtype=flow.int64)

        def step():
            dp.run(*dp.feed(x_local, y_local)).numpy()
        return step

    return [("1 rank", _with_threads(side([0]), 1)), ("2 ranks", _with_threads(side([0, 1]), 2))]


def _numpy_steps():
    """[(label, step)] of the floor: the MLP's step in numpy (float32, the same layers, relu, softmax cross-entropy
    averaged over the global batch, SGD with momentum), gradients written straight into one flat buffer that one
    in-place Allreduce sums together with the loss. On the 1-rank side rank 1 computes nothing."""
    import numpy as np
    from mpi4py import MPI

    from oneflow_compat.tools.data_parallel_mlp import LAYERS

    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    rng = np.random.default_rng(rank)
    xs = rng.random((BATCH, 784), dtype=np.float32)
    ys = rng.integers(0, 10, BATCH)

    def side(ranks):
        init = np.random.default_rng(0)
        shapes = [s for n_in, n_out in zip(LAYERS[:-1], LAYERS[1:]) for s in ((n_in, n_out), (n_out,))]
        sizes = [int(np.prod(s)) for s in shapes]
        params = [(init.standard_normal(s) * 0.05).astype(np.float32) for s in shapes]
        velocity = [np.zeros_like(p) for p in params]
        flat = np.zeros(sum(sizes) + 1, np.float32)  # the gradients, then the loss's sum
        grads, at = [], 0
        for s, n in zip(shapes, sizes):
            grads.append(flat[at:at + n].reshape(s))
            at += n
        onehot = np.eye(LAYERS[-1], dtype=np.float32)[ys]
        scale = np.float32(1.0 / (BATCH * len(ranks)))
        sub = world.Split(0 if rank in ranks else MPI.UNDEFINED) if len(ranks) > 1 else None

        def step():
            if rank not in ranks:
                return
            w1, b1, w2, b2, w3, b3 = params
            h1 = np.maximum(xs @ w1 + b1, 0)
            h2 = np.maximum(h1 @ w2 + b2, 0)
            logits = h2 @ w3 + b3
            logits -= logits.max(axis=1, keepdims=True)
            e = np.exp(logits)
            p = e / e.sum(axis=1, keepdims=True)
            flat[-1] = -np.log(p[np.arange(BATCH), ys]).sum() * scale
            d3 = (p - onehot) * scale
            np.dot(h2.T, d3, out=grads[4])
            d3.sum(axis=0, out=grads[5])
            d2 = (d3 @ w3.T) * (h2 > 0)
            np.dot(h1.T, d2, out=grads[2])
            d2.sum(axis=0, out=grads[3])
            d1 = (d2 @ w2.T) * (h1 > 0)
            np.dot(xs.T, d1, out=grads[0])
            d1.sum(axis=0, out=grads[1])
            if sub is not None:
                sub.Allreduce(MPI.IN_PLACE, flat)
            for w, v, g in zip(params, velocity, grads):
                v *= 0.9
                v += g
                w -= np.float32(0.01) * v
            return float(flat[-1])
        return step

    return [("1 rank", _with_threads(side([0]), 1)), ("2 ranks", _with_threads(side([0, 1]), 2))]


_BLAS = {"controllers": None, "threads": None, "machine": None}


def set_machine_threads(n):
    """The threads the harness gives this job (`harness.set_threads` per measurement): each side's ranks share them."""
    _BLAS["machine"] = n


def _with_threads(step, ranks):
    """`step`, run with BLAS threads = this rank's share of the threads the measurement gives the job (torchrun's
    OMP_NUM_THREADS rule): on 2 threads the 1-rank side's rank uses both, each of the 2 ranks one. The limit is set
    when the side changes (threadpoolctl's controllers found once: setting them is cheap)."""
    def run():
        want = max(1, (_BLAS["machine"] or 1) // ranks)
        if want != _BLAS["threads"]:
            if _BLAS["controllers"] is None:
                from threadpoolctl import ThreadpoolController

                _BLAS["controllers"] = ThreadpoolController().select(user_api="blas").lib_controllers
            for controller in _BLAS["controllers"]:
                clear = getattr(type(controller), "clear_controlling_thread", None)
                if clear is not None:
                    clear(force=True)
                controller.set_num_threads(want)
            _BLAS["threads"] = want
        step()
    return run


def worker(rounds, quick, threads):
    from oneflow_compat.runtime import global_eager

    comm = global_eager.comm()
    rows = []
    for kind, target, check_meta in (("eager", 1.25, True), ("nn.Graph", 1.15, True),
                                     ("eager, feeds check_meta=False", 1.25, False),
                                     ("nn.Graph, feeds check_meta=False", 1.15, False)):
        sides = _steps("eager" if kind.startswith("eager") else "graph", quick, check_meta)
        rows.extend(_measure(comm, kind, target, sides, quick, rounds, threads))
    # the floor: numpy + one mpi4py Allreduce (1 collective per step on 2 ranks, none on 1); reported, not judged
    rows.extend(_measure(None, "floor: numpy + mpi4py Allreduce, no framework,", None, _numpy_steps(), quick, rounds,
                         threads))
    if comm.rank == 0:
        print("RESULT " + json.dumps(rows))


def _measure(comm, kind, target, sides, quick, rounds, threads):
    """The rows of one case: each side warmed, its collectives per step counted (`comm`: the framework's), timed."""
    rows = []
    counts = {}
    for label, step in sides:
        step()  # warm: compiled; the gradients' order learned
        step()  # the buckets summed during backward allocated
        if comm is not None:
            before = comm.collectives_issued()
            step()
            counts[label] = comm.collectives_issued() - before
        else:
            counts[label] = 0 if label == "1 rank" else 1
    steps = 3 if quick else 10
    case = harness.Case("data parallel", "%s MLP 784-512-512-10, batch %d/rank (x%d)" % (kind, BATCH, steps),
                        sides, steps=steps, target=target,
                        note="collectives per step: %s %s: %s" % (kind, ", ".join(
                            "%s %d" % (label, n) for label, n in counts.items()), "counted on rank 0"))
    for t in threads or harness.thread_counts():
        set_machine_threads(t)
        _BLAS["threads"] = None  # harness.set_threads(t) sets every BLAS thread count anew
        rows.extend(harness.measure(case.resolve(), t, rounds))
    return rows


def rows(threads=None, rounds=7, quick=False):
    args = ["--worker", "--rounds", str(rounds)] + (["--quick"] if quick else [])
    if threads:
        args += ["--threads"] + [str(t) for t in threads]
    env = dict(os.environ, ONEFLOW_COMPAT_SEED="1", OMP_NUM_THREADS="1")
    p = subprocess.run([MPIEXEC, "-n", "2", sys.executable, "-m", "mpi4py", os.path.abspath(__file__)] + args,
                       capture_output=True, text=True, env=env, timeout=1800)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError("bench_data_parallel failed:\n" + p.stdout + p.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, nargs="*")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--worker", action="store_true")
    a = ap.parse_args()
    if a.worker:
        return worker(a.rounds, a.quick, a.threads)
    print(harness.format_table(rows(a.threads, a.rounds, a.quick)))


if __name__ == "__main__":
    main()
