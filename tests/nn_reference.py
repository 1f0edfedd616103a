"""What the nn ops family's tests share: running a function of blobs through a legacy job (forward, and the gradient
of Σ out · r on 1 or N devices), running a function of tensors eagerly, and the same function in PyTorch, with the
tolerances the issues ask for (rtol 1e-5 in float64 and 1e-4 in float32 against PyTorch).

`legacy(body, inputs, devices, splits)` and `eager(fn, inputs)` return (outputs, gradients of every floating input)
for the loss Σ_k Σ(out_k · r_k) with the fixed weights `weights(outs)`; `torch_ref(fn, inputs, rs)` the same in
torch (float64 or float32 as the inputs), so a test compares three independent computations of one thing.
"""
import os
import sys

import numpy as np

import oneflow_compat as flow

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gradcheck as gc  # noqa: E402

RTOL = {np.dtype(np.float64): 1e-5, np.dtype(np.float32): 1e-4}


def tol(dtype):
    return RTOL[np.dtype(dtype)]


def weights(outs):
    """Fixed random loss weights, one array per output (|r| in [0.5, 1.5], random signs)."""
    rng = np.random.default_rng(12345)
    return [(rng.uniform(0.5, 1.5, o.shape) * rng.choice([-1.0, 1.0], o.shape)).astype(o.dtype) for o in outs]


def legacy(body, inputs, devices=1, splits=None, wrt=None, n_outputs=1):
    """(outputs, grads) of `body(*blobs)` (returning `n_outputs` blobs) in a legacy train job on `devices` devices,
    each input a placeholder split along `splits[i]` (None: broadcast); gradients of the floating inputs (or `wrt`)
    through `flow.watch_diff`."""
    inputs = [np.asarray(x) for x in inputs]

    def run(blobs):
        out = body(*blobs)
        return list(out) if isinstance(out, (list, tuple)) else [out]

    case = gc.Case("nn_reference", inputs, body=run, wrt=wrt, splits=splits, n_outputs=n_outputs)
    fwd = gc.forward_job(case)
    outs = [np.asarray(o) for o in fwd(tuple(inputs))]
    rs = weights(outs)
    got_outs, grads = gc.framework_grads(case, list(range(len(outs))), rs, devices, splits)
    return got_outs, grads, rs


def predict(body, inputs, devices=1, splits=None, n_outputs=1):
    """The `n_outputs` outputs of `body(*blobs)` in a legacy predict job (for outputs without a gradient)."""
    inputs = [np.asarray(x) for x in inputs]

    def run(blobs):
        out = body(*blobs)
        return list(out) if isinstance(out, (list, tuple)) else [out]

    case = gc.Case("nn_reference", inputs, body=run, wrt=[], splits=splits, n_outputs=n_outputs)
    fwd = gc.forward_job(case, devices)
    return [np.asarray(o) for o in fwd(tuple(inputs))]


def eager(fn, inputs, rs=None, wrt=None):
    """(outputs, grads) of `fn(*tensors)` on local tensors; the loss weights default to `weights(outputs)`."""
    ts = [flow.tensor(np.asarray(x), requires_grad=np.asarray(x).dtype.kind == "f" and (wrt is None or i in wrt))
          for i, x in enumerate(inputs)]
    out = fn(*ts)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    arrays = [o.numpy() for o in outs]
    rs = weights(arrays) if rs is None else rs
    loss = None
    for o, r in zip(outs, rs):
        if o.dtype.is_floating and o.requires_grad:
            term = (o * flow.tensor(r)).sum()
            loss = term if loss is None else loss + term
    grads = []
    if loss is not None:
        loss.backward()
    for t in ts:
        if t.requires_grad:
            grads.append(t.grad.numpy() if t.grad is not None else np.zeros(t.shape, t.dtype.np))
    return arrays, grads, rs


def torch_ref(fn, inputs, rs, wrt=None):
    """(outputs, grads) of `fn(*torch tensors)` for the loss Σ out · r."""
    import torch

    ts = [torch.tensor(np.asarray(x), requires_grad=np.asarray(x).dtype.kind == "f" and (wrt is None or i in wrt))
          for i, x in enumerate(inputs)]
    out = fn(*ts)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    loss = sum((o * torch.tensor(r)).sum() for o, r in zip(outs, rs) if o.requires_grad)
    if isinstance(loss, torch.Tensor):
        loss.backward()
    grads = [t.grad.numpy() if t.grad is not None else np.zeros(t.shape, np.asarray(x).dtype)
             for t, x in zip(ts, inputs) if t.requires_grad]
    return [o.detach().numpy() for o in outs], grads


def assert_close(got, want, dtype, what=""):
    assert len(got) == len(want), "%s: %d arrays vs %d" % (what, len(got), len(want))
    for k, (a, b) in enumerate(zip(got, want)):
        b = np.asarray(b)
        if b.shape == () and np.shape(a) == (1,):
            b = b.reshape(1)  # a legacy reduction over every axis gives shape (1,), as in OneFlow
        assert tuple(np.shape(a)) == tuple(b.shape), "%s[%d]: shape %s vs %s" % (what, k, np.shape(a), b.shape)
        t = tol(dtype)
        scale = float(np.max(np.abs(b))) if b.size else 0.0
        np.testing.assert_allclose(a, b, rtol=t, atol=t * max(scale, 1e-3), err_msg="%s[%d]" % (what, k))
