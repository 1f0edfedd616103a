"""Higher-order gradients (`autograd.grad(..., create_graph=True)`) through the ops that refused them before:
the activations (gelu, silu, elu, ...), the unary math functions, convolutions, pooling, layer and batch
normalization, softmax / log_softmax, reductions, the losses of gradient-penalty training, resampling, padding
and layout casts. Each case takes g = d f / d x recorded, then d Σ g² / d x, against PyTorch (skipped without it);
the gradient rules of the gradient ops themselves are checked by central differences in
tests/test_gradcheck_all_ops.py."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import autograd

F = flow.nn.functional


def _rand(*shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float64)


# name -> f(lib, F, x) for x of shape (3, 4): the same code runs on flow and torch
CASES = {
    "gelu": lambda lib, F, x: F.gelu(x),
    "gelu_tanh": lambda lib, F, x: F.gelu(x, approximate="tanh"),
    "silu": lambda lib, F, x: F.silu(x),
    "elu": lambda lib, F, x: F.elu(x, 0.7),
    "celu": lambda lib, F, x: F.celu(x, 1.3),
    "selu": lambda lib, F, x: F.selu(x),
    "softplus": lambda lib, F, x: F.softplus(x, beta=2.0),
    "mish": lambda lib, F, x: F.mish(x),
    "hardswish": lambda lib, F, x: F.hardswish(x * 2),
    # (torch has no double backward of hardsigmoid: its reference is relu6(x + 3) / 6)
    "hardsigmoid": lambda lib, F, x: (F.hardsigmoid(x * 4) if lib is flow else F.relu6(x * 4 + 3) / 6) * x,
    "hardtanh": lambda lib, F, x: F.hardtanh(x) * x,
    "relu6": lambda lib, F, x: F.relu6(x * 4) * x,
    "logsigmoid": lambda lib, F, x: F.logsigmoid(x),
    "softsign": lambda lib, F, x: F.softsign(x),
    "leaky_relu": lambda lib, F, x: F.leaky_relu(x, 0.2) * x,
    "softmax": lambda lib, F, x: F.softmax(x, dim=1) * lib.arange(4.0, dtype=x.dtype),
    "log_softmax": lambda lib, F, x: F.log_softmax(x, dim=1) * F.softmax(x, dim=0),
    "erf": lambda lib, F, x: lib.erf(x),
    "erfc": lambda lib, F, x: lib.erfc(x),
    "tan": lambda lib, F, x: lib.tan(x * 0.5),
    "sinh": lambda lib, F, x: lib.sinh(x),
    "cosh": lambda lib, F, x: lib.cosh(x),
    "asin": lambda lib, F, x: lib.asin(x * 0.3),
    "acos": lambda lib, F, x: lib.acos(x * 0.3),
    "atan": lambda lib, F, x: lib.atan(x),
    "asinh": lambda lib, F, x: lib.asinh(x),
    "acosh": lambda lib, F, x: lib.acosh(x * x + 1.5),
    "atanh": lambda lib, F, x: lib.atanh(x * 0.3),
    "erfinv": lambda lib, F, x: lib.erfinv(lib.tanh(x) * 0.8),
    "abs": lambda lib, F, x: lib.abs(x) * x,
    "clamp": lambda lib, F, x: lib.clamp(x, -0.5, 0.5) * x,
    "maximum": lambda lib, F, x: lib.maximum(x, x * 0.5) ** 2,
    "where": lambda lib, F, x: lib.where(x > 0, x ** 3, x * x),
    "max_dim": lambda lib, F, x: x.max(1)[0] ** 3,
    "amax": lambda lib, F, x: lib.amax(x, 0) ** 3,
    "norm": lambda lib, F, x: lib.linalg.norm(x, dim=1) * x.sum(1),
    "mean_var": lambda lib, F, x: x.var(1) * x.mean(1),
    "matmul_bmm": lambda lib, F, x: lib.bmm(lib.sin(x).reshape(1, 3, 4), x.reshape(1, 4, 3)),
    "layer_norm": lambda lib, F, x: F.layer_norm(x ** 3, (4,)) * lib.cos(x),
    "mse": lambda lib, F, x: F.mse_loss(x ** 2, lib.ones(3, 4, dtype=x.dtype)),
    "l1": lambda lib, F, x: F.l1_loss(x ** 3, lib.zeros(3, 4, dtype=x.dtype)),
    "smooth_l1": lambda lib, F, x: F.smooth_l1_loss(x ** 3, lib.zeros(3, 4, dtype=x.dtype), beta=0.5),
    "bce_logits": lambda lib, F, x: F.binary_cross_entropy_with_logits(x * x, lib.full((3, 4), 0.3, dtype=x.dtype)),
    "bce": lambda lib, F, x: F.binary_cross_entropy(lib.sigmoid(x * x), lib.full((3, 4), 0.3, dtype=x.dtype)),
    "cross_entropy": lambda lib, F, x: F.cross_entropy(x ** 3, lib.tensor([0, 3, 2])),
    "nll": lambda lib, F, x: F.nll_loss(F.log_softmax(x ** 3, 1), lib.tensor([1, 0, 2])),
    "cast": lambda lib, F, x: (x.float() ** 3).double(),
    "conv2d": lambda lib, F, x: F.conv2d(lib.sin(x).reshape(1, 1, 3, 4), x[:2, :2].reshape(1, 1, 2, 2) + 1,
                                         padding=1, stride=(1, 2)) ** 2,
    "conv1d": lambda lib, F, x: F.conv1d(lib.sin(x).reshape(1, 3, 4), x[:, :2].reshape(2, 3, 1).repeat(1, 1, 2),
                                         padding=1) ** 2,
    "max_pool2d": lambda lib, F, x: F.max_pool2d((x ** 3).reshape(1, 1, 3, 4), 2, padding=1) ** 2,
    "max_pool1d": lambda lib, F, x: F.max_pool1d((x ** 3).reshape(1, 3, 4), 2) ** 2,
    "avg_pool2d": lambda lib, F, x: F.avg_pool2d((x ** 3).reshape(1, 1, 3, 4), 2, stride=1) ** 2,
    "adaptive_avg_pool2d": lambda lib, F, x: F.adaptive_avg_pool2d((x ** 3).reshape(1, 1, 3, 4), (2, 3)) ** 2,
    "upsample": lambda lib, F, x: F.interpolate((x ** 3).reshape(1, 1, 3, 4), scale_factor=2, mode="bilinear",
                                                align_corners=False) * 0.5,
    "reflection_pad": lambda lib, F, x: F.pad((x ** 3).reshape(1, 3, 4), (1, 2), mode="reflect") ** 2,
    "replicate_pad": lambda lib, F, x: F.pad((x ** 3).reshape(1, 1, 3, 4), (1, 0, 0, 1), mode="replicate") ** 2,
    "adaptive_max_pool2d": lambda lib, F, x: F.adaptive_max_pool2d((x ** 3).reshape(1, 1, 3, 4), (2, 2)) ** 2,
    "max_pool_indices": lambda lib, F, x: F.max_pool2d((x ** 3).reshape(1, 1, 3, 4), 2, return_indices=True)[0] ** 2,
    "max_unpool": lambda lib, F, x: F.max_unpool2d(*F.max_pool2d((x ** 3).reshape(1, 1, 3, 4), 2,
                                                                 return_indices=True), 2, output_size=(3, 4))
    * x.reshape(1, 1, 3, 4),
    "prelu": lambda lib, F, x: F.prelu(x, lib.tensor([0.25, 0.1, 0.5, 0.3], dtype=x.dtype)) * x,
    "atan2": lambda lib, F, x: lib.atan2(x, x * x + 0.5),
    "diag": lambda lib, F, x: lib.diag(x ** 3) ** 2,
    "embedding": lambda lib, F, x: F.embedding(lib.tensor([[0, 2], [1, 2]]), x ** 3) ** 2,
    "embedding_padding": lambda lib, F, x: F.embedding(lib.tensor([[0, 2], [1, 2]]), x ** 3, padding_idx=2) ** 2,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_derivative_against_torch(name):
    torch = pytest.importorskip("torch")
    a = _rand(3, 4, seed=sum(map(ord, name)))
    a = np.where(np.abs(a) < 0.05, 0.3, a)  # away from the kinks of abs, relu-like masks and clamps
    f = CASES[name]
    x = flow.tensor(a, requires_grad=True)
    (g,) = autograd.grad(f(flow, F, x).sum(), x, create_graph=True)
    assert g.requires_grad
    (h,) = autograd.grad((g * g).sum(), x)
    tx = torch.tensor(a, requires_grad=True)
    (tg,) = torch.autograd.grad(f(torch, torch.nn.functional, tx).sum(), tx, create_graph=True)
    (th,) = torch.autograd.grad((tg * tg).sum(), tx)
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(h.numpy(), th.numpy(), rtol=1e-6, atol=1e-8)


def test_batch_norm_in_training_second_derivative_against_torch():
    torch = pytest.importorskip("torch")
    a, w = _rand(5, 3, seed=1), _rand(3, seed=2) + 1.5

    def run(lib, x, gamma):
        y = lib.nn.functional.batch_norm(x ** 3, None, None, weight=gamma, bias=gamma * 0.5, training=True)
        return (y * lib.sin(x)).sum()

    x, gm = flow.tensor(a, requires_grad=True), flow.tensor(w, requires_grad=True)
    (g,) = autograd.grad(run(flow, x, gm), x, create_graph=True)
    (g * g).sum().backward()
    tx, tgm = torch.tensor(a, requires_grad=True), torch.tensor(w, requires_grad=True)
    (tg,) = torch.autograd.grad(run(torch, tx, tgm), tx, create_graph=True)
    (tg * tg).sum().backward()
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gm.grad.numpy(), tgm.grad.numpy(), rtol=1e-6, atol=1e-8)


def test_batch_norm_module_eval_and_layer_norm_module_parameters():
    torch = pytest.importorskip("torch")
    a = _rand(4, 3, 2, 2, seed=3)
    fb, fl = flow.nn.BatchNorm2d(3).double(), flow.nn.LayerNorm([2, 2]).double()
    tb, tl = torch.nn.BatchNorm2d(3).double(), torch.nn.LayerNorm([2, 2]).double()
    for m, t in ((fb, tb), (fl, tl)):
        w = _rand(*t.weight.shape, seed=4) + 1.0
        b = _rand(*t.bias.shape, seed=5)
        m.weight.data = flow.tensor(w)
        m.bias.data = flow.tensor(b)
        t.weight.data, t.bias.data = torch.tensor(w), torch.tensor(b)
    fb.eval()
    tb.eval()
    x, tx = flow.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    for mod, lib_x in ((lambda v: fl(fb(v) ** 2), x), (lambda v: tl(tb(v) ** 2), tx)):
        out = (mod(lib_x) * lib_x).sum()
        lib = flow if lib_x is x else torch
        (g,) = lib.autograd.grad(out, lib_x, create_graph=True)
        (g * g).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-8)
    for mine, theirs in ((fl.weight, tl.weight), (fl.bias, tl.bias), (fb.weight, tb.weight), (fb.bias, tb.bias)):
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-6, atol=1e-8)


def _critic(lib, x, p):
    """A small WGAN critic: conv, layer norm, leaky relu, pooling, gelu, linear."""
    F_ = lib.nn.functional
    h = F_.conv2d(x, p["c1"], p["b1"], padding=1)
    h = F_.layer_norm(h, h.shape[1:])
    h = F_.leaky_relu(h, 0.2)
    h = F_.avg_pool2d(h, 2)
    h = F_.gelu(F_.conv2d(h, p["c2"], padding=1))
    h = F_.max_pool2d(h, 2)
    return F_.linear(h.reshape(h.shape[0], -1), p["w"], p["b"])


def test_wgan_gp_gradient_penalty_step_against_torch():
    """WGAN-GP: the critic's gradient wrt the interpolated input, its norm's penalty backpropagated to every
    parameter (through conv, layer norm, leaky relu, pooling, gelu and linear twice)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    arrays = {"c1": rng.standard_normal((4, 2, 3, 3)) * 0.3, "b1": rng.standard_normal(4) * 0.1,
              "c2": rng.standard_normal((3, 4, 3, 3)) * 0.3, "w": rng.standard_normal((1, 3 * 2 * 2)) * 0.3,
              "b": rng.standard_normal(1) * 0.1}
    real, fake = rng.standard_normal((2, 2, 8, 8)), rng.standard_normal((2, 2, 8, 8))
    eps = rng.uniform(size=(2, 1, 1, 1))

    def step(lib):
        p = {k: lib.tensor(v, requires_grad=True) for k, v in arrays.items()}
        inter = lib.tensor(eps * real + (1 - eps) * fake, requires_grad=True)
        d = _critic(lib, inter, p)
        (g,) = lib.autograd.grad(d, inter, lib.ones_like(d), create_graph=True)
        penalty = ((g.reshape(2, -1).norm(2, dim=1) - 1) ** 2).mean() * 10
        loss = _critic(lib, lib.tensor(fake), p).mean() - _critic(lib, lib.tensor(real), p).mean() + penalty
        loss.backward()
        return float(penalty.detach().numpy()), {k: t.grad.numpy() for k, t in p.items()}

    pen, grads = step(flow)
    tpen, tgrads = step(torch)
    np.testing.assert_allclose(pen, tpen, rtol=1e-7)
    for k in arrays:
        np.testing.assert_allclose(grads[k], tgrads[k], rtol=1e-6, atol=1e-9, err_msg=k)


def test_float32_gradient_penalty_of_a_linear_gelu_critic():
    torch = pytest.importorskip("torch")
    a, w1, w2 = (_rand(6, 5, seed=11).astype(np.float32), _rand(5, 8, seed=12).astype(np.float32),
                 _rand(8, 1, seed=13).astype(np.float32))

    def run(lib, x, p, q):
        d = lib.nn.functional.gelu(x @ p) @ q
        (g,) = lib.autograd.grad(d.sum(), x, create_graph=True)
        ((g.norm(2, dim=1) - 1) ** 2).mean().backward()

    fx, fp, fq = (flow.tensor(v, requires_grad=True) for v in (a, w1, w2))
    tx, tp, tq = (torch.tensor(v, requires_grad=True) for v in (a, w1, w2))
    run(flow, fx, fp, fq)
    run(torch, tx, tp, tq)
    for mine, theirs in ((fp, tp), (fq, tq), (fx, tx)):
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=2e-4, atol=1e-5)


def test_a_gradient_penalty_through_dropout_uses_the_forwards_mask():
    a = _rand(6, 5, seed=30)
    x = flow.tensor(a, requires_grad=True)
    flow.manual_seed(1)
    y = F.dropout(x ** 3, p=0.4, training=True)
    (g,) = autograd.grad(y.sum(), x, create_graph=True)
    (h,) = autograd.grad((g * g).sum(), x)
    mask = (y.detach().numpy() != 0) / 0.6  # the kept elements, scaled
    np.testing.assert_allclose(g.detach().numpy(), 3 * a * a * mask, rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), 2 * (3 * a * a * mask) * 6 * a * mask, rtol=1e-12)
    assert 0 < (mask == 0).sum() < mask.size


def test_third_derivative_of_gelu_by_finite_differences():
    a = np.array([-1.3, -0.2, 0.4, 1.7])
    x = flow.tensor(a, requires_grad=True)
    (g1,) = autograd.grad(F.gelu(x).sum(), x, create_graph=True)
    (g2,) = autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = autograd.grad(g2.sum(), x)
    from math import erf, exp, pi, sqrt

    def d1(v):
        return 0.5 * (1 + erf(v / sqrt(2))) + v * exp(-v * v / 2) / sqrt(2 * pi)

    def d2(v):
        return exp(-v * v / 2) / sqrt(2 * pi) * (2 - v * v)

    h = 1e-5
    np.testing.assert_allclose(g1.numpy(), [d1(v) for v in a], rtol=1e-10)
    np.testing.assert_allclose(g2.numpy(), [d2(v) for v in a], rtol=1e-10)
    np.testing.assert_allclose(g3.numpy(), [(d2(v + h) - d2(v - h)) / (2 * h) for v in a], rtol=1e-6)


def test_the_old_refusal_names_an_op_still_without_second_derivative():
    """The CTC loss's gradient kernel has no gradient rule: refused by name (lgamma's, which this test named
    before, differentiates through digamma/polygamma now: tests/test_limits2_digamma.py)."""
    lp = flow.tensor(np.log(np.full((3, 1, 4), 0.25)), requires_grad=True)
    with pytest.raises(NotImplementedError, match="create_graph=True: the gradient of op 'ctc_loss' uses op "
                                                  "'ctc_loss_grad', which has no gradient rule here"):
        autograd.grad(flow.nn.CTCLoss()(lp, flow.tensor([[1, 2]]), flow.tensor([3]), flow.tensor([2])), lp,
                      create_graph=True)


# --- layout casts and activation checkpoints (their nodes were refused under create_graph) ------------------------
def test_second_derivative_through_to_global_and_to_local_on_two_ranks():
    from simulated_ranks import on_ranks

    a = _rand(4, 3, seed=21)

    def body():
        rank = flow.env.get_rank()
        p = flow.placement("cpu", [0, 1])
        x = flow.tensor(a[2 * rank:2 * rank + 2], requires_grad=True)  # this rank's rows
        g_x = x.to_global(placement=p, sbp=flow.sbp.split(0))  # local -> global
        b = g_x.to_global(sbp=flow.sbp.broadcast)  # global -> global
        # and global -> local: the broadcast sum read on each rank, plus this rank's piece cubed
        y = (flow.sin(b) ** 2).sum().to_local() + (g_x.to_local() ** 3).sum()
        (g,) = autograd.grad(y, x, create_graph=True)
        (h,) = autograd.grad((g * g).sum(), x)
        return g.detach().numpy(), h.numpy()

    results = on_ranks(2, body)
    # y = Σ sin(a)² + Σ_local a³ per rank's term (the local sum is each rank's own): d/dx = sin 2a + 3a²
    for rank, (g, h) in enumerate(results):
        v = a[2 * rank:2 * rank + 2]
        g_ref = np.sin(2 * v) + 3 * v * v
        np.testing.assert_allclose(g, g_ref, rtol=1e-10)
        np.testing.assert_allclose(h, 2 * g_ref * (2 * np.cos(2 * v) + 6 * v), rtol=1e-9)


def test_second_derivative_through_an_activation_checkpoint():
    from oneflow_compat.utils.checkpoint import checkpoint

    a, w = _rand(3, 4, seed=22), _rand(4, 2, seed=23)
    x, p = flow.tensor(a, requires_grad=True), flow.tensor(w, requires_grad=True)

    def block(v):
        return F.gelu(flow.matmul(v, p))

    y = checkpoint(block, x * 1.0).sum()  # (an input with history: the walk continues past the checkpoint)
    (g,) = autograd.grad(y, x, create_graph=True)
    (g * g).sum().backward()
    x2, p2 = flow.tensor(a, requires_grad=True), flow.tensor(w, requires_grad=True)
    (g2,) = autograd.grad(F.gelu(flow.matmul(x2 * 1.0, p2)).sum(), x2, create_graph=True)
    (g2 * g2).sum().backward()
    np.testing.assert_allclose(g.detach().numpy(), g2.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(p.grad.numpy(), p2.grad.numpy(), rtol=1e-10)
    assert np.abs(p.grad.numpy()).sum() > 0


@pytest.mark.parametrize("case", ["avg_pool", "adaptive_avg_pool", "nll"])
def test_the_gradient_of_a_gradient_linear_in_dy_is_zeros_for_the_input_as_in_oneflow(case):
    """OneFlow 0.9's gradient ops of these read the forward input (for its shape): d(dx)/dx is zeros, not None
    (OneFlow's test_higher_derivative_pool.py / _loss.py, which compare with PyTorch's zeros)."""
    torch = pytest.importorskip("torch")
    a = _rand(1, 2, 4, 4, seed=40)

    def f(lib, F_, x):
        if case == "avg_pool":
            return F_.avg_pool2d(x, 2)
        if case == "adaptive_avg_pool":
            return F_.adaptive_avg_pool2d(x, (3, 2))
        return F_.nll_loss(x.reshape(4, 8), lib.tensor([1, 0, 7, 3]), reduction="none")

    results = []
    for lib in (flow, torch):
        x = lib.tensor(a, requires_grad=True)
        y = f(lib, lib.nn.functional, x)
        gy = lib.tensor(_rand(*y.shape, seed=41), requires_grad=True)
        (dx,) = lib.autograd.grad(y, x, gy, create_graph=True)
        ddx, ddy = lib.autograd.grad(dx, [x, gy], lib.tensor(_rand(*a.shape, seed=42)))
        results.append((dx.detach().numpy(), ddx.numpy(), ddy.numpy()))
    (dx, ddx, ddy), (tdx, tddx, tddy) = results
    np.testing.assert_allclose(dx, tdx, rtol=1e-10)
    np.testing.assert_array_equal(ddx, np.zeros_like(a))
    np.testing.assert_array_equal(tddx, np.zeros_like(a))
    np.testing.assert_allclose(ddy, tddy, rtol=1e-10)
