"""Peak memory of the docs' LeNet train step at batch 1000: oneflow_compat vs PyTorch eager, and the share of each
warm step spent in page faults (kernel time of the step: this step does no system calls of its own besides memory
faults), target: peak RSS <= torch's, no warm step > 5% in page faults.

Peak RSS belongs to a whole process, so each side runs in its own fresh process (the two alternate, A B A B, and
medians are reported).

    python benchmarks/bench_memory.py [--rounds 3] [--threads 1 2] [--batch 1000]"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402

BATCH, STEPS = 1000, 4


def worker(side, batch, steps, threads):
    import models

    if side == "torch":
        import bench_lenet

        step = bench_lenet.torch_step(batch)
    else:
        step = models.make_train_step(models.lenet, 1, batch_size=batch)
    harness.set_threads(threads)
    step()  # the first step allocates what every step keeps (weights, optimizer state, workspaces)
    shares, faults = [], []
    for _ in range(steps):
        before, cpu0 = resource.getrusage(resource.RUSAGE_SELF), os.times()
        step()
        after, cpu1 = resource.getrusage(resource.RUSAGE_SELF), os.times()
        user, system = cpu1.user - cpu0.user, cpu1.system - cpu0.system
        shares.append(system / max(user + system, 1e-9))
        faults.append(after.ru_minflt - before.ru_minflt)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("RESULT " + json.dumps({"peak_mb": peak_mb, "max_fault_share": max(shares),
                                  "faults_per_step": statistics.median(faults)}))


def _run(side, batch, steps, threads):
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", side, "--batch", str(batch),
                        "--steps", str(steps), "--threads", str(threads)], capture_output=True, text=True,
                       timeout=1200)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError("%s worker failed:\n%s%s" % (side, p.stdout, p.stderr))


def rows(threads_list=None, rounds=3, batch=BATCH, steps=STEPS):
    try:
        import importlib.util

        has_torch = importlib.util.find_spec("torch") is not None
    except ImportError:
        has_torch = False
    sides = ["torch", "oneflow_compat"] if has_torch else ["oneflow_compat"]
    out = []
    for threads in threads_list or harness.thread_counts():
        got = {s: [] for s in sides}
        for r in range(rounds):
            for side in (sides if r % 2 == 0 else sides[::-1]):
                got[side].append(_run(side, batch, steps, threads))
        med = {s: {k: statistics.median(g[k] for g in got[s]) for k in got[s][0]} for s in sides}
        worst_share = {s: max(g["max_fault_share"] for g in got[s]) for s in sides}
        ours = med["oneflow_compat"]
        ratio = ours["peak_mb"] / med["torch"]["peak_mb"] if has_torch else None
        out.append({"bench": "memory", "case": "LeNet train step, batch %d: peak RSS" % batch, "threads": threads,
                    "side": "oneflow_compat / torch", "cpu_text": "-", "wall_text": "-",
                    "target_text": "<= 1.00", "met_text": "-" if ratio is None else ("yes" if ratio <= 1 else "NO"),
                    "cpu_ms_text": "peak %.0f MB / %s" % (ours["peak_mb"], "%.0f MB (ratio %.2f)" % (
                        med["torch"]["peak_mb"], ratio) if has_torch else "-"),
                    "wall_ms_text": "median of %d processes each" % rounds})
        for s in sides:
            out.append({"bench": "memory", "case": "LeNet batch %d: page faults per warm step" % batch,
                        "threads": threads, "side": s, "cpu_text": "-", "wall_text": "-",
                        "target_text": "<= 5%" if s == "oneflow_compat" else "-",
                        "met_text": ("yes" if worst_share[s] <= 0.05 else "NO") if s == "oneflow_compat" else "-",
                        "cpu_ms_text": "worst step %.1f%% of CPU time in the kernel" % (100 * worst_share[s]),
                        "wall_ms_text": "%d minor faults per step" % med[s]["faults_per_step"]})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", choices=["torch", "oneflow_compat"])
    ap.add_argument("--batch", type=int, default=BATCH)
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, nargs="*")
    a = ap.parse_args()
    if a.worker:
        return worker(a.worker, a.batch, a.steps, (a.threads or [1])[0])
    print(harness.format_table(rows(a.threads, a.rounds, a.batch, a.steps)))


if __name__ == "__main__":
    main()
