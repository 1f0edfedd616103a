"""kernels/optim.py: update kernels against independent float64 references (step by step) and against torch.optim
where the formulas coincide; the gradient post-processing kernels (regularization, clipping factor, non-finite
count, step counter). Hyper-parameters are exact in float32 (powers of two), so float64 runs must agree with the
references to ~1e-14 and float32 runs to float32 precision."""
import math
import os
import sys

import numpy as np
import pytest

from oneflow_compat.kernels import optim

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_testing import CUPY, host, xp  # noqa: E402,F401  (xp: fixture)

LR, WD = 0.0625, 0.015625
BETA1, BETA2, EPS = 0.875, 0.96875, 2.0 ** -20
N_STEPS = 6


def _data(dtype, shape=(5, 7), seed=0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(shape).astype(dtype)
    grads = [rng.standard_normal(shape).astype(dtype) for _ in range(N_STEPS)]
    return w, grads


def _close(got, expected, dtype, float32_scalar=False):
    # float32_scalar: the kernel keeps an lr-like scalar in a C++ float as OneFlow did (bias-corrected lr, LAMB's
    # trust-scaled lr), so float64 parameters agree to float32 precision of that scalar only.
    if np.dtype(dtype) == np.float64:
        np.testing.assert_allclose(got, expected, rtol=1e-6 if float32_scalar else 1e-12, atol=1e-14)
    else:
        np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-6)


def _run(kernel, w, states, grads, **attrs):
    """Applies `kernel` for every gradient, checking the in-place contract on the way."""
    ids = [id(a) for a in [w] + states]
    for t, g in enumerate(grads):
        g_before = g.copy()
        out = kernel(np, w, *states, g, **{k: (v(t) if callable(v) else v) for k, v in attrs.items()})
        assert out is None
        np.testing.assert_array_equal(g, g_before)
    assert [id(a) for a in [w] + states] == ids
    assert all(a.dtype == w.dtype for a in states)


# ---------------------------------------------------------------------------------------------------------------
# float64 references, written as plain per-step formulas
# ---------------------------------------------------------------------------------------------------------------

def ref_sgd(w, grads, lr, wd):
    w = w.astype(np.float64)
    for g in grads:
        w = w - lr * g - lr * wd * w
    return w


def ref_momentum(w, grads, lr, beta, wd):
    w, m = w.astype(np.float64), np.zeros(w.shape)
    for g in grads:
        m = beta * m - lr * g
        w = w + m - lr * wd * w
    return w, m


def ref_adam(w, grads, lr, b1, b2, eps, wd, bias_correction):
    w, m, v = w.astype(np.float64), np.zeros(w.shape), np.zeros(w.shape)
    for t, g in enumerate(grads, start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        step_lr = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t) if bias_correction else lr
        w = w - step_lr * m / (np.sqrt(v) + eps) - step_lr * wd * w
    return w, m, v


def ref_rmsprop(w, grads, lr, rho, eps, centered):
    w, ms, mg = w.astype(np.float64), np.zeros(w.shape), np.zeros(w.shape)
    for g in grads:
        ms = rho * ms + (1 - rho) * g ** 2
        mg = rho * mg + (1 - rho) * g
        denominator = ms - mg ** 2 if centered else ms
        w = w - lr * g / np.sqrt(denominator + eps)
    return w, ms, mg


def ref_lars(w, grads, lr, beta, eps, coef, wd):
    w, m = w.astype(np.float64), np.zeros(w.shape)
    for g in grads:
        wn, gn = np.linalg.norm(w), np.linalg.norm(g)
        trust = coef * wn / (eps + gn + wd * wn) if wn > 0 and gn > 0 else 1.0
        m = beta * m - lr * trust * g
        w = w + m - lr * trust * wd * w
    return w, m


def ref_lamb(w, grads, lr, b1, b2, eps, wd):
    w, m, v = w.astype(np.float64), np.zeros(w.shape), np.zeros(w.shape)
    for t, g in enumerate(grads, start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = m / (1 - b1 ** (t + 1))  # OneFlow's off-by-one: the state starts at β and is multiplied first
        v_hat = v / (1 - b2 ** (t + 1))
        u = m_hat / np.sqrt(v_hat + eps)
        wn, un = np.linalg.norm(w), np.linalg.norm(u)
        ratio = wn / un if wn > 0 and un > 0 else 1.0
        w = w - lr * ratio * (u + wd * w)
    return w, m, v


# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("wd", [0.0, WD])
def test_sgd(dtype, wd):
    w, grads = _data(dtype)
    expected = ref_sgd(w, grads, LR, wd)
    _run(optim.sgd_update, w, [], grads, lr=LR, weight_decay=wd)
    assert w.dtype == dtype
    _close(w, expected, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("wd", [0.0, WD])
def test_momentum(dtype, wd):
    w, grads = _data(dtype)
    expected_w, expected_m = ref_momentum(w, grads, LR, 0.875, wd)
    m = np.zeros_like(w)
    _run(optim.momentum_update, w, [m], grads, lr=LR, beta=0.875, weight_decay=wd)
    _close(w, expected_w, dtype)
    _close(m, expected_m, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bias_correction, wd", [(False, 0.0), (True, 0.0), (False, WD), (True, WD)])
def test_adam_and_adamw(dtype, bias_correction, wd):
    w, grads = _data(dtype)
    expected = ref_adam(w, grads, LR, BETA1, BETA2, EPS, wd, bias_correction)
    m, v = np.zeros_like(w), np.zeros_like(w)
    _run(optim.adam_update, w, [m, v], grads, lr=LR, beta1=BETA1, beta2=BETA2, epsilon=EPS, weight_decay=wd,
         do_bias_correction=bias_correction, step=lambda t: t)
    for got, ref in zip((w, m, v), expected):
        _close(got, ref, dtype, float32_scalar=bias_correction)


def test_adam_bias_correction_uses_step_plus_one_and_float32_betas():
    b1, b2 = float(np.float32(0.9)), float(np.float32(0.999))  # C++ float attributes
    lr = optim.adam_bias_corrected_lr(0.001, 0.9, 0.999, step=0)
    assert isinstance(lr, np.float32)
    assert float(lr) == pytest.approx(0.001 * math.sqrt(1 - b2) / (1 - b1), rel=1e-6)
    # 1 − float32(0.999) loses digits: the exact-double value is 7e-6 away, and OneFlow used the float one.
    assert float(lr) != pytest.approx(0.001 * math.sqrt(1 - 0.999) / (1 - 0.9), rel=1e-6)
    assert float(optim.adam_bias_corrected_lr(0.001, 0.9, 0.999, step=9)) == pytest.approx(
        0.001 * math.sqrt(1 - b2 ** 10) / (1 - b1 ** 10), rel=1e-6)


def test_lazy_adam_is_bias_corrected_adam_without_decay():
    w, grads = _data(np.float64)
    expected = ref_adam(w, grads, LR, BETA1, BETA2, EPS, 0.0, True)
    m, v = np.zeros_like(w), np.zeros_like(w)
    _run(optim.lazy_adam_update, w, [m, v], grads, lr=LR, beta1=BETA1, beta2=BETA2, epsilon=EPS,
         step=lambda t: t)
    _close(w, expected[0], np.float64, float32_scalar=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("centered", [False, True])
def test_rmsprop(dtype, centered):
    w, grads = _data(dtype)
    expected_w, expected_ms, expected_mg = ref_rmsprop(w, grads, LR, 0.875, EPS, centered)
    ms = np.zeros_like(w)
    if centered:
        mg = np.zeros_like(w)
        _run(optim.rmsprop_centered_update, w, [ms, mg], grads, lr=LR, decay_rate=0.875, epsilon=EPS)
        _close(mg, expected_mg, dtype)
    else:
        _run(optim.rmsprop_update, w, [ms], grads, lr=LR, decay_rate=0.875, epsilon=EPS)
    _close(w, expected_w, dtype)
    _close(ms, expected_ms, dtype)


def test_rmsprop_epsilon_is_inside_the_root():
    w, g, ms = np.array([1.0]), np.array([0.5]), np.zeros(1)
    optim.rmsprop_update(np, w, ms, g, lr=1.0, decay_rate=0.5, epsilon=0.25)
    # ms = 0.5·0.25 = 0.125; w = 1 − 0.5/√(0.125 + 0.25)
    assert w[0] == pytest.approx(1 - 0.5 / math.sqrt(0.375), rel=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("wd", [0.0, WD])
def test_lars(dtype, wd):
    w, grads = _data(dtype)
    coef, eps = 2.0 ** -10, 2.0 ** -30
    expected_w, expected_m = ref_lars(w, grads, LR, 0.875, eps, coef, wd)
    m = np.zeros_like(w)
    _run(optim.lars_update, w, [m], grads, lr=LR, momentum_beta=0.875, epsilon=eps, lars_coefficient=coef,
         weight_decay=wd)
    _close(w, expected_w, dtype)
    _close(m, expected_m, dtype)


def test_lars_trust_is_one_when_a_norm_is_zero():
    # Zero-initialized weights (the dense-layer default) still move: plain momentum with the full lr.
    w, m, g = np.zeros(3, np.float32), np.zeros(3, np.float32), np.array([1.0, -2.0, 0.5], np.float32)
    optim.lars_update(np, w, m, g, lr=0.5, momentum_beta=0.9, epsilon=1e-9, lars_coefficient=1e-4, weight_decay=0.1)
    np.testing.assert_array_equal(w, -0.5 * g)
    np.testing.assert_array_equal(m, -0.5 * g)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("wd", [0.0, WD])
def test_lamb(dtype, wd):
    w, grads = _data(dtype)
    expected = ref_lamb(w, grads, LR, BETA1, BETA2, EPS, wd)
    m, v = np.zeros_like(w), np.zeros_like(w)
    b1_t, b2_t = np.full((1,), BETA1, dtype), np.full((1,), BETA2, dtype)
    _run(optim.lamb_update, w, [m, v, b1_t, b2_t], grads, lr=LR, beta1=BETA1, beta2=BETA2, epsilon=EPS,
         weight_decay=wd)
    np.testing.assert_array_equal(b1_t, [BETA1 ** (N_STEPS + 1)])
    np.testing.assert_allclose(b2_t, [BETA2 ** (N_STEPS + 1)], rtol=1e-6 if dtype == np.float32 else 1e-15)
    for got, ref in zip((w, m, v), expected):
        _close(got, ref, dtype, float32_scalar=True)


def test_lamb_first_step_by_hand_and_variable_shaped_beta_states():
    g, w = np.array([0.5, -1.0]), np.array([3.0, 4.0])
    b1, b2, eps = 0.5, 0.75, 0.0625
    u = ((1 - b1) * g / (1 - b1 ** 2)) / np.sqrt((1 - b2) * g * g / (1 - b2 ** 2) + eps)
    expected = w - 0.125 * (5.0 / np.linalg.norm(u)) * u
    for state_shape in [(1,), (2,)]:
        w_run, m, v = w.copy(), np.zeros(2), np.zeros(2)
        b1_t, b2_t = np.full(state_shape, b1), np.full(state_shape, b2)
        optim.lamb_update(np, w_run, m, v, b1_t, b2_t, g, lr=0.125, beta1=b1, beta2=b2, epsilon=eps)
        np.testing.assert_allclose(w_run, expected, rtol=1e-7)  # trust-scaled lr is a float32
        np.testing.assert_array_equal(b1_t, np.full(state_shape, b1 ** 2))


def test_add_regularization():
    g = np.array([1.0, -2.0, 0.5, 0.0], np.float32)
    w = np.array([0.5, -0.25, 0.0, 2.0], np.float32)
    out = optim.add_regularization(np, g, w, l1=0.125, l2=0.5)
    np.testing.assert_array_equal(out, [1.0 + 0.125 + 0.25, -2.0 - 0.125 - 0.125, 0.5, 0.125 + 1.0])
    assert out.dtype == np.float32 and out is not g
    np.testing.assert_array_equal(g, [1.0, -2.0, 0.5, 0.0])
    np.testing.assert_array_equal(optim.add_regularization(np, g, w, l1=0.0, l2=0.5), g + 0.5 * w)
    np.testing.assert_array_equal(optim.add_regularization(np, g, w, l1=0.125, l2=0.0), g + 0.125 * np.sign(w))
    assert optim.add_regularization(np, g, w, l1=0, l2=0) is g


def test_squared_l2_norm_and_sum_of_squares(xp):
    x = xp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert float(optim.squared_l2_norm(xp, x)) == 55.0
    total = optim.sum_of_squares(xp, x)
    assert total.shape == (1,) and total.dtype == np.float32 and host(total).tolist() == [55.0]


def test_global_norm_clip_scale_is_min_of_inverse_norm_and_inverse_clip_norm(xp):
    # legacy-api.md §2.13: min(1/‖g‖, 1/clip_norm) -- not TensorFlow's clip_norm / max(‖g‖, clip_norm)
    for total, expected in [(16.0, 0.25), (0.25, 0.5)]:
        out = optim.global_norm_clip_scale(xp, xp.asarray([total], dtype=np.float32), clip_norm=2.0)
        assert out.dtype == np.float32 and host(out).tolist() == [expected]


def test_count_nonfinite(xp):
    g = xp.asarray([[1.0, np.inf], [np.nan, -np.inf], [0.0, 3.0]], dtype=np.float32)
    out = optim.count_nonfinite(xp, g)
    assert out.dtype == np.float32 and host(out).tolist() == [3.0]
    assert host(optim.count_nonfinite(xp, xp.zeros(4))).tolist() == [0.0]


def test_increment_in_place(xp):
    step = xp.asarray([41], dtype=np.int64)
    assert optim.increment(xp, step) is None
    assert host(step).tolist() == [42]


# ---------------------------------------------------------------------------------------------------------------
# torch.optim, where the formulas coincide
# ---------------------------------------------------------------------------------------------------------------

def _torch_run(torch_opt_cls, w0, grads, **kwargs):
    torch = pytest.importorskip("torch")
    p = torch.nn.Parameter(torch.tensor(w0, dtype=torch.float64))
    opt = torch_opt_cls([p], **kwargs)
    for g in grads:
        p.grad = torch.tensor(g, dtype=torch.float64)
        opt.step()
    return p.detach().numpy(), opt.state[p]


def test_momentum_matches_torch_sgd_with_buffer_equal_to_minus_m_over_lr():
    torch = pytest.importorskip("torch")
    w0, grads = _data(np.float64, seed=3)
    torch_w, state = _torch_run(torch.optim.SGD, w0, grads, lr=LR, momentum=0.875)
    w, m = w0.copy(), np.zeros_like(w0)
    _run(optim.momentum_update, w, [m], grads, lr=LR, beta=0.875)
    np.testing.assert_allclose(w, torch_w, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(m, -LR * state["momentum_buffer"].numpy(), rtol=1e-12, atol=1e-14)


def test_plain_sgd_with_weight_decay_matches_torch():
    torch = pytest.importorskip("torch")
    w0, grads = _data(np.float64, seed=4)
    torch_w, _ = _torch_run(torch.optim.SGD, w0, grads, lr=LR, weight_decay=WD)
    w = w0.copy()
    _run(optim.sgd_update, w, [], grads, lr=LR, weight_decay=WD)
    np.testing.assert_allclose(w, torch_w, rtol=1e-12, atol=1e-14)


def test_bias_corrected_adam_matches_torch_when_epsilon_is_zero():
    # torch adds ε to √v/√(1−β2^t); OneFlow to √v before the bias-corrected lr: identical only for ε = 0.
    torch = pytest.importorskip("torch")
    w0, grads = _data(np.float64, seed=5)
    torch_w, state = _torch_run(torch.optim.Adam, w0, grads, lr=LR, betas=(BETA1, BETA2), eps=0.0)
    w, m, v = w0.copy(), np.zeros_like(w0), np.zeros_like(w0)
    _run(optim.adam_update, w, [m, v], grads, lr=LR, beta1=BETA1, beta2=BETA2, epsilon=0.0, do_bias_correction=True,
         step=lambda t: t)
    np.testing.assert_allclose(w, torch_w, rtol=1e-6, atol=1e-14)  # bias-corrected lr is a float32
    np.testing.assert_allclose(m, state["exp_avg"].numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(v, state["exp_avg_sq"].numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("centered", [False, True])
def test_rmsprop_matches_torch_when_epsilon_is_zero(centered):
    # torch: w − lr·g/(√d + ε); OneFlow: w − lr·g/√(d + ε): identical only for ε = 0.
    torch = pytest.importorskip("torch")
    w0, grads = _data(np.float64, seed=6)
    torch_w, state = _torch_run(torch.optim.RMSprop, w0, grads, lr=LR, alpha=0.875, eps=0.0, centered=centered)
    w, ms = w0.copy(), np.zeros_like(w0)
    if centered:
        mg = np.zeros_like(w0)
        _run(optim.rmsprop_centered_update, w, [ms, mg], grads, lr=LR, decay_rate=0.875, epsilon=0.0)
        np.testing.assert_allclose(mg, state["grad_avg"].numpy(), rtol=1e-12, atol=1e-14)
    else:
        _run(optim.rmsprop_update, w, [ms], grads, lr=LR, decay_rate=0.875, epsilon=0.0)
    np.testing.assert_allclose(w, torch_w, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ms, state["square_avg"].numpy(), rtol=1e-12, atol=1e-14)


def test_float32_hyper_parameters_are_rounded_like_oneflows_float_attributes():
    # β = 0.9 is not exact in float32; on float64 parameters OneFlow still uses float(0.9): 0.899999976...
    m, w, g = np.zeros(1), np.zeros(1), np.ones(1)
    optim.momentum_update(np, w, m, g, lr=0.1, beta=0.9)
    optim.momentum_update(np, w, m, g, lr=0.1, beta=0.9)
    lr32, beta32 = float(np.float32(0.1)), float(np.float32(0.9))
    assert m[0] == beta32 * -lr32 - lr32
    assert m[0] != 0.9 * -0.1 - 0.1


# ---------------------------------------------------------------------------------------------------------------
# the same kernels on CuPy (skipped without a usable GPU)
# ---------------------------------------------------------------------------------------------------------------

def _cupy_or_skip():
    if CUPY is None:
        pytest.skip("CuPy with a usable GPU is not available")
    return CUPY


@pytest.mark.parametrize("name, n_states, attrs", [
    ("sgd_update", 0, dict(lr=LR, weight_decay=WD)),
    ("momentum_update", 1, dict(lr=LR, beta=0.875, weight_decay=WD)),
    ("adam_update", 2, dict(lr=LR, beta1=BETA1, beta2=BETA2, epsilon=EPS, weight_decay=WD, do_bias_correction=True,
                            step=3)),
    ("lazy_adam_update", 2, dict(lr=LR, beta1=BETA1, beta2=BETA2, epsilon=EPS, step=3)),
    ("rmsprop_update", 1, dict(lr=LR, decay_rate=0.875, epsilon=EPS)),
    ("rmsprop_centered_update", 2, dict(lr=LR, decay_rate=0.875, epsilon=EPS)),
    ("lars_update", 1, dict(lr=LR, momentum_beta=0.875, epsilon=EPS, lars_coefficient=2.0 ** -10, weight_decay=WD)),
    ("lamb_update", 4, dict(lr=LR, beta1=BETA1, beta2=BETA2, epsilon=EPS, weight_decay=WD)),
])
def test_kernels_on_cupy_match_numpy(name, n_states, attrs):
    cupy = _cupy_or_skip()
    kernel = getattr(optim, name)
    w, grads = _data(np.float32, seed=9)
    states = [np.full(w.shape if i < 2 or name != "lamb_update" else (1,), 0.5, np.float32) for i in range(n_states)]
    w_gpu, states_gpu = cupy.asarray(w), [cupy.asarray(s) for s in states]
    for g in grads:
        kernel(np, w, *states, g, **attrs)
        kernel(cupy, w_gpu, *states_gpu, cupy.asarray(g), **attrs)
    assert w_gpu.dtype == np.float32
    np.testing.assert_allclose(cupy.asnumpy(w_gpu), w, rtol=1e-5, atol=1e-6)
    for s, s_gpu in zip(states, states_gpu):
        np.testing.assert_allclose(cupy.asnumpy(s_gpu), s, rtol=1e-5, atol=1e-6)
