"""The in-process stages of the GPU check (oneflow_compat/tools/gpu_check.py runs each as a child process):

    python -m oneflow_compat.tools.gpu_stages models|graph|nccl|nccl_ranks|validate [--out DIR]

Each prints `GPU_CHECK ok|failed|skipped <what>: <detail>` lines (the check counts them) and writes its numbers to
`DIR/<stage>.json`. With GPU_CHECK_FAKE=1 (the check's `--fake` dry run) the GPU is the strict fake device of
tests/strict_device.py (its launches and synchronisations counted by the fake itself), NCCL a fake communicator
(tests/fake_nccl.py), and torch's CUDA comparisons are skipped.

Run from the checkout's root (the docs' MLP and LeNet come from `benchmarks/models.py`).
"""
import argparse
import contextlib
import json
import os
import statistics
import sys
import time
import traceback

import numpy as np

# (realpath: imported through gpu_check's link farm, the file still lies in the checkout)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
FAKE = os.environ.get("GPU_CHECK_FAKE") == "1"


def say(status, what, detail=""):
    print("GPU_CHECK %s %s%s" % (status, what, (": " + str(detail)) if detail != "" else ""), flush=True)


def write(out, stage, results):
    if out:
        with open(os.path.join(out, "%s.json" % stage), "w") as f:
            json.dump(results, f, indent=2, sort_keys=True, default=str)


def guarded(results, name, fn):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - a check reports everything and goes on
        results[name + "_error"] = "%s: %s" % (type(e).__name__, str(e)[:600])
        say("failed", name, results[name + "_error"])
        traceback.print_exc()
        return None


# --- device modes ----------------------------------------------------------------------------------------------
class Patches:
    """monkeypatch's setattr for the fake device, undone on exit (the step-overhead benchmark uses it too)."""

    def __init__(self):
        self.undo = []

    def setattr(self, obj, name, value):
        self.undo.append((obj, name, getattr(obj, name)))
        setattr(obj, name, value)

    def restore(self):
        for obj, name, value in reversed(self.undo):
            setattr(obj, name, value)
        self.undo = []


@contextlib.contextmanager
def device(mode, graph=False):
    """Runs the block with every placement on `mode` ("cpu" or "gpu"; the fake device in a dry run), CUDA graphs
    asked or not, in a fresh session."""
    from oneflow_compat.framework import session as sess

    patches = Patches()
    old = {k: os.environ.get(k) for k in ("ONEFLOW_COMPAT_DEVICE", "ONEFLOW_COMPAT_CUDA_GRAPH")}
    os.environ["ONEFLOW_COMPAT_DEVICE"] = mode if not (FAKE and mode == "gpu") else "cpu"
    os.environ["ONEFLOW_COMPAT_CUDA_GRAPH"] = "1" if graph else "0"
    fake = None
    if FAKE and mode == "gpu":
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        import strict_device

        fake = strict_device.install(patches, "gpu", allow_syncs=True, gpus=1)
    sess.clear_default_session()
    try:
        yield fake
    finally:
        sess.clear_default_session()
        patches.restore()
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _median_ms(fn, n, warm=2, sync=None):
    for _ in range(warm):
        fn()
    if sync:
        sync()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        if sync:
            sync()
        times.append(time.perf_counter() - t)
    return round(statistics.median(times) * 1e3, 3)


def _rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def _close(got, want):
    return all(np.allclose(g, w, rtol=1e-5, atol=1e-6) for g, w in zip(got, want))


# what "equal to the CPU" means: every loss of the three steps within rtol 1e-5 of the CPU's (dropout masks are the
# same Philox bits: a different mask would move a loss by far more), and every variable after the first step within
# 1e-5 of the CPU's in norm. After three steps the variables are reported, not judged: the docs' LeNet at lr 0.1 on
# one batch is ill-conditioned there — float32 sums in another order (cuBLAS, a batched product, a reduction kernel)
# leave ~1e-7 after one step and ~1e-4 after three in the convolutions' weights and biases, as much as the CPU's own
# two paths differ (its numba kernels against its numpy ones, ONEFLOW_COMPAT_JIT=0: 8.8e-5 in conv1's weight).
LOSS_RTOL, WEIGHT_RTOL, WEIGHT_RTOL_LAST = 1e-5, 1e-5, 1e-4


def _rel_weights(weights, cpu_weights):
    rel = {k: _rel(weights[k], cpu_weights[k]) for k in cpu_weights if k in weights}
    worst = max(rel, key=rel.get)
    return rel[worst], worst


def _compare(losses, weights, cpu_losses, cpu_weights, first=None, cpu_first=None):
    """The GPU run against the CPU's. `weights`: after the last step; `first`: after the first (then the variables
    are judged there, see above; without it, after the last step within WEIGHT_RTOL_LAST)."""
    rel_loss = max(_rel(a, b) for a, b in zip(losses, cpu_losses))
    rel_last, worst_last = _rel_weights(weights, cpu_weights)
    same_names = sorted(weights) == sorted(cpu_weights)
    out = {"max_rel_loss": rel_loss, "max_rel_weight": rel_last, "worst_weight": worst_last,
           "losses_rtol_1e-5": bool(_close(losses, cpu_losses)),
           "weights_elementwise_rtol_1e-5": bool(same_names and all(_close([weights[k]], [cpu_weights[k]])
                                                                    for k in cpu_weights))}
    if first is not None:
        rel_first, worst_first = _rel_weights(first, cpu_first)
        out.update(max_rel_weight_step1=rel_first, worst_weight_step1=worst_first)
        weights_ok = rel_first <= WEIGHT_RTOL
    else:
        weights_ok = rel_last <= WEIGHT_RTOL_LAST
    out["matches_cpu"] = bool(same_names and _close(losses, cpu_losses) and weights_ok)
    return out


def _train(model, batch, steps):
    """(losses of `steps` calls, every variable after the last, every variable after the first, the step function)
    of the docs' train job."""
    sys.path.insert(0, ROOT)
    from benchmarks import models  # (it imports the package itself: the check runs its jobs as a user would)

    step = models.make_train_step(getattr(models, model), 1, batch)
    losses = [np.array(step(), copy=True)]
    first = {k: np.array(v, copy=True) for k, v in _variables().items()}
    losses += [np.array(step(), copy=True) for _ in range(steps - 1)]
    weights = {k: np.array(v, copy=True) for k, v in _variables().items()}
    return losses, weights, first, step


# --- torch CUDA: the reference step, and kernel counts through its profiler -----------------------------------
def _variables():
    """Every variable of the default session, as host arrays (what flow.get_all_variables() reads)."""
    from oneflow_compat.framework import session as sess

    s = sess.default_session()
    return {name: s.vars.get_full(spec) for name, spec in s.vars.specs.items()}


def _torch_step(model, batch, fed=False):
    """torch's eager train step of `model` on CUDA. `fed`: the batch goes up from host (numpy) memory in every step,
    as a legacy job's placeholders take it (the oneflow_compat step uploads its images and labels each call: the
    like-for-like comparison); else it stays on the device from the start (the first runs' comparison)."""
    import torch
    import torch.nn.functional as F

    sys.path.insert(0, ROOT)
    from benchmarks import models

    dev = "cuda"
    host_x, host_y = models.batch(batch)
    host_y = host_y.astype(np.int64)
    x, y = torch.from_numpy(host_x).to(dev), torch.from_numpy(host_y).to(dev)
    if model == "lenet":
        shapes = [(32, 1, 5, 5), (32,), (64, 32, 5, 5), (64,), (512, 3136), (512,), (10, 512), (10,)]
    else:
        shapes = [(512, 784), (512,), (10, 512), (10,)]
    params = [(torch.randn(*s, device=dev) * 0.1).requires_grad_(True) for s in shapes]
    opt = torch.optim.SGD(params, lr=0.1)

    def step():
        nonlocal x, y
        if fed:
            x, y = torch.from_numpy(host_x).to(dev), torch.from_numpy(host_y).to(dev)
        opt.zero_grad()
        if model == "lenet":
            c1, b1, c2, b2, w1, d1, w2, d2 = params
            h = F.max_pool2d(F.relu(F.conv2d(x, c1, b1, padding=2)), 2, 2)
            h = F.max_pool2d(F.relu(F.conv2d(h, c2, b2, padding=2)), 2, 2)
            h = F.dropout(F.relu(F.linear(h.reshape(batch, -1), w1, d1)), 0.5, training=True)
        else:
            w1, d1, w2, d2 = params
            h = F.relu(F.linear(x.reshape(batch, -1), w1, d1))
        loss = F.cross_entropy(F.linear(h, w2, d2), y, reduction="none")
        loss.mean().backward()
        opt.step()
        return loss.detach().cpu().numpy()  # a fetched loss, as the oneflow_compat step returns one

    return step


def _profile_counts(fn, steps=1):
    """Kernels, host->device and device->host copies and memsets of one call of fn (CUPTI sees CuPy's too), and
    `device_us`: the time the device spent in them (see `count_device_events`), per call over `steps` calls; and
    `by_kernel`: the device time per step of each kernel or copy by name (`device_time_table`)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
    events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    counts = count_device_events(events)
    counts = {k: (round(v / steps, 1) if k == "device_us" else round(v / steps, 2) if steps > 1 else v)
              for k, v in counts.items()}
    counts["by_kernel"] = device_time_table(events, steps)
    return counts


def device_time_table(events, steps=1, top=30):
    """[[name, launches per step, device µs per step, µs per launch], ...] of a profile's device events (kernels,
    copies, memsets) by name, the longest first (`top` of them): which kernels make a step's device time."""
    table = {}
    for e in events:
        time_range = getattr(e, "time_range", None)
        us = time_range.elapsed_us() if time_range is not None else 0.0
        row = table.setdefault(e.name, [0, 0.0])
        row[0] += 1
        row[1] += us
    rows = sorted(table.items(), key=lambda item: -item[1][1])[:top]
    return [[name[:90], round(n / steps, 2), round(us / steps, 1), round(us / n, 1) if n else 0.0]
            for name, (n, us) in rows]


def count_device_events(events):
    """{kernels, htod, dtoh, dtod, memset: how many; device_us: their summed durations} of a step's device events
    (the profiler's events with `name` and `time_range.elapsed_us()`). device_us against the step's wall time says
    what bounds the step: near it, the device's work; far below it, the host's (launch overhead, Python)."""
    kinds = {"kernels": 0, "htod": 0, "dtoh": 0, "dtod": 0, "memset": 0}
    busy = 0.0
    for e in events:
        n = e.name.lower()
        key = "htod" if "htod" in n else "dtoh" if "dtoh" in n else "dtod" if "dtod" in n or "memcpy" in n \
            else "memset" if "memset" in n else "kernels"
        kinds[key] += 1
        time_range = getattr(e, "time_range", None)
        if time_range is not None:
            busy += time_range.elapsed_us()
    kinds["device_us"] = round(busy, 1)
    return kinds


def host_profile(step, n, top=25):
    """Where a step's host time goes: cProfile over `n` calls, the `top` functions by their own time, as
    [function, calls per step, own µs per step] (a wait for the device shows as the time of the call that waits:
    `get`, `synchronize`), and the profiled ms per step (the profiler's overhead included)."""
    import cProfile
    import pstats

    profile = cProfile.Profile()
    profile.enable()
    for _ in range(n):
        step()
    profile.disable()
    rows = []
    for (filename, line, name), (_, calls, own, _, _) in pstats.Stats(profile).stats.items():
        where = filename.replace(os.sep, "/")
        for marker in ("/oneflow_compat/", "/kernels/", "/site-packages/", "/tests/"):
            if marker in where:
                where = where[where.index(marker) + 1:]
                break
        rows.append((own, calls, "%s:%d(%s)" % (where, line, name)))
    rows.sort(reverse=True)
    total = sum(r[0] for r in rows)
    categories = {}
    for own, calls, name in rows:
        c = categories.setdefault(host_category(name), [0.0, 0.0])
        c[0] += own
        c[1] += calls
    return {"profiled_ms_per_step": round(total / n * 1e3, 3),
            "top": [[name, round(calls / n, 1), round(own / n * 1e6, 1)] for own, calls, name in rows[:top]],
            "by_category": sorted(([c, round(own / n * 1e6, 1), round(calls / n, 1)]
                                   for c, (own, calls) in categories.items()), key=lambda row: -row[1])}


# (category, test on a host profile row's "file:line(function)") in order: the first that matches names the row
_HOST_CATEGORIES = (
    ("the fake device (tests/, a dry run)", lambda w: w.startswith("tests/")),
    ("kernel launches (kernels/cuda_source.py)", lambda w: w.startswith("kernels/cuda_source.py")),
    ("cuBLAS products (kernels/cuda_blas.py)", lambda w: w.startswith("kernels/cuda_blas.py")),
    ("CuPy reductions", lambda w: any(("method '%s' of 'cupy." % r) in w or ("(%s)" % r) in w and "cupy/" in w
                                      for r in ("sum", "mean", "max", "min", "prod", "any", "all", "argmax"))),
    ("CuPy allocations", lambda w: "cupy/_creation/basic.py" in w or "memory.alloc" in w or "malloc" in w),
    ("uploads (host -> device)", lambda w: "cupy._core.core.array" in w or "method 'set' of 'cupy." in w
     or "copy_from_host" in w or "cupy/_creation/from_data.py" in w),
    ("downloads, syncs (device -> host)", lambda w: "method 'get' of 'cupy." in w or "synchronize" in w
     or "devices.py" in w and "to_host" in w),
    ("CuPy other", lambda w: "cupy" in w),
    ("oneflow_compat/runtime", lambda w: w.startswith("oneflow_compat/runtime/")),
    ("oneflow_compat/ops", lambda w: w.startswith("oneflow_compat/ops/")),
    ("oneflow_compat other", lambda w: w.startswith("oneflow_compat/")),
    ("kernels other", lambda w: w.startswith("kernels/")),
    ("ctypes", lambda w: "ctypes" in w),
)


def host_category(where):
    """The category of a host profile row (`file:line(function)`, as `host_profile` names it)."""
    for name, test in _HOST_CATEGORIES:
        if test(where):
            return name
    return "python, numpy, builtins"


def _replay_ms(n):
    """The median time of the captured graph's launch and a wait for it alone (no feed, no download): the step's
    time on the GPU, what its host part adds to. Run last (each replay trains a step more)."""
    from oneflow_compat.framework import session as sess

    captured = [c.exe.captured for c in sess.default_session().compiled.values()
                if getattr(c.exe, "captured", None) and c.exe.captured.graph is not None]
    if not captured:
        return None
    step = captured[0]

    def replay():
        step.graph.launch(step.stream)
        step.stream.synchronize()

    return _median_ms(replay, n, warm=0 if FAKE else 2)


def _captured():
    """Whether every compiled job of the default session that asked for a CUDA graph holds one (a failed capture
    leaves none: it runs uncaptured), and why not."""
    from oneflow_compat.framework import session as sess

    captured = [c.exe.captured for c in sess.default_session().compiled.values()
                if getattr(c.exe, "captured", None)]
    return {"captured": bool(captured) and all(c.graph is not None and c.disabled is None for c in captured),
            "not_captured_because": [c.disabled for c in captured if c.disabled]}


# --- stage: models ---------------------------------------------------------------------------------------------
def stage_models(out):
    batch = int(os.environ.get("GPU_CHECK_BATCH", "100"))
    reps = 3 if FAKE else 20
    results = {}
    for model in ("mlp", "lenet"):
        r = results[model] = {"batch": batch}
        with device("cpu"):
            cpu_losses, cpu_weights, cpu_first, cpu_step = _train(model, batch, 3)
            r["cpu_ms"] = _median_ms(cpu_step, 2 if FAKE else 5, warm=1)
        for graph in (False, True):
            key = "gpu_graph" if graph else "gpu"

            def run_gpu(key=key, graph=graph):
                g = r[key] = {}
                with device("gpu", graph=graph) as fake:
                    losses, weights, first, step = _train(model, batch, 3)
                    g.update(_compare(losses, weights, cpu_losses, cpu_weights, first, cpu_first))
                    g["ms"] = _median_ms(step, reps)
                    if not graph:  # (kept beside g: the headline prints g whole)
                        r["gpu_host_profile"] = prof = host_profile(step, 2 if FAKE else 10)
                        say("ok", "%s gpu host profile" % model, "%s ms/step profiled; top: %s" % (
                            prof["profiled_ms_per_step"], json.dumps(prof["top"][:12])))
                        say("ok", "%s gpu host us per step by category" % model, json.dumps(prof["by_category"]))
                    if fake is not None:
                        import strict_device

                        L, S = strict_device.Launches, strict_device.Syncs
                        l0, s0, u0, n0 = L.count, S.total(), L.uploads, dict(L.by_name)
                        step()
                        g["per_step"] = {"launches": L.count - l0, "syncs": S.total() - s0, "uploads": L.uploads - u0}
                        by = {k: v - n0.get(k, 0) for k, v in L.by_name.items() if v != n0.get(k, 0)}
                        g["launches_by_kernel"] = sorted(([k, v] for k, v in by.items()), key=lambda kv: -kv[1])
                    else:
                        g["per_step"] = _profile_counts(step, 5)
                        g["by_kernel"] = g["per_step"].pop("by_kernel")
                        say("ok", "%s %s device us per step by kernel" % (model, key), json.dumps(g["by_kernel"]))
                    if graph:
                        g.update(_captured())
                        g["replay_ms"] = _replay_ms(1 if FAKE else reps)
                ok = g["matches_cpu"] and (not graph or g.get("captured"))
                say("ok" if ok else "failed", "%s %s" % (model, key), json.dumps(g, sort_keys=True))

            guarded(r, key, run_gpu)
        if not FAKE:
            def torch_part():
                import torch

                if not torch.cuda.is_available():
                    say("skipped", "%s torch" % model, "torch has no CUDA here")
                    return
                ts, fed = _torch_step(model, batch), _torch_step(model, batch, fed=True)
                # resident batch (the first runs' reference) and fed batch (uploaded each step, as ours), A B A B
                times = {"resident": [], "fed": []}
                for _ in range(3):
                    for label, fn in (("resident", ts), ("fed", fed)):
                        times[label].append(_median_ms(fn, 20, warm=3, sync=torch.cuda.synchronize))
                r["torch_cuda_eager_ms"] = statistics.median(times["resident"])
                r["torch_cuda_eager_fed_ms"] = statistics.median(times["fed"])
                r["torch_per_step"] = _profile_counts(ts, 5)
                r["torch_by_kernel"] = r["torch_per_step"].pop("by_kernel")
                for key in ("gpu", "gpu_graph"):
                    if "ms" in r.get(key, {}):
                        r[key]["vs_torch_eager"] = round(r[key]["ms"] / r["torch_cuda_eager_ms"], 3)
                        r[key]["vs_torch_eager_fed"] = round(r[key]["ms"] / r["torch_cuda_eager_fed_ms"], 3)
                say("ok", "%s torch" % model, "%s ms (batch resident), %s ms (batch fed from the host each step), %s"
                    % (r["torch_cuda_eager_ms"], r["torch_cuda_eager_fed_ms"], r["torch_per_step"]))
                say("ok", "%s torch device us per step by kernel" % model, json.dumps(r["torch_by_kernel"]))

            guarded(r, "torch", torch_part)
        write(out, "models", results)
    return results


# --- stage: graph ---------------------------------------------------------------------------------------------
def _gemm_cases(xp):
    """(name, a, b) operand pairs of the layouts the models' products take: plain, transposed views (the dense
    layers' gradients), F-ordered, batched with a broadcast weight (the convolutions), float64."""
    r = np.random.default_rng(0)

    def up(shape, dtype=np.float32):
        return xp.asarray(r.standard_normal(shape).astype(dtype))

    w = up((64, 800))
    return [("2d", up((100, 784)), up((784, 512))),
            ("a.T", up((512, 100)).T, up((512, 10))),
            ("b.T", up((100, 512)), up((10, 512)).T),
            ("f_order", xp.asfortranarray(up((100, 300))), up((300, 50))),
            ("batched_broadcast", w.reshape(1, 64, 800), up((100, 1, 800, 196))),
            ("batched_transposed", up((100, 1, 64, 196)), up((100, 1, 800, 196)).transpose(0, 1, 3, 2)),
            ("float64", up((33, 17), np.float64), up((17, 9), np.float64))]


def _gemm_capture(xp, results):
    """The project's GEMMs (kernels/cuda_blas.py) inside a stream capture, replayed after the operands changed:
    each product equals a fresh one, for every layout of `_gemm_cases`."""
    from oneflow_compat.kernels import cuda_blas

    cases = _gemm_cases(xp)
    s = xp.cuda.Stream(non_blocking=True)
    with s:
        eager = [cuda_blas.matmul(xp, a, b) for _, a, b in cases]  # (handle bound to the stream, workspace set)
        s.synchronize()
        s.begin_capture(xp.cuda.runtime.streamCaptureModeRelaxed)  # (the products' outputs allocated inside)
        products = [cuda_blas.matmul(xp, a, b) for _, a, b in cases]
        g = s.end_capture()
        for _, a, b in cases:
            a *= 2  # in place: the graph reads the same addresses
        g.launch()
        g.launch()  # (the fake device's first launch after its capture replays nothing: the capture ran it)
        s.synchronize()
    worst = {}
    for (name, a, b), product, before in zip(cases, products, eager):
        want = a.get().astype(np.float64) @ b.get().astype(np.float64)
        worst[name] = max(_rel(product.get(), want), _rel(before.get() * 2, want))
    ok = all(v < (1e-12 if "64" in k else 1e-5) for k, v in worst.items())
    results["gemm_capture_worst_rel_diff"] = worst
    say("ok" if ok else "failed", "captured gemms", "replay equals numpy after the operands changed: %s (%s)" % (
        ok, ", ".join("%s %.1e" % kv for kv in worst.items())))


def stage_graph(out):
    results = {}
    if not FAKE:
        def cupy_own():
            """CuPy's own products refuse a capture (expected, the reason for kernels/cuda_blas.py): noted."""
            import cupy

            s = cupy.cuda.Stream(non_blocking=True)
            with s:
                a = cupy.random.rand(256, 256, dtype=cupy.float32)
                s.begin_capture(cupy.cuda.runtime.streamCaptureModeRelaxed)
                try:
                    a @ a
                    results["cupy_own_cublas_in_capture"] = "allowed"
                except NotImplementedError as e:
                    results["cupy_own_cublas_in_capture"] = "refused: %s" % e
                finally:
                    try:
                        s.end_capture()
                    except Exception as e:  # noqa: BLE001 - an invalidated capture: said, not raised
                        results["cupy_own_end_capture"] = "%s: %s" % (type(e).__name__, e)
            say("ok", "cupy's own cuBLAS in a capture", results["cupy_own_cublas_in_capture"])

        guarded(results, "cupy_own", cupy_own)

        def gemms():
            import cupy

            from oneflow_compat.kernels import cuda_blas

            lib = cuda_blas.library(cupy)
            results["own_cublas"] = ("loaded %s" % lib.path) if lib is not None else \
                "unavailable: %s" % cuda_blas.unavailable_reason(cupy)
            say("ok" if lib is not None else "failed", "the project's cuBLAS handle", results["own_cublas"])
            _gemm_capture(cupy, results)

        guarded(results, "gemm_capture", gemms)
    else:
        def gemms():
            sys.path.insert(0, os.path.join(ROOT, "tests"))
            import strict_device

            _gemm_capture(strict_device.module(gpus=1), results)

        guarded(results, "gemm_capture", gemms)

    def captured_step(model):
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        import test_gpu_step_budget as budget

        schedule = ([1, 3], [0.1, 0.05, 0.02])  # the rate changes under the replays: a frozen one would show
        with device("cpu"):
            want = budget._steps(getattr(budget, model), 5, schedule=schedule)
        with device("gpu", graph=True):
            got = budget._steps(getattr(budget, model), 5, schedule=schedule)
            captured = _captured()
        same = _compare(got[0], got[1], want[0], want[1])["matches_cpu"]
        results["%s_captured" % model] = captured["captured"]
        results["%s_captured_equals_cpu" % model] = bool(same)
        if captured["not_captured_because"]:
            results["%s_not_captured_because" % model] = captured["not_captured_because"]
        say("ok" if same and captured["captured"] else "failed", "captured %s step" % model,
            "graph %s, equals CPU over 5 calls with a changing rate: %s%s" % (
                captured["captured"], same, "; not captured: %s" % captured["not_captured_because"]
                if captured["not_captured_because"] else ""))

    # (LeNet's captured step on the fake device is tests/test_cuda_graph.py's: the dry run keeps to its time)
    for model in ("mlp",) if FAKE else ("mlp", "lenet"):
        guarded(results, "captured_%s" % model, lambda model=model: captured_step(model))
    write(out, "graph", results)
    return results


# --- stage: nccl ----------------------------------------------------------------------------------------------
def stage_nccl(out):
    results = {}
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from oneflow_compat.comm import nccl_comm
    from oneflow_compat.comm.process_comm import SingleProcessComm

    def raw_one_rank():
        """CuPy's NCCL alone (none of this package): a 1-rank communicator's all-reduce, so that a failure below
        is told apart from a broken NCCL."""
        import cupy
        from cupy.cuda import nccl

        comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
        x = cupy.arange(1 << 20, dtype=cupy.float32)
        y = cupy.empty_like(x)
        stream = cupy.cuda.get_current_stream()
        comm.allReduce(x.data.ptr, y.data.ptr, x.size, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, stream.ptr)
        stream.synchronize()
        ok = bool((y == x).all().get())
        results["raw_one_rank_allreduce"] = ok
        say("ok" if ok else "failed", "nccl raw one rank", "CuPy's NcclCommunicator(1) all-reduce: %s" % ok)

    if FAKE:
        say("skipped", "nccl raw one rank", "a dry run has no NCCL")
    else:
        guarded(results, "raw_one_rank", raw_one_rank)

    def one_rank():
        if FAKE:
            from fake_nccl import FakeNccl

            xp, binding = np, FakeNccl()
        else:
            import cupy

            if not nccl_comm.available(cupy):
                say("skipped", "nccl one rank", "CuPy's NCCL is not available")
                return
            xp, binding = cupy, None
        import test_nccl_comm as t

        comm = nccl_comm.NcclComm(SingleProcessComm(), xp, binding, timeout=60)
        host = SingleProcessComm()
        done = []
        for name, body in sorted(t.COLLECTIVES.items()):
            if name == "subset":
                continue
            up = _Up(comm, xp)
            got, want = body(up, 0, 1), body(host, 0, 1)
            t._same(got, want)
            done.append(name)
        comm.close()
        results["one_rank_collectives"] = done
        say("ok", "nccl one rank", "%d collectives equal the process comm's" % len(done))

    guarded(results, "one_rank", one_rank)

    def over_mpi(n):
        import subprocess

        from oneflow_compat.comm import mpiexec_command

        mpiexec = mpiexec_command.find_mpiexec()
        if not mpiexec:
            say("skipped", "nccl %d ranks" % n, "no mpiexec")
            return
        # every rank's line is counted: every rank's output shown
        env = mpiexec_command.environment(mpiexec, dict(os.environ, NCCL_DEBUG=os.environ.get("NCCL_DEBUG", "WARN"),
                                                        ONEFLOW_COMPAT_OUTPUT="all"))
        done = subprocess.run(mpiexec_command.command(n, [sys.executable, "-m", "oneflow_compat.tools.gpu_stages",
                                                          "nccl_ranks"], mpiexec=mpiexec),
                              cwd=ROOT, capture_output=True, text=True, timeout=90, env=env)
        text = (done.stdout + done.stderr)[-3000:]
        oks = done.stdout.count("GPU_CHECK ok nccl ranks")
        results["mpi_%d_ranks" % n] = "rc %d, %d of %d ranks ok: %s" % (done.returncode, oks, n, text[-400:])
        gpus = _gpu_count()
        if oks == n:
            staged = "through MPI, staged" in done.stdout
            say("ok", "nccl %d ranks" % n, "every collective equals MPI's, %s" % (
                "through MPI staged from the GPU: NCCL refuses two ranks on one GPU (%d GPU(s))" % gpus if staged
                else "through NCCL bootstrapped over MPI"))
        elif n > gpus and not FAKE:
            say("skipped", "nccl %d ranks" % n, "%d GPU(s): NCCL refuses two ranks on one GPU (rc %d)"
                % (gpus, done.returncode))
        else:
            say("failed", "nccl %d ranks" % n, text[-600:])

    for n in (1, 2):
        guarded(results, "mpi_%d" % n, lambda n=n: over_mpi(n))
    write(out, "nccl", results)
    return results


class _Up:
    """A comm call with host arrays: they go up to `xp`, the results come down."""

    def __init__(self, comm, xp):
        self.comm, self.xp = comm, xp

    def __getattr__(self, method):
        xp = self.xp

        def up(a):
            if isinstance(a, np.ndarray):
                return xp.asarray(a)
            if isinstance(a, list) and a and isinstance(a[0], np.ndarray):
                return [xp.asarray(p) for p in a]
            return a

        def down(a):
            if a is None:
                return None
            if isinstance(a, list):
                return [down(p) for p in a]
            return a.get() if hasattr(a, "get") else np.asarray(a)

        def call(*args, **kwargs):
            return down(getattr(self.comm, method)(*[up(a) for a in args], **kwargs))
        return call


def _gpu_count():
    if FAKE:
        return 1
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001
        return 0


def stage_nccl_ranks():
    """One MPI rank of the NCCL check (under mpiexec): rank r on GPU r % count, every collective over the world."""
    from oneflow_compat.comm import nccl_comm, world

    host = world.get_process_comm()
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import test_nccl_comm as t

    if FAKE:
        # a dry run: the fake NCCL, every process on "GPU 0" as on a one-GPU machine, so that ranks > 1 take the
        # route a one-GPU machine takes (through MPI), and 1 rank the fake's NCCL
        from fake_nccl import FakeNccl

        xp, binding = np, FakeNccl()
    else:
        import cupy

        cupy.cuda.Device(host.rank % cupy.cuda.runtime.getDeviceCount()).use()
        xp, binding = cupy, None
    comm = nccl_comm.NcclComm(host, xp, binding, timeout=60)
    k = host.size
    for name, body in sorted(t.COLLECTIVES.items()):
        if name == "subset" and k < 2:
            continue
        got = body(_Up(comm, xp), host.rank, k)
        want = body(host, host.rank, k)
        t._same(got, want)
    comm.close()
    # with fewer GPUs than ranks, NCCL refuses the world (two ranks on one GPU): its collectives went through MPI,
    # staged, and must still equal MPI's; the line says which way they went
    why = comm.routes.get(tuple(range(k)))
    how = "through NCCL" if why is None else "through MPI, staged: no NCCL, %s" % why
    say("ok", "nccl ranks", "rank %d of %d: every collective equals MPI's (%s)" % (host.rank, k, how))


# --- stage: validate ------------------------------------------------------------------------------------------
# the op types whose GPU path runs the project's own CUDA kernels (kernels/cuda_*.py) or the models' fused ops:
# checked first, so that a stage stopped at its time limit has checked them
CUDA_FIRST = ("conv2d", "conv2d_bias_act", "conv2d_grad_input", "conv2d_grad_weight", "max_pool2d", "max_pool2d_grad",
              "max_pool2d_relu_grad", "avg_pool2d", "avg_pool2d_grad", "bias_add", "relu", "relu_grad", "matmul",
              "matmul_bias_act", "matmul_relu_grad", "sparse_softmax_cross_entropy",
              "sparse_softmax_cross_entropy_grad", "sparse_softmax_cross_entropy_and_grad", "dropout", "dropout_grad",
              "optimizer_update", "matmul_sgd_update", "reduce_sum_sgd_update",
              # kernels/cuda_scatter.py: the scatter-multiply and the ordered scatter-adds of gradients
              "dim_scatter_mul", "dim_scatter_mul_src_grad", "dim_scatter_add", "gather_grad", "unsorted_segment_sum",
              "reflection_pad2d_grad", "replication_pad2d_grad", "upsample_grad")


def first_the_cuda_kernels(types):
    """`types` with those of CUDA_FIRST (that exist) first, in that order; the others as they were."""
    present = set(types)
    head = [t for t in CUDA_FIRST if t in present]
    return head + [t for t in types if t not in set(head)]


def stage_validate(out):
    """`validate --device gpu` one op type at a time: each op's line as soon as it is checked (its failures first),
    and validate.json rewritten after each, so that a stage stopped at its time limit still says how far it came
    and what failed (the command line's table comes only at the end)."""
    from oneflow_compat.backend import devices as device_switch
    from oneflow_compat.tools import validate

    with device("gpu"):
        if not FAKE:
            try:
                device_switch.require_cuda()
            except device_switch.CudaUnavailableError as e:
                say("failed", "validate", "--device gpu: %s" % e)
                return 2
        xp = device_switch.array_module("gpu")
        types = first_the_cuda_kernels(validate.ops_with_signatures())
        total, failures, slowest = 0, [], []
        for k, op_type in enumerate(types, 1):
            start = time.perf_counter()
            checks = validate.validate_all([op_type], validate.DEVICES, xp)
            seconds = time.perf_counter() - start
            bad = [str(c) for c in checks if not c.ok]
            for line in bad:
                print(line, flush=True)
            total += len(checks)
            failures += bad
            slowest = sorted(slowest + [(round(seconds, 2), op_type)], reverse=True)[:10]
            print("validate %s: %d checks, %d failed (%.2f s)" % (op_type, len(checks), len(bad), seconds), flush=True)
            write(out, "validate", {"op_types_done": k, "op_types": len(types), "checks": total,
                                    "failed": len(failures), "failures": failures[:60], "slowest_op_types": slowest})
    print("%d checks, %d failed" % (total, len(failures)), flush=True)
    return 1 if failures else 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m oneflow_compat.tools.gpu_stages")
    ap.add_argument("stage", choices=("models", "graph", "nccl", "nccl_ranks", "validate"))
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    if a.stage == "nccl_ranks":
        stage_nccl_ranks()
        return 0
    if a.stage == "validate":
        return stage_validate(a.out)
    results = {"models": stage_models, "graph": stage_graph, "nccl": stage_nccl}[a.stage](a.out)
    failed = [k for k in results if k.endswith("_error")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
