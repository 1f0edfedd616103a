"""MLP train step (784-512-10, batch 100, SGD): oneflow_compat vs a hand-written numpy step vs PyTorch eager (CPU),
measured in one run; prints time ratios and the framework's overhead per op per step.

    python benchmarks/bench_mlp.py [--steps 200] [--devices 1]
"""
import argparse
import time

import numpy as np

import oneflow_compat as flow
import oneflow_compat.typing as tp

B, IN, HID, OUT, LR = 100, 784, 512, 10, 0.1


def data(seed=0):
    r = np.random.default_rng(seed)
    return r.random((B, IN), dtype=np.float32), r.integers(0, OUT, B).astype(np.int32)


def weights():
    r = np.random.default_rng(1)
    return {"dense1-weight": (r.standard_normal((HID, IN)) * 0.05).astype(np.float32),
            "dense1-bias": np.zeros(HID, np.float32),
            "dense2-weight": (r.standard_normal((OUT, HID)) * 0.05).astype(np.float32),
            "dense2-bias": np.zeros(OUT, np.float32)}


def framework_step(devices):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((B, IN)), labels: tp.Numpy.Placeholder((B,), dtype=flow.int32)
                  ) -> tp.Numpy:
        h = flow.layers.dense(images, HID, activation=flow.nn.relu, name="dense1")
        logits = flow.layers.dense(h, OUT, name="dense2")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [LR]), momentum=0).minimize(loss)
        return loss

    flow.load_variables(weights())
    x, y = data()
    return lambda: train_job(x, y)


def numpy_step():
    w = {k: v.copy() for k, v in weights().items()}
    x, y = data()
    onehot = np.zeros((B, OUT), np.float32)
    onehot[np.arange(B), y] = 1

    def step():
        w1, b1, w2, b2 = w["dense1-weight"], w["dense1-bias"], w["dense2-weight"], w["dense2-bias"]
        h = np.maximum(x @ w1.T + b1, 0)
        z = h @ w2.T + b2
        e = np.exp(z - z.max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)
        loss = -np.log(np.maximum(p[np.arange(B), y], 1e-20))
        dz = (p - onehot) / B
        dw2, db2 = dz.T @ h, dz.sum(0)
        dh = (dz @ w2) * (h > 0)
        dw1, db1 = dh.T @ x, dh.sum(0)
        w1 -= LR * dw1
        b1 -= LR * db1
        w2 -= LR * dw2
        b2 -= LR * db2
        return loss

    return step


def torch_step():
    import torch

    w = {k: torch.tensor(v, requires_grad=True) for k, v in weights().items()}
    x, y = (torch.from_numpy(a) for a in data())
    y = y.long()
    opt = torch.optim.SGD(list(w.values()), lr=LR)

    def step():
        opt.zero_grad()
        h = torch.relu(x @ w["dense1-weight"].T + w["dense1-bias"])
        z = h @ w["dense2-weight"].T + w["dense2-bias"]
        loss = torch.nn.functional.cross_entropy(z, y, reduction="none")
        loss.mean().backward()
        opt.step()
        return loss.detach().numpy()

    return step


def interleaved(fns, steps, rounds=7):
    """Best per-step time of each function, measured in alternating rounds so that the machine's load drifts
    affect all of them alike (ratios are the result, absolute times are noise)."""
    for fn in fns:
        for _ in range(5):
            fn()
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for k, fn in enumerate(fns):
            t = time.perf_counter()
            for _ in range(steps):
                fn()
            best[k] = min(best[k], (time.perf_counter() - t) / steps)
    return best


def kernels_only(job_name):
    """The same kernels the compiled job calls, back to back, on the last call's registers."""
    from oneflow_compat.framework import session as sess

    c = sess.default_session().compiled[job_name]
    raw = [(fn, [c.regs[i] for i in ins]) for fn, ins in (x for x in c.calls if x is not None)]

    def run():
        for fn, args in raw:
            fn(*args)

    return run, len(raw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--devices", type=int, default=1)
    a = ap.parse_args()
    f = framework_step(a.devices)
    f()
    raw, n_kernels = kernels_only("train_job")
    fns, names = [f, raw, numpy_step()], ["oneflow_compat", "kernels", "numpy"]
    try:
        import torch  # noqa: F401

        fns.append(torch_step())
        names.append("torch")
    except ImportError:
        pass
    t = dict(zip(names, interleaved(fns, a.steps)))
    print("MLP 784-512-10, batch %d, SGD, %d device(s)" % (B, a.devices))
    print("  oneflow_compat step : %8.3f ms" % (t["oneflow_compat"] * 1e3))
    print("  numpy step          : %8.3f ms   ratio oneflow_compat/numpy = %.3f (target <= 1.2)" % (
        t["numpy"] * 1e3, t["oneflow_compat"] / t["numpy"]))
    if "torch" in t:
        print("  torch eager step    : %8.3f ms   ratio oneflow_compat/torch = %.3f (target < 1.0)" % (
            t["torch"] * 1e3, t["oneflow_compat"] / t["torch"]))
    else:
        print("  torch not installed: no PyTorch comparison")
    print("  same kernels called back to back: %.3f ms (the rest is feeding, fetching, fresh output buffers)" % (
        t["kernels"] * 1e3))
    print("  framework overhead  : %.2f us per op per step (target <= 3 us)" % tiny_overhead(a.devices))


def tiny_overhead(devices):
    """The framework's own cost per op: the same job on a tiny model (batch 2, 8-8-4), whose kernels cost only
    numpy's call overhead, timed whole and as its kernels alone; the difference per kernel step."""
    global B, IN, HID, OUT
    saved = B, IN, HID, OUT
    B, IN, HID, OUT = 2, 8, 8, 4
    try:
        f = framework_step(devices)
        f()
        raw, n = kernels_only("train_job")
        t_call, t_raw = interleaved([f, raw], 2000)
        return (t_call - t_raw) / n * 1e6
    finally:
        B, IN, HID, OUT = saved


if __name__ == "__main__":
    main()
