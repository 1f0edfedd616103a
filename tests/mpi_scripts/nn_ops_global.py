"""The nn ops family's modules and functional forms on global tensors, on every rank of the world
(tests/test_nn_ops_global_mpi.py runs it under `mpiexec -n 2`): for each case, its inputs laid out as the case says
(split along the batch, along another axis, or broadcast) and its parameters broadcast, the outputs, the input
gradients and the parameter gradients must equal what every rank computes alone on local tensors.

Rank 0 prints `OK <case> <layout>` per case and layout; any difference raises (ending the job). Arguments name the
families to run (default: all)."""
import sys

import numpy as np

import oneflow_compat as flow
from oneflow_compat.runtime import global_eager

world = global_eager.world_size()
P = flow.placement("cpu", list(range(world)))
B = flow.sbp.broadcast
nn, F = flow.nn, flow.nn.functional


def _sbp(axis):
    return B if axis is None else flow.sbp.split(axis)


def _fresh(make):
    """Two modules with the same state: one local (the reference), one to be made global."""
    flow.manual_seed(7)
    local = make()
    other = make()
    if isinstance(local, nn.Module):
        other.load_state_dict(local.state_dict())
        other.to_global(P, B)
    return local, other


def _run(fn, xs, layouts, rs):
    ts = []
    for x, axis in zip(xs, layouts):
        grad = x.dtype.kind == "f"
        if axis == "local":
            ts.append(flow.tensor(x, requires_grad=grad))
        else:
            ts.append(flow.tensor(x, placement=P, sbp=_sbp(axis), requires_grad=grad))
    out = fn(*ts)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    loss = None
    for o, r in zip(outs, rs):
        if not o.dtype.is_floating or not o.requires_grad:
            continue
        rt = flow.tensor(r) if o.is_local else flow.tensor(r, placement=P, sbp=B)
        term = (o * rt).sum()
        loss = term if loss is None else loss + term
    if loss is not None:
        loss.backward()
    grads = [t.grad.numpy() if t.grad is not None else None for t in ts if t.dtype.is_floating]
    return [o.numpy() for o in outs], grads


def _params(m):
    return [(n, p) for n, p in m.named_parameters()] if isinstance(m, nn.Module) else []


def check(name, make, xs, layouts_list, rtol=1e-5, call=None):
    xs = [np.asarray(x) for x in xs]
    for layouts in layouts_list:
        local, glob = _fresh(make)
        f_local = (lambda *a: call(local, *a)) if call else local
        f_glob = (lambda *a: call(glob, *a)) if call else glob
        probe, _ = _fresh(make)  # (a module of its own: a training forward updates running statistics)
        rs = _weights((lambda *a: call(probe, *a)) if call else probe, xs)
        ref_outs, ref_grads = _run(f_local, xs, ["local"] * len(xs), rs)
        local_pgrads = [p.grad.numpy() if p.grad is not None else None for _, p in _params(local)]
        outs, grads = _run(f_glob, xs, layouts, rs)
        for k, (a, b) in enumerate(zip(outs, ref_outs)):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * 1e-2,
                                       err_msg="%s %s output %d" % (name, layouts, k))
        for k, (a, b) in enumerate(zip(grads, ref_grads)):
            if b is None:
                assert a is None, "%s %s: input %d has a gradient on the global side only" % (name, layouts, k)
                continue
            np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * 1e-2,
                                       err_msg="%s %s input grad %d" % (name, layouts, k))
        for (pname, p), b in zip(_params(glob), local_pgrads):
            assert p.is_global and p.sbp == (B,), "%s: parameter %s is %s" % (name, pname, p.sbp)
            if b is None:
                continue
            np.testing.assert_allclose(p.grad.numpy(), b, rtol=rtol, atol=rtol * 1e-2,
                                       err_msg="%s %s parameter %s grad" % (name, layouts, pname))
        if isinstance(glob, nn.Module):  # running statistics and other buffers evolve alike
            for (bname, a), (_, b) in zip(glob.named_buffers(), local.named_buffers()):
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=rtol, atol=rtol * 1e-2,
                                           err_msg="%s %s buffer %s" % (name, layouts, bname))
        if global_eager.rank() == 0:
            print("OK", name, layouts, flush=True)


def _weights(fn, xs):
    """The loss weights of a case, from its local outputs' shapes (fixed seed)."""
    with flow.no_grad():
        out = fn(*[flow.tensor(x) for x in xs])
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    rng = np.random.default_rng(12345)
    return [rng.uniform(0.5, 1.5, tuple(o.shape)).astype(o.dtype.np) * rng.choice([-1, 1], tuple(o.shape))
            .astype(o.dtype.np) if o.dtype.is_floating else None for o in outs]


def _x(*shape, seed=0, scale=2.0):
    return (np.random.default_rng(seed).uniform(-scale, scale, shape)).astype(np.float64)


def activations():
    x = _x(5, 3, 4)
    for name, make in [("ReLU6", lambda: nn.ReLU6()), ("ELU", lambda: nn.ELU(0.5)),
                       ("Hardsigmoid", lambda: nn.Hardsigmoid()), ("Hardswish", lambda: nn.Hardswish()),
                       ("Hardtanh", lambda: nn.Hardtanh()), ("Mish", lambda: nn.Mish()), ("SiLU", lambda: nn.SiLU()),
                       ("Softplus", lambda: nn.Softplus(beta=2)), ("LogSigmoid", lambda: nn.LogSigmoid()),
                       ("GELU", lambda: nn.GELU()), ("GELU_tanh", lambda: nn.GELU("tanh")),
                       ("LeakyReLU", lambda: nn.LeakyReLU(0.1)), ("Softmax", lambda: nn.Softmax(1)),
                       ("LogSoftmax", lambda: nn.LogSoftmax(2)), ("Sigmoid", lambda: nn.Sigmoid()),
                       ("Tanh", lambda: nn.Tanh())]:
        check(name, make, [x], [[0], [1]])
    check("PReLU", lambda: nn.PReLU(3, 0.1), [x.astype(np.float32)], [[0], [1], [None]], rtol=1e-5)


def losses():
    rng = np.random.default_rng(3)
    p, t = rng.uniform(0.05, 0.95, (5, 4)), rng.uniform(0.05, 0.95, (5, 4))
    x, y = _x(5, 4, seed=1), _x(5, 4, seed=2)
    for name, make, xs in [("BCELoss", lambda: nn.BCELoss(), [p, t]),
                           ("BCEWithLogitsLoss", lambda: nn.BCEWithLogitsLoss(reduction="sum"), [x, t]),
                           ("L1Loss", lambda: nn.L1Loss(), [x, y]), ("MSELoss", lambda: nn.MSELoss(), [x, y]),
                           ("SmoothL1Loss", lambda: nn.SmoothL1Loss(beta=0.5), [x, y]),
                           ("KLDivLoss", lambda: nn.KLDivLoss(reduction="batchmean"), [np.log(p), t])]:
        check(name, make, xs, [[0, 0], [1, 1]])
    check("MarginRankingLoss", lambda: nn.MarginRankingLoss(0.2), [x[:, 0], y[:, 0], np.sign(x[:, 1])],
          [[0, 0, 0], [None, None, None]])
    check("TripletMarginLoss", lambda: nn.TripletMarginLoss(), [x, y, _x(5, 4, seed=4)], [[0, 0, 0], [1, 1, 1]])
    logp = np.log(p / p.sum(1, keepdims=True))
    labels = rng.integers(0, 4, 5).astype(np.int64)
    labels[1] = -100
    check("NLLLoss", lambda: nn.NLLLoss(), [logp, labels], [[0, 0]])
    cos = rng.uniform(-0.9, 0.9, (5, 7))
    classes = rng.integers(0, 7, 5).astype(np.int64)
    check("CombinedMarginLoss", lambda: nn.CombinedMarginLoss(1.0, 0.4, 0.1), [cos, classes], [[0, 0], [1, None]])


def norms():
    # float32, as the modules' parameters (float32 sums in another order: 1e-4)
    x4 = _x(6, 4, 3, 2, seed=5).astype(np.float32)
    x2 = _x(5, 4, seed=6).astype(np.float32)
    for name, make, xs, layouts in [
            ("BatchNorm2d", lambda: nn.BatchNorm2d(4), [x4], [[0], [1], [2]]),
            ("BatchNorm1d", lambda: nn.BatchNorm1d(4, momentum=0.3), [x2], [[0], [1]]),
            ("BatchNorm2d_eval", lambda: nn.BatchNorm2d(4).eval(), [x4], [[0], [1]]),
            ("LayerNorm", lambda: nn.LayerNorm((3, 2)), [x4], [[0], [1], [2]]),
            ("GroupNorm", lambda: nn.GroupNorm(2, 4), [x4], [[0], [1]]),
            ("InstanceNorm2d", lambda: nn.InstanceNorm2d(4, affine=True), [x4], [[0], [1]])]:
        check(name, make, xs, layouts, rtol=1e-4)


def convs():
    for name, make, shape in [
            ("Conv1d", lambda: nn.Conv1d(4, 6, 3, padding=1, groups=2), (5, 4, 7)),
            ("Conv2d", lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1), (5, 3, 6, 5)),
            ("Conv3d", lambda: nn.Conv3d(2, 3, 2), (3, 2, 3, 4, 3)),
            ("ConvTranspose2d", lambda: nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1),
             (5, 3, 3, 4))]:
        check(name, make, [_x(*shape, seed=7).astype(np.float32)], [[0], [1], [None]], rtol=1e-4)


def pools():
    x4 = np.random.default_rng(8).permutation(5 * 3 * 7 * 6).reshape(5, 3, 7, 6) * 0.05
    for name, make, x in [
            ("MaxPool2d", lambda: nn.MaxPool2d(3, 2, 1, dilation=1), x4),
            ("AvgPool2d", lambda: nn.AvgPool2d(3, 2, 1), x4),
            ("AdaptiveAvgPool2d", lambda: nn.AdaptiveAvgPool2d((2, 3)), x4),
            ("MaxPool1d", lambda: nn.MaxPool1d(2), x4[:, :, :, 0]),
            ("AvgPool3d", lambda: nn.AvgPool3d(2, ceil_mode=True), x4.reshape(5, 3, 7, 3, 2))]:
        check(name, make, [x], [[0], [1]])


def misc():
    idx = np.random.default_rng(9).integers(0, 7, (5, 3)).astype(np.int64)
    check("Embedding", lambda: nn.Embedding(7, 4, padding_idx=1), [idx], [[0], [1], [None]])
    x4 = _x(5, 8, 3, 4, seed=10)
    for name, make in [("PixelShuffle", lambda: nn.PixelShuffle(2)),
                       ("Upsample", lambda: nn.Upsample(scale_factor=2, mode="bilinear")),
                       ("ReflectionPad2d", lambda: nn.ReflectionPad2d((1, 2, 0, 1))),
                       ("ReplicationPad2d", lambda: nn.ReplicationPad2d(1))]:
        check(name, make, [x4], [[0], [1]])


FAMILIES = {"activations": activations, "losses": losses, "norms": norms, "convs": convs, "pools": pools,
            "misc": misc}

if __name__ == "__main__":
    for family in (sys.argv[1:] or list(FAMILIES)):
        FAMILIES[family]()
    if global_eager.rank() == 0:
        print("DONE", flush=True)
