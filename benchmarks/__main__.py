"""Runs every benchmark and prints one table of ratios (each benchmark also runs alone: python benchmarks/X.py).

    python -m benchmarks [--rounds 7] [--threads 1 2] [--quick] [--dtensor]
                         [--only mlp lenet conv half parallel resnet50 memory mpi eager dp boxing]

Every comparison times its sides in turn inside one process (benchmarks/harness.py), at 1 thread and at the
machine's threads; the memory benchmark runs each side in fresh processes (peak RSS is per process), the MPI and
data-parallel ones inside one `mpiexec -n 2` run, the eager-op one in a child process (the global-tensor API
cannot share a process with the legacy benchmarks), the boxing one (every to_global transition of 16 MB vs raw
mpi4py) inside one `mpiexec -n 2` and one `mpiexec -n 4` run; `--dtensor` adds eager ops on 2 ranks vs PyTorch
DTensor."""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_boxing  # noqa: E402
import bench_data_parallel  # noqa: E402
import bench_eager  # noqa: E402
import bench_half_products  # noqa: E402
import bench_kernels_conv  # noqa: E402
import bench_lenet  # noqa: E402
import bench_memory  # noqa: E402
import bench_mlp  # noqa: E402
import bench_mpi  # noqa: E402
import bench_parallel  # noqa: E402
import bench_resnet50  # noqa: E402
import harness  # noqa: E402

TIMED = {"mlp": bench_mlp, "lenet": bench_lenet, "conv": bench_kernels_conv, "parallel": bench_parallel,
         "resnet50": bench_resnet50, "half": bench_half_products}
ALL = ["mlp", "lenet", "conv", "half", "parallel", "resnet50", "memory", "mpi", "eager", "dp", "boxing"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, nargs="*", help="thread counts (default: 1 and the machine's cores)")
    ap.add_argument("--quick", action="store_true", help="fewer steps per sample")
    ap.add_argument("--only", nargs="*", choices=ALL, default=ALL)
    ap.add_argument("--dtensor", action="store_true", help="eager: also 2 ranks vs DTensor over gloo")
    a = ap.parse_args()
    rows = []
    for name in a.only:
        if name in TIMED:
            rows += harness.run_cases(TIMED[name].cases(a.quick), a.threads, a.rounds)
        elif name == "memory":
            rows += bench_memory.rows(a.threads, max(1, a.rounds // 2))
        elif name == "mpi":
            rows += bench_mpi.rows(a.rounds, a.quick)
        elif name == "eager":
            rows += bench_eager.rows(a.threads, a.rounds, a.quick, a.dtensor)
        elif name == "dp":
            rows += bench_data_parallel.rows(a.threads, a.rounds, a.quick)
        elif name == "boxing":
            rows += bench_boxing.rows(a.rounds, a.quick)
        print("(%s done)" % name, file=sys.stderr, flush=True)
    print(harness.format_table(rows, "python -m benchmarks --rounds %d%s" % (a.rounds, " --quick" if a.quick
                                                                               else "")))


if __name__ == "__main__":
    main()
