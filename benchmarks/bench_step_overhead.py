"""Host time per step of a compiled legacy train job: the docs' MLP and LeNet at batch 1, where the kernels' work
is small and a step's time is mostly the framework's own (the executable's step loop, the kernels' wrappers and
their attribute handling, the optimizer update, the fetch).

    python benchmarks/bench_step_overhead.py [--rounds 9] [--steps 30]
    python benchmarks/bench_step_overhead.py --against DIR [--processes 6]

Jobs: `mlp` and `lenet` (benchmarks/models.py at batch 1; LeNet's 3136 x 512 dense layer still moves 6 MB of
weights and gradients per step on the CPU), and `lenet_narrow`: LeNet's ops and shapes of images with 4 and 8
filters and 16 hidden units, whose step is almost all host time. Each on numpy, and on the strict fake device of
tests/strict_device.py (`fake`: the device path's own host work, step scalars, device checks, fetch packing; the
fake's wrappers add their own time, the same on both sides of a comparison).

A step's time is no ratio inside one process (a code change needs two trees), so each round times the steps and
a fixed reference workload (pure Python calls and small numpy operations) in turn, and reports per-step CPU µs
(median and range over rounds), and the Python function calls a step makes, by layer (cProfile's counts: the
same on a loaded machine as on a quiet one) and step / reference (the load of a shared machine divides out, mostly).
`--against DIR` runs this script in alternate processes on DIR's tree (PYTHONPATH=DIR, e.g. a `git worktree` of
an older commit) and on this one, several times each, and prints old / new of the steps' reference-normalised
times: median and range over the process pairs."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
# the tree whose package runs (--against starts this script with another tree here): first on the path
ROOT = os.path.abspath(os.environ.get("STEP_OVERHEAD_TREE", os.path.dirname(HERE)))
sys.path.insert(0, ROOT)


def reference_workload():
    """A fixed mix of Python calls and small numpy operations (~the shape of a framework's host work)."""
    a = np.ones((4, 4), np.float32)
    d = {}
    for i in range(200):
        d[i & 7] = (a + a).sum() + len(tuple(range(i & 15)))
    return d


def lenet_narrow(data, train=False):
    import oneflow_compat as flow

    init = flow.truncated_normal(0.1)
    c1 = flow.layers.conv2d(data, 4, 5, padding="SAME", activation=flow.nn.relu, name="conv1", kernel_initializer=init)
    p1 = flow.nn.max_pool2d(c1, ksize=2, strides=2, padding="SAME", name="pool1", data_format="NCHW")
    c2 = flow.layers.conv2d(p1, 8, 5, padding="SAME", activation=flow.nn.relu, name="conv2", kernel_initializer=init)
    p2 = flow.nn.max_pool2d(c2, ksize=2, strides=2, padding="SAME", name="pool2", data_format="NCHW")
    r = flow.reshape(p2, [p2.shape[0], -1])
    h = flow.layers.dense(r, 16, activation=flow.nn.relu, kernel_initializer=init, name="dense1")
    if train:
        h = flow.nn.dropout(h, rate=0.5, name="dropout")
    return flow.layers.dense(h, 10, kernel_initializer=init, name="dense2")


def make_step(model_name, device):
    from benchmarks import models
    from oneflow_compat.framework import session as sess

    model = lenet_narrow if model_name == "lenet_narrow" else getattr(models, model_name)
    os.environ["ONEFLOW_COMPAT_DEVICE"] = "cpu"
    os.environ["ONEFLOW_COMPAT_CUDA_GRAPH"] = "0"
    if device == "fake":
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        import strict_device

        from oneflow_compat.tools.gpu_stages import Patches

        strict_device.install(Patches(), "gpu", allow_syncs=True, gpus=1)
    sess.clear_default_session()
    step = models.make_train_step(model, 1, 1)
    for _ in range(3):
        step()
    return step


def _time(fn, n):
    """CPU µs per call of this process (at 1 thread: other processes' load does not count, mostly)."""
    t = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - t) / n * 1e6


def _layer(filename):
    path = filename.replace(os.sep, "/")
    for layer in ("oneflow_compat/runtime/", "oneflow_compat/ops/", "oneflow_compat/", "kernels/", "strict_device"):
        if layer in path:
            return {"oneflow_compat/": "oneflow_compat/other", "strict_device": "fake device"}.get(layer, layer)
    return "python, numpy, builtins"


def count_calls(step, n=5):
    """Python function calls per step by where the function lives (cProfile's counts): a figure the machine's load
    does not change, and the host work a step does on any device. Also, under "made by ...", the calls each layer's
    functions make (builtins and numpy included: what a layer costs on any device, the fake device's own calls and
    the kernels' numpy twins, which a GPU does not run, apart)."""
    import cProfile
    import pstats

    profile = cProfile.Profile()
    profile.enable()
    for _ in range(n):
        step()
    profile.disable()
    counts = {}
    for (filename, _, _), (_, calls, _, _, callers) in pstats.Stats(profile).stats.items():
        layer = _layer(filename)
        counts[layer] = counts.get(layer, 0) + calls / n
        for (caller_file, _, caller), made in callers.items():
            twin = "_twin" in caller or caller == "_ordered_sums"  # (the numpy stand-ins of CUDA kernels)
            by = "made by " + ("twins" if twin else _layer(caller_file))
            counts[by] = counts.get(by, 0) + (made[1] if isinstance(made, tuple) else made) / n
    return counts


def measure(cases, rounds, steps):
    """{case: {"us": [per round], "rel": [per round step / reference]}}, cases and reference in turn."""
    from oneflow_compat.comm.environment import limit_loaded_blas_threads

    limit_loaded_blas_threads(1)
    out = {}
    for model_name, device in cases:
        step = make_step(model_name, device)
        us, rel = [], []
        for r in range(rounds):
            pair = [("ref", reference_workload), ("step", step)]
            if r % 2:
                pair.reverse()  # A B, then B A
            t = {label: _time(fn, steps) for label, fn in pair}
            us.append(t["step"])
            rel.append(t["step"] / t["ref"])
        out["%s/%s" % (model_name, device)] = {"us": us, "rel": rel, "calls": count_calls(step)}
    return out


def _spread(values):
    return "%.1f [%.1f, %.1f]" % (statistics.median(values), min(values), max(values))


CASES = [("mlp", "numpy"), ("lenet", "numpy"), ("lenet_narrow", "numpy"),
         ("mlp", "fake"), ("lenet", "fake"), ("lenet_narrow", "fake")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--steps", type=int, default=20, help="steps per timed sample")
    ap.add_argument("--json", action="store_true", help="print the raw samples as JSON (used by --against)")
    ap.add_argument("--against", metavar="DIR", help="compare with the tree in DIR, in alternate processes")
    ap.add_argument("--processes", type=int, default=4, help="--against: processes per tree")
    a = ap.parse_args()
    if a.against:
        return compare(a)
    res = measure(CASES, a.rounds, a.steps)
    if a.json:
        print(json.dumps(res))
        return
    print("per-step host CPU time, 1 thread; median [range] over %d rounds of %d steps" % (a.rounds, a.steps))
    print("%-22s %26s %26s" % ("job/device", "us per step", "step / reference"))
    for name, r in res.items():
        print("%-22s %26s %26s" % (name, _spread(r["us"]), "%.3f [%.3f, %.3f]" % (
            statistics.median(r["rel"]), min(r["rel"]), max(r["rel"]))))
    print("\nPython function calls per step, by where the function lives")
    for name, r in res.items():
        print("%-22s %s" % (name, ", ".join("%s %d" % (k, round(v)) for k, v in sorted(r["calls"].items()))))


def compare(a):
    def run(tree):
        env = dict(os.environ, PYTHONPATH=tree, STEP_OVERHEAD_TREE=tree, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        cmd = [sys.executable, os.path.abspath(__file__), "--json", "--rounds", str(a.rounds), "--steps",
               str(a.steps)]
        done = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])

    old_tree, new_tree = os.path.abspath(a.against), ROOT
    runs = {"old": [], "new": []}
    for p in range(a.processes):
        order = ["old", "new"] if p % 2 == 0 else ["new", "old"]
        for side in order:
            runs[side].append(run(old_tree if side == "old" else new_tree))
    print("old = %s, new = %s; %d processes each, alternating; 1 thread" % (old_tree, new_tree, a.processes))
    print("%-20s %22s %22s %26s" % ("job/device", "old us/step", "new us/step", "old / new (normalised)"))
    for name in runs["new"][0]:
        old_us = [statistics.median(r[name]["us"]) for r in runs["old"]]
        new_us = [statistics.median(r[name]["us"]) for r in runs["new"]]
        ratios = [statistics.median(o[name]["rel"]) / statistics.median(n[name]["rel"])
                  for o, n in zip(runs["old"], runs["new"])]
        print("%-20s %22s %22s %26s" % (name, _spread(old_us), _spread(new_us), "%.3f [%.3f, %.3f]" % (
            statistics.median(ratios), min(ratios), max(ratios))))
    print("\nPython function calls per step (old -> new)")
    for name in runs["new"][0]:
        old, new = runs["old"][0][name]["calls"], runs["new"][0][name]["calls"]
        print("%-20s %s" % (name, ", ".join("%s %d -> %d" % (k, round(old.get(k, 0)), round(new.get(k, 0)))
                                            for k in sorted(set(old) | set(new)))))


if __name__ == "__main__":
    main()
