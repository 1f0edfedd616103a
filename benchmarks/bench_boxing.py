"""Boxing vs raw mpi4py: every `to_global` transition of a 16 MB float32 tensor (2048 x 2048) on 2 and 4 ranks,
each inside one `mpiexec -n N` run this script launches with the venv's mpiexec (1 thread per rank).

For each transition, one call of `x.to_global(placement, sbp)` (the global-tensor API, through the transition table
and the comm) and one call of the raw mpi4py collective that moves the minimum bytes on buffers prepared in advance
(Allreduce, Reduce_scatter_block, Allgather, Alltoall, Bcast, Gather, Reduce, Scatter, Send/Recv) alternate, A B A B,
each after a barrier; a call takes as long as its slowest rank. The ratio of each pair is one sample; the table
shows the median and the range (target <= 1.3, goal 1.1). Moves with no communication (B -> S, B -> P, S -> P) are
timed alone (their reference would be nothing).

    python benchmarks/bench_boxing.py [--rounds 9] [--ranks 2 4] [--quick] [--cases stage "S1 -> B"]

(`--cases`: only the transitions whose name holds one of these texts: more rounds of the rows in question.)"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402

MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")
SHAPE = (2048, 2048)  # float32: 16 MB
TARGET = 1.3


def _cases(n):
    """(name, (src ranks, src sbp), (dst ranks, dst sbp), raw reference name) for a world of n ranks."""
    every, half, other = list(range(n)), list(range(n // 2)), list(range(n // 2, n))
    same = [("P", "B", "Allreduce"), ("P", "S0", "Reduce_scatter"), ("P", "S1", "Reduce_scatter"),
            ("S0", "B", "Allgather"), ("S1", "B", "Allgather"), ("S0", "S1", "Alltoall"),
            ("S1", "S0", "Alltoall"), ("B", "S0", None), ("B", "P", None), ("S0", "P", None)]
    out = [("%s -> %s" % (a, b), (every, a), (every, b), raw) for a, b, raw in same]
    out += [("1 -> %d B" % n, ([0], "B"), (every, "B"), "Bcast"),
            ("1 -> %d S0" % n, ([0], "B"), (every, "S0"), "Scatter"),
            ("%d -> 1 S0" % n, (every, "S0"), ([0], "B"), "Gather"),
            ("%d -> 1 P" % n, (every, "P"), ([0], "B"), "Reduce"),
            ("stage %s -> %s S0" % (half, other), (half, "S0"), (other, "S0"), "Send/Recv"),
            ("rank 0 -> rank %d" % (n - 1), ([0], "B"), ([n - 1], "B"), "Send/Recv")]
    return out


def _raw(name, n, rank, src_ranks, dst_ranks):
    """A function making the raw mpi4py call that moves the minimum bytes, on buffers prepared here."""
    import numpy as np
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    elems = SHAPE[0] * SHAPE[1]
    full = np.ones(elems, np.float32)
    piece = np.ones(elems // n, np.float32)
    out_full = np.empty_like(full)
    out_piece = np.empty_like(piece)
    if name == "Allreduce":
        return lambda: world.Allreduce(full, out_full)
    if name == "Reduce_scatter":
        return lambda: world.Reduce_scatter_block(full, out_piece)
    if name == "Allgather":
        return lambda: world.Allgather(piece, out_full)
    if name == "Alltoall":
        return lambda: world.Alltoall(piece, out_piece)
    if name == "Bcast":
        return lambda: world.Bcast(full, root=0)
    if name == "Scatter":
        return lambda: world.Scatter(full if rank == 0 else None, out_piece, root=0)
    if name == "Gather":
        return lambda: world.Gather(piece, out_full if rank == 0 else None, root=0)
    if name == "Reduce":
        return lambda: world.Reduce(full, out_full if rank == 0 else None, root=0)
    # Send/Recv: each source rank sends what the destination rank at the same position needs
    pairs = list(zip(src_ranks, dst_ranks))
    size = elems // len(src_ranks)
    buf, into = np.ones(size, np.float32), np.empty(size, np.float32)

    def send_recv():
        requests = []
        for a, b in pairs:
            if rank == a:
                requests.append(world.Isend(buf, dest=b))
            if rank == b:
                requests.append(world.Irecv(into, source=a))
        MPI.Request.Waitall(requests)
    return send_recv


def worker(rounds, only=()):
    import numpy as np
    from mpi4py import MPI

    import oneflow_compat as flow
    from oneflow_compat.runtime import global_eager

    comm = global_eager.comm()
    world, rank, n = MPI.COMM_WORLD, comm.rank, comm.size
    sbps = {"S0": flow.sbp.split(0), "S1": flow.sbp.split(1), "B": flow.sbp.broadcast, "P": flow.sbp.partial_sum}
    rng = np.random.default_rng(rank)
    rows = []
    for name, (src_ranks, src), (dst_ranks, dst), raw_name in _cases(n):
        if only and not any(text in name for text in only):
            continue
        src_pl, dst_pl = flow.placement("cpu", src_ranks), flow.placement("cpu", dst_ranks)
        local = rng.standard_normal(SHAPE).astype(np.float32)
        if src in ("S0", "S1"):  # every source rank's local tensor is its piece
            axis = int(src[1])
            k = len(src_ranks)
            local = np.ascontiguousarray(np.split(local, k, axis=axis)[src_ranks.index(rank)]) \
                if rank in src_ranks else local
        x = flow.tensor(local).to_global(placement=src_pl, sbp=sbps[src])

        def ours():
            x.to_global(placement=dst_pl, sbp=sbps[dst])

        raw = _raw(raw_name, n, rank, src_ranks, dst_ranks) if raw_name else None
        times = {"ours": [], "raw": []}
        for k in range(rounds + 2):
            for side, fn in (("ours", ours), ("raw", raw)) if k % 2 == 0 else (("raw", raw), ("ours", ours)):
                if fn is None:
                    continue
                world.Barrier()
                t = time.perf_counter()
                fn()
                if k >= 2:  # warm-up: the plan is compiled, the buffers allocated
                    times[side].append(time.perf_counter() - t)
        ours_t = np.max(world.allgather(times["ours"]), axis=0)  # a call takes as long as its slowest rank
        case = "%s, 16 MB, %d ranks" % (name, n)
        if raw is None:
            rows.append({"bench": "boxing", "case": case, "threads": 1, "side": "to_global (no communication)",
                         "cpu_text": "-", "wall_text": "-", "target_text": "-", "met_text": "-", "cpu_ms_text": "-",
                         "wall_ms_text": "%.2f / -" % (statistics.median(ours_t) * 1e3)})
            continue
        raw_t = np.max(world.allgather(times["raw"]), axis=0)
        ratios = sorted(float(a / b) for a, b in zip(ours_t, raw_t))
        med = statistics.median(ratios)
        rows.append({"bench": "boxing", "case": case, "threads": 1, "side": "to_global / raw %s" % raw_name,
                     "cpu_text": "-", "wall_text": "%.2f [%.2f-%.2f]" % (med, ratios[0], ratios[-1]),
                     "target_text": "<= %.2f" % TARGET, "met_text": "yes" if med <= TARGET else "NO",
                     "cpu_ms_text": "-", "wall_ms_text": "%.2f / %.2f" % (statistics.median(ours_t) * 1e3,
                                                                         statistics.median(raw_t) * 1e3)})
    if rank == 0:
        print("RESULT " + json.dumps(rows), flush=True)


def launch(ranks, rounds, only=()):
    env = dict(os.environ, ONEFLOW_COMPAT_SEED="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    p = subprocess.run([MPIEXEC, "-n", str(ranks), sys.executable, "-m", "mpi4py", os.path.abspath(__file__),
                        "--worker", "--rounds", str(rounds)] + (["--cases"] + list(only) if only else []), capture_output=True, text=True, env=env, timeout=1800)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(p.stdout + p.stderr)


def rows(rounds=9, quick=False, ranks=(2, 4), only=()):
    out = []
    for n in ranks:
        out += launch(n, max(3, rounds // 2) if quick else rounds, only)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--ranks", type=int, nargs="*", default=[2, 4])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--cases", nargs="*", default=[], help="only the transitions whose name holds one of these")
    ap.add_argument("--worker", action="store_true")
    a = ap.parse_args()
    if a.worker:
        return worker(a.rounds, a.cases)
    print(harness.format_table(rows(a.rounds, a.quick, a.ranks, a.cases), "python benchmarks/bench_boxing.py --rounds %d%s"
                               % (a.rounds, " --cases " + " ".join(map(shlex.quote, a.cases)) if a.cases else "")))


if __name__ == "__main__":
    main()
