"""How every benchmark measures: the sides of a comparison run in turn inside one process (A B, then B A, ...), at
a given number of threads, and each round gives one CPU time and one wall time per side and one ratio per side
against the reference. What is reported is the median over rounds and, for ratios, the median and the range of
the per-round ratios: on a shared machine absolute times are load, ratios taken seconds apart are not.

Which ratio a target is judged on: CPU time at 1 thread (load from other processes does not inflate it); wall time
at more threads (CPU time then also counts the threads a library keeps spinning, which is not time to a result).
"""
import os
import statistics
import sys
import time

# the threads every library may use, set per measurement (never from the environment, which only works before the
# libraries load); the OpenBLAS limiter is the project's own (comm/environment.py)
from oneflow_compat.comm.environment import limit_loaded_blas_threads, usable_cores


def thread_counts():
    """1 thread, and the machine's cores when there are more."""
    cores = usable_cores()
    return [1] if cores == 1 else [1, cores]


def set_threads(n):
    limit_loaded_blas_threads(n)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)
    # numba: the project's compiled kernels are single-threaded; numba's own thread pool is never started (starting
    # it — numba.set_num_threads does — puts an OpenMP runtime's spinning threads beside torch's: measured 2.5x
    # slower torch steps)


class Case:
    """One comparison: `sides` is [(label, step function)] (or a function returning it, called right before the
    case is measured: a legacy session lives until the next one is made), timed in turn; `pairs` the (side,
    reference) ratios to report (default: every side against the first); `steps` calls of a step make one timed
    sample; `target` is the ratio a side must stay under (None: reported only): one for all, or a dict by side label or
    by (side, reference)."""

    def __init__(self, bench, name, sides, steps=1, target=None, note="", pairs=None):
        self.bench, self.name, self._sides, self.steps, self.target, self.note = bench, name, sides, steps, target, note
        self._pairs = pairs

    def resolve(self):
        if callable(self._sides):
            self._sides = self._sides()
        self.sides = self._sides
        labels = [label for label, _ in self.sides]
        self.pairs = self._pairs if self._pairs is not None else [(label, labels[0]) for label in labels[1:]]
        return self

    def target_of(self, label, ref):
        if isinstance(self.target, dict):
            return self.target.get((label, ref), self.target.get(label))
        return self.target


def _sample(fn, steps):
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(steps):
        fn()
    return (time.process_time() - cpu) / steps, (time.perf_counter() - wall) / steps


def measure(case, threads, rounds, warmup=2):
    """Rows of the table for one case at `threads` threads: one per non-reference side."""
    set_threads(threads)
    labels = [label for label, _ in case.sides]
    for _, fn in case.sides:
        for _ in range(warmup):
            fn()
    cpu = {label: [] for label in labels}
    wall = {label: [] for label in labels}
    order = list(case.sides)
    for r in range(rounds):
        for label, fn in (order if r % 2 == 0 else order[::-1]):
            c, w = _sample(fn, case.steps)
            cpu[label].append(c)
            wall[label].append(w)
    rows = []
    for label, ref in case.pairs:
        cpu_ratios = [a / b for a, b in zip(cpu[label], cpu[ref])]
        wall_ratios = [a / b for a, b in zip(wall[label], wall[ref])]
        judged = cpu_ratios if threads == 1 else wall_ratios
        target = case.target_of(label, ref)
        rows.append({
            "bench": case.bench, "case": case.name, "threads": threads, "side": label, "reference": ref,
            "rounds": rounds, "cpu_ms": statistics.median(cpu[label]) * 1e3,
            "ref_cpu_ms": statistics.median(cpu[ref]) * 1e3, "wall_ms": statistics.median(wall[label]) * 1e3,
            "ref_wall_ms": statistics.median(wall[ref]) * 1e3, "cpu_ratio": _spread(cpu_ratios),
            "wall_ratio": _spread(wall_ratios), "target": target,
            "met": None if target is None else statistics.median(judged) <= target, "note": case.note})
    return rows


def _spread(values):
    return statistics.median(values), min(values), max(values)


def run_cases(cases, threads_list=None, rounds=7):
    rows = []
    for case in cases:
        case.resolve()
        for threads in threads_list or thread_counts():
            rows.extend(measure(case, threads, rounds))
        case.sides = case._sides = None  # let its session and buffers go
    return rows


def _ratio(spread):
    med, lo, hi = spread
    return "%.2f [%.2f-%.2f]" % (med, lo, hi)


def format_table(rows, title=None):
    """A markdown table: ratios first (the result), the medians of absolute times for orientation."""
    lines = []
    if title:
        lines.append(title)
    lines.append("| benchmark | case | thr | side / reference | CPU ratio med [range] | wall ratio med [range] "
                 "| target | met | CPU ms (side / ref) | wall ms (side / ref) |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "cpu_ratio" in r:
            target = "-" if r["target"] is None else "<= %.2f" % r["target"]
            met = "-" if r["met"] is None else ("yes" if r["met"] else "NO")
            lines.append("| %s | %s | %d | %s / %s | %s | %s | %s | %s | %.2f / %.2f | %.2f / %.2f |" % (
                r["bench"], r["case"], r["threads"], r["side"], r["reference"], _ratio(r["cpu_ratio"]),
                _ratio(r["wall_ratio"]), target, met, r["cpu_ms"], r["ref_cpu_ms"], r["wall_ms"], r["ref_wall_ms"]))
        else:  # a row some benchmark made itself (memory, MPI): its own words
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % tuple(
                r.get(k, "-") for k in ("bench", "case", "threads", "side", "cpu_text", "wall_text", "target_text",
                                         "met_text", "cpu_ms_text", "wall_ms_text")))
    notes = sorted({r["note"] for r in rows if r.get("note")})
    lines.extend("note: " + n for n in notes)
    lines.append("machine: %d usable cores, load average %.2f at the end (ratios are the result; absolute times "
                 "on a loaded machine are not)" % (usable_cores(), os.getloadavg()[0]))
    return "\n".join(lines)


def main_for(cases_fn, description):
    """The `main` of one benchmark module: its cases at 1 thread and at the machine's threads, one table."""
    import argparse

    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, nargs="*", help="thread counts (default: 1 and the machine's cores)")
    ap.add_argument("--quick", action="store_true", help="fewer steps per sample")
    a = ap.parse_args()
    rows = run_cases(cases_fn(a.quick), a.threads, a.rounds)
    print(format_table(rows))
