"""Data-parallel MLP and LeNet train steps on N in-process CPU devices vs 1 device, both jobs in one session and
timed in turn (benchmarks/harness.py): the cost of splitting and boxing inside one process (target <= 1.15x).

    python benchmarks/bench_parallel.py [--devices 2] [--rounds 7] [--threads 1 2] [--quick]"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import models  # noqa: E402

DEVICES = 2


def cases(quick=False):
    n = DEVICES
    out = []
    for name, model, steps in (("MLP 784-512-10", models.mlp, 40), ("LeNet", models.lenet, 5)):
        def sides(model=model):
            fns = models.train_steps(model, (1, n))
            return [("1 device", fns[1]), ("%d devices" % n, fns[n])]

        out.append(harness.Case("parallel", "%s train step, batch %d" % (name, models.B), sides,
                                max(1, steps // 4) if quick else steps, target=1.15))
    return out


if __name__ == "__main__":
    if "--devices" in sys.argv:
        i = sys.argv.index("--devices")
        DEVICES = int(sys.argv[i + 1])
        del sys.argv[i:i + 2]
    harness.main_for(cases, __doc__.splitlines()[0])
