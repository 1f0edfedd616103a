"""MLP train step (784-512-10, batch 100, SGD): oneflow_compat vs a hand-written numpy step vs PyTorch eager (CPU),
timed in turn in one process (benchmarks/harness.py); also the framework's own overhead on a tiny job.

    python benchmarks/bench_mlp.py [--rounds 7] [--threads 1 2] [--quick]
"""
import os
import sys

import numpy as np

import oneflow_compat as flow
import oneflow_compat.typing as tp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

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


def _define_job(name, b, n_in, hid, out, prefix=""):
    def job(images: tp.Numpy.Placeholder((b, n_in)), labels: tp.Numpy.Placeholder((b,), dtype=flow.int32)
            ) -> tp.Numpy:
        h = flow.layers.dense(images, hid, activation=flow.nn.relu, name=prefix + "dense1")
        logits = flow.layers.dense(h, out, name=prefix + "dense2")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [LR]), momentum=0).minimize(loss)
        return loss

    job.__name__ = name
    return flow.global_function(type="train")(job)


def framework_steps():
    """One session with the MLP train job ("train_job", the hand-written step's weights) and the same job on a
    tiny model ("tiny_job", batch 2, 8-8-4, its variables named "tiny-..."); returns their step functions."""
    flow.clear_default_session()
    flow.config.cpu_device_num(1)
    big = _define_job("train_job", B, IN, HID, OUT)
    tiny = _define_job("tiny_job", 2, 8, 8, 4, prefix="tiny-")
    flow.load_variables(weights())
    x, y = data()
    r = np.random.default_rng(2)
    tx, ty = r.random((2, 8), dtype=np.float32), r.integers(0, 4, 2).astype(np.int32)
    return (lambda: big(x, y)), (lambda: tiny(tx, ty))


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


def kernels_only(job_name, step):
    """The same kernels the compiled job calls, back to back, on the registers of a call of `step`."""
    from oneflow_compat.framework import session as sess

    c = sess.default_session().compiled[job_name].plan
    c.release = False  # keep the registers of the next call, to call its kernels on them
    step()
    raw = [(fn, [c.regs[i] for i in ins]) for fn, ins in (x for x in c.kernel_calls if x is not None)]

    def run():
        for fn, args in raw:
            fn(*args)

    return run, len(raw)


def cases(quick=False):
    steps = 10 if quick else 40
    made = {}

    def session():
        # both cases' jobs live in one session, made when the first of them is measured
        if not made:
            ours, tiny = framework_steps()
            ours(), tiny()
            made.update(ours=ours, tiny=tiny, raw=kernels_only("train_job", ours)[0],
                        tiny_raw=kernels_only("tiny_job", tiny))
        return made

    def main_sides():
        s = session()
        sides = [("numpy", numpy_step()), ("oneflow_compat", s["ours"]), ("its kernels alone", s["raw"])]
        try:
            import torch  # noqa: F401

            sides.append(("torch", torch_step()))
        except ImportError:
            pass
        return sides

    pairs = [("oneflow_compat", "numpy"), ("its kernels alone", "numpy"), ("oneflow_compat", "torch")]
    try:
        import torch  # noqa: F401
    except ImportError:
        pairs = pairs[:2]
    # the framework's own cost: on a tiny model (batch 2, 8-8-4) the kernels cost only numpy's call overhead, so
    # (whole call - kernels alone) / kernel steps is the overhead per op
    return [harness.Case("mlp", "MLP 784-512-10 train step, batch %d" % B, main_sides, steps,
                         target={("oneflow_compat", "numpy"): 1.0}, pairs=pairs,
                         note="its kernels alone: the kernels of the compiled MLP step called back to back"),
            harness.Case("mlp", "tiny 8-8-4 job: framework overhead",
                         lambda: [("kernels alone", session()["tiny_raw"][0]), ("whole job call", session()["tiny"])],
                         steps * 20)]


if __name__ == "__main__":
    harness.main_for(cases, __doc__.splitlines()[0])
