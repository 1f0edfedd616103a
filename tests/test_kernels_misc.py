"""Kernels other than conv/pool: matmul, activations, losses, batch norm, random,
reductions, shape ops. Backward kernels are checked against float64 finite
differences (numpy only) and, where installed, against PyTorch."""
import math

import numpy as np
import pytest

from oneflow_compat.kernels import activation as A
from oneflow_compat.kernels import linalg, loss, norm, reduce as R, shape as S
from oneflow_compat.kernels import random as rnd


def numeric_grad(fn, x, eps=1e-6):
    """Central differences of the scalar fn() w.r.t. every element of x (in place)."""
    grad = np.zeros_like(x)
    for index in np.ndindex(*x.shape):
        saved = x[index]
        x[index] = saved + eps
        up = fn()
        x[index] = saved - eps
        down = fn()
        x[index] = saved
        grad[index] = (up - down) / (2 * eps)
    return grad


def rng(seed=0):
    return np.random.default_rng(seed)


# --- matmul ------------------------------------------------------------------------

@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_transposes_alpha_and_dtype(ta, tb):
    a = rng(1).standard_normal((4, 3)).astype(np.float32)
    b = rng(2).standard_normal((3, 5)).astype(np.float32)
    a_in = a.T.copy() if ta else a
    b_in = b.T.copy() if tb else b
    out = linalg.matmul(np, a_in, b_in, transpose_a=ta, transpose_b=tb, alpha=2.5)
    assert out.dtype == np.float32
    expected = 2.5 * np.einsum("ik,kj->ij", a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_matmul_batched_and_errors():
    a = rng(3).standard_normal((2, 3, 4, 5))
    b = rng(4).standard_normal((2, 3, 6, 5))
    out = linalg.matmul(np, a, b, transpose_b=True)
    np.testing.assert_allclose(out, np.einsum("xyik,xyjk->xyij", a, b), rtol=1e-12)
    with pytest.raises(ValueError, match="batch"):
        linalg.matmul(np, a, b[:1], transpose_b=True)
    with pytest.raises(ValueError, match="inner"):
        linalg.matmul(np, a, b)


# --- activations -------------------------------------------------------------------

X_ACT = np.array([[-3.0, -0.7, -1e-3, 0.4, 2.2], [5.0, -8.0, 0.9, -0.2, 1.3]])

ELEMENTWISE = {
    # name: (forward, grad(dy, x, y), reference forward in float64)
    "relu": (A.relu, lambda dy, x, y: A.relu_grad(np, dy, y), lambda x: np.where(x > 0, x, 0.0)),
    "sigmoid": (A.sigmoid, lambda dy, x, y: A.sigmoid_grad(np, dy, y), lambda x: 1 / (1 + np.exp(-x))),
    "tanh": (A.tanh, lambda dy, x, y: A.tanh_grad(np, dy, y), np.tanh),
    "gelu": (A.gelu, lambda dy, x, y: A.gelu_grad(np, dy, x),
             lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))),
    "leaky_relu": (lambda xp, x: A.leaky_relu(xp, x, alpha=0.1),
                   lambda dy, x, y: A.leaky_relu_grad(np, dy, x, alpha=0.1),
                   lambda x: np.where(x > 0, x, 0.1 * x)),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_activation_forward_grad_and_dtype(name):
    forward, grad, reference = ELEMENTWISE[name]
    x = X_ACT.copy()
    y = forward(np, x)
    np.testing.assert_allclose(y, reference(x), rtol=1e-13, atol=1e-15)
    dy = rng(5).standard_normal(x.shape)
    numeric = numeric_grad(lambda: float(np.sum(forward(np, x) * dy)), x)
    np.testing.assert_allclose(grad(dy, x, y), numeric, rtol=1e-6, atol=1e-8)
    x32 = x.astype(np.float32)
    y32 = forward(np, x32)
    assert y32.dtype == np.float32
    assert grad(dy.astype(np.float32), x32, y32).dtype == np.float32


def test_sigmoid_saturates_without_overflow():
    with np.errstate(over="raise"):
        y = A.sigmoid(np, np.array([-1000.0, 1000.0], dtype=np.float32))
    np.testing.assert_array_equal(y, [0.0, 1.0])


def test_erf_accuracy():
    x = np.linspace(-7, 7, 2001)
    expected = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(A.erf(np, x), expected, rtol=0, atol=5e-15)
    np.testing.assert_allclose(A.erf(np, x.astype(np.float32)), expected, rtol=0, atol=5e-7)


@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_and_log_softmax(axis):
    x = rng(6).standard_normal((3, 4)) * 3
    y = A.softmax(np, x, axis=axis)
    e = np.exp(x)
    np.testing.assert_allclose(y, e / e.sum(axis=axis, keepdims=True), rtol=1e-13)
    np.testing.assert_allclose(A.log_softmax(np, x, axis=axis), np.log(y), rtol=1e-12)
    dy = rng(7).standard_normal(x.shape)
    np.testing.assert_allclose(
        A.softmax_grad(np, dy, y, axis=axis),
        numeric_grad(lambda: float(np.sum(A.softmax(np, x, axis=axis) * dy)), x), rtol=1e-6, atol=1e-9)
    ly = A.log_softmax(np, x, axis=axis)
    np.testing.assert_allclose(
        A.log_softmax_grad(np, dy, ly, axis=axis),
        numeric_grad(lambda: float(np.sum(A.log_softmax(np, x, axis=axis) * dy)), x), rtol=1e-6, atol=1e-9)


def test_softmax_is_stable_for_huge_logits():
    x = np.array([[1000.0, 1000.0, -1000.0]], dtype=np.float32)
    np.testing.assert_allclose(A.softmax(np, x), [[0.5, 0.5, 0.0]])
    assert np.isfinite(A.log_softmax(np, x)[0, :2]).all()


def test_activations_match_torch():
    torch = pytest.importorskip("torch")
    x = rng(8).standard_normal((4, 6)).astype(np.float32) * 3
    dy = rng(9).standard_normal(x.shape).astype(np.float32)
    cases = [
        (A.relu, lambda dy, x, y: A.relu_grad(np, dy, y), torch.relu),
        (A.sigmoid, lambda dy, x, y: A.sigmoid_grad(np, dy, y), torch.sigmoid),
        (A.tanh, lambda dy, x, y: A.tanh_grad(np, dy, y), torch.tanh),
        (A.gelu, lambda dy, x, y: A.gelu_grad(np, dy, x), torch.nn.functional.gelu),
        (lambda xp, x: A.softmax(xp, x), lambda dy, x, y: A.softmax_grad(np, dy, y),
         lambda t: torch.softmax(t, -1)),
        (lambda xp, x: A.log_softmax(xp, x), lambda dy, x, y: A.log_softmax_grad(np, dy, y),
         lambda t: torch.log_softmax(t, -1)),
        (A.leaky_relu, lambda dy, x, y: A.leaky_relu_grad(np, dy, x),
         lambda t: torch.nn.functional.leaky_relu(t, 0.2)),
    ]
    for forward, grad, torch_fn in cases:
        xt = torch.tensor(x, requires_grad=True)
        yt = torch_fn(xt)
        yt.backward(torch.tensor(dy))
        y = forward(np, x)
        np.testing.assert_allclose(y, yt.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(grad(dy, x, y), xt.grad.numpy(), rtol=1e-5, atol=1e-5)


# --- losses ------------------------------------------------------------------------

def test_sparse_softmax_cross_entropy_values_and_grad():
    logits = rng(10).standard_normal((2, 3, 5))
    labels = np.array([[0, 4, 2], [1, 1, 3]], dtype=np.int32)
    out, prob = loss.sparse_softmax_cross_entropy(np, logits, labels)
    assert out.shape == (2, 3) and out.dtype == logits.dtype
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = -np.take_along_axis(log_p, labels[..., None].astype(np.int64), -1)[..., 0]
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    dloss = rng(11).standard_normal(out.shape)
    numeric = numeric_grad(
        lambda: float(np.sum(loss.sparse_softmax_cross_entropy(np, logits, labels)[0] * dloss)), logits)
    np.testing.assert_allclose(loss.sparse_softmax_cross_entropy_grad(np, dloss, prob, labels), numeric,
                               rtol=1e-6, atol=1e-9)


def test_sparse_softmax_cross_entropy_safe_log_floor_and_trailing_one():
    logits = np.array([[0.0, 200.0]], dtype=np.float32)
    out, _ = loss.sparse_softmax_cross_entropy(np, logits, np.array([[0]], dtype=np.int64))
    assert out.dtype == np.float32 and out.shape == (1,)
    np.testing.assert_allclose(out, [-math.log(1e-20)], rtol=1e-6)  # clipped, not inf


@pytest.mark.parametrize("bad", [5, -1])
def test_sparse_softmax_cross_entropy_rejects_out_of_range_labels(bad):
    with pytest.raises(ValueError, match=r"label %d is out of range \[0, 5\)" % bad):
        loss.sparse_softmax_cross_entropy(np, np.zeros((2, 5)), np.array([1, bad], dtype=np.int64))


def test_dense_and_sigmoid_cross_entropy():
    logits = rng(12).standard_normal((3, 4))
    labels = rng(13).dirichlet(np.ones(4), size=3)  # rows sum to 1, as the legacy grad assumes
    out, prob = loss.softmax_cross_entropy(np, logits, labels)
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    np.testing.assert_allclose(out, -(labels * log_p).sum(-1), rtol=1e-12)
    dloss = rng(14).standard_normal(out.shape)
    np.testing.assert_allclose(
        loss.softmax_cross_entropy_grad(np, dloss, prob, labels),
        numeric_grad(lambda: float(np.sum(loss.softmax_cross_entropy(np, logits, labels)[0] * dloss)), logits),
        rtol=1e-6, atol=1e-9)

    z = rng(15).uniform(size=(3, 4))
    x = logits * 10
    s = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(loss.sigmoid_cross_entropy(np, x, z),
                               -(z * np.log(s) + (1 - z) * np.log(1 - s)), rtol=1e-9)
    d = rng(16).standard_normal(x.shape)
    np.testing.assert_allclose(
        loss.sigmoid_cross_entropy_grad(np, d, x, z),
        numeric_grad(lambda: float(np.sum(loss.sigmoid_cross_entropy(np, x, z) * d)), x), rtol=1e-6, atol=1e-8)


def test_losses_match_torch():
    torch = pytest.importorskip("torch")
    logits = rng(17).standard_normal((6, 10)).astype(np.float32)
    labels = rng(18).integers(0, 10, size=6).astype(np.int32)
    lt = torch.tensor(logits, requires_grad=True)
    ref = torch.nn.functional.cross_entropy(lt, torch.tensor(labels, dtype=torch.int64), reduction="none")
    ref.sum().backward()
    out, prob = loss.sparse_softmax_cross_entropy(np, logits, labels)
    np.testing.assert_allclose(out, ref.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(loss.sparse_softmax_cross_entropy_grad(np, np.ones(6, np.float32), prob, labels),
                               lt.grad.numpy(), rtol=1e-5, atol=1e-7)
    z = rng(19).uniform(size=logits.shape).astype(np.float32)
    lt = torch.tensor(logits, requires_grad=True)
    ref = torch.nn.functional.binary_cross_entropy_with_logits(lt, torch.tensor(z), reduction="none")
    ref.sum().backward()
    np.testing.assert_allclose(loss.sigmoid_cross_entropy(np, logits, z), ref.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(loss.sigmoid_cross_entropy_grad(np, np.ones_like(z), logits, z), lt.grad.numpy(),
                               rtol=1e-5, atol=1e-7)


# --- batch norm --------------------------------------------------------------------

@pytest.mark.parametrize("axis", [1, -1])
def test_batch_norm_train_forward_and_grads(axis):
    x = rng(20).standard_normal((4, 3, 2, 5)) * 2 + 1
    c = x.shape[axis]
    gamma = rng(21).standard_normal(c)
    beta = rng(22).standard_normal(c)
    y, mean, inv_std = norm.batch_norm_train(np, x, gamma, beta, axis=axis, epsilon=1e-3)
    axes = tuple(a for a in range(4) if a != axis % 4)
    shape = [1] * 4
    shape[axis] = c
    m = x.mean(axis=axes)
    v = x.var(axis=axes)
    np.testing.assert_allclose(mean, m, rtol=1e-12)
    np.testing.assert_allclose(inv_std, 1 / np.sqrt(v + 1e-3), rtol=1e-12)
    np.testing.assert_allclose(y, (x - m.reshape(shape)) / np.sqrt(v.reshape(shape) + 1e-3) * gamma.reshape(shape)
                               + beta.reshape(shape), rtol=1e-10, atol=1e-12)
    dy = rng(23).standard_normal(x.shape)
    dx, dgamma, dbeta = norm.batch_norm_train_grad(np, dy, x, gamma, mean, inv_std, axis=axis)

    def objective():
        return float(np.sum(norm.batch_norm_train(np, x, gamma, beta, axis=axis, epsilon=1e-3)[0] * dy))

    np.testing.assert_allclose(dx, numeric_grad(objective, x), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(dgamma, numeric_grad(objective, gamma), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dbeta, numeric_grad(objective, beta), rtol=1e-6, atol=1e-8)


def test_batch_norm_infer_and_moving_update():
    x = rng(24).standard_normal((5, 3))
    gamma, beta = np.array([1.0, 2.0, 0.5]), np.array([0.0, -1.0, 3.0])
    mm, mv = np.array([0.1, 0.2, 0.3]), np.array([1.0, 4.0, 0.25])
    y = norm.batch_norm_infer(np, x, gamma, beta, mm, mv, axis=1, epsilon=1e-3)
    np.testing.assert_allclose(y, (x - mm) / np.sqrt(mv + 1e-3) * gamma + beta, rtol=1e-12)
    dy = rng(25).standard_normal(x.shape)
    np.testing.assert_allclose(norm.batch_norm_infer_grad(np, dy, gamma, mv, axis=1, epsilon=1e-3),
                               numeric_grad(lambda: float(np.sum(norm.batch_norm_infer(
                                   np, x, gamma, beta, mm, mv, axis=1, epsilon=1e-3) * dy)), x), rtol=1e-6)
    _, mean, inv_std = norm.batch_norm_train(np, x, None, None, axis=1, epsilon=1e-3)
    new_mean, new_var = norm.batch_norm_moving_update(np, mm, mv, mean, inv_std, momentum=0.99, epsilon=1e-3)
    np.testing.assert_allclose(new_mean, 0.99 * mm + 0.01 * x.mean(0), rtol=1e-12)
    np.testing.assert_allclose(new_var, 0.99 * mv + 0.01 * x.var(0), rtol=1e-12)


def test_batch_norm_matches_torch():
    torch = pytest.importorskip("torch")
    x = rng(26).standard_normal((8, 4, 3, 3)).astype(np.float32)
    gamma = rng(27).standard_normal(4).astype(np.float32)
    beta = rng(28).standard_normal(4).astype(np.float32)
    dy = rng(29).standard_normal(x.shape).astype(np.float32)
    xt, gt, bt = (torch.tensor(a, requires_grad=True) for a in (x, gamma, beta))
    yt = torch.nn.functional.batch_norm(xt, None, None, gt, bt, training=True, eps=1e-3)
    yt.backward(torch.tensor(dy))
    y, mean, inv_std = norm.batch_norm_train(np, x, gamma, beta, axis=1, epsilon=1e-3)
    grads = norm.batch_norm_train_grad(np, dy, x, gamma, mean, inv_std, axis=1)
    assert y.dtype == np.float32 and all(g.dtype == np.float32 for g in grads)
    np.testing.assert_allclose(y, yt.detach().numpy(), rtol=1e-4, atol=1e-5)
    for ours, ref in zip(grads, (xt.grad, gt.grad, bt.grad)):
        np.testing.assert_allclose(ours, ref.numpy(), rtol=1e-4, atol=1e-4)


# --- random ------------------------------------------------------------------------

def test_uniform_slice_split_invariance_and_reference():
    shape = (7, 9)
    whole = rnd.uniform_slice(np, 1234, shape, 0, 63)
    assert whole.dtype == np.float64 and whole.shape == (63,)
    assert 0.0 <= whole.min() and whole.max() < 1.0
    # the mapping is Generator(Philox(seed)).random, element by element
    np.testing.assert_array_equal(whole, np.random.Generator(np.random.Philox(key=1234)).random(63))
    for parts in (2, 3, 5, 8):
        pieces = [rnd.uniform_slice(np, 1234, shape, a, b) for a, b in S.balanced_ranges(63, parts)]
        np.testing.assert_array_equal(np.concatenate(pieces), whole)
    np.testing.assert_array_equal(rnd.uniform_slice(np, 1234, shape, 13, 13), np.zeros(0))
    assert not np.array_equal(rnd.uniform_slice(np, 1235, shape, 0, 63), whole)
    with pytest.raises(ValueError):
        rnd.uniform_slice(np, 1, shape, 60, 64)


def test_dropout_mask_pieces_equal_slices_of_the_whole_mask():
    shape, rate, seed = (6, 5, 4), 0.3, 77
    whole = rnd.dropout_mask(np, seed, shape, rate)
    assert whole.dtype == np.int8 and whole.shape == shape
    expected = (rnd.uniform_slice(np, seed, shape, 0, 120).reshape(shape) > rate).astype(np.int8)
    np.testing.assert_array_equal(whole, expected)
    assert 0.5 < whole.mean() < 0.9
    for index in [(slice(2, 4),), (slice(None), slice(1, 3)), (slice(1, 6, 2), slice(None), slice(3, 4)),
                  (slice(0, 0),)]:
        np.testing.assert_array_equal(rnd.dropout_mask(np, seed, shape, rate, index), whole[index])


def test_dropout_scales_kept_values():
    x = np.arange(1, 9, dtype=np.float32).reshape(2, 4)
    mask = np.array([[1, 0, 1, 1], [0, 0, 1, 0]], dtype=np.int8)
    y = rnd.dropout(np, x, mask, rate=0.5)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, x * mask * 2)
    np.testing.assert_array_equal(rnd.dropout_grad(np, x, mask, rate=0.5), x * mask * 2)


# --- reductions --------------------------------------------------------------------

def test_reductions_shapes_and_values():
    x = rng(30).standard_normal((3, 4, 5)).astype(np.float32)
    for name, ref in [("reduce_sum", np.sum), ("reduce_mean", np.mean), ("reduce_max", np.max),
                      ("reduce_min", np.min), ("reduce_prod", np.prod)]:
        fn = getattr(R, name)
        full = fn(np, x)
        assert full.shape == (1,) and full.dtype == np.float32, name
        np.testing.assert_allclose(full, [ref(x.astype(np.float64))], rtol=1e-4)
        assert fn(np, x, keepdims=True).shape == (1, 1, 1)
        part = fn(np, x, axis=(0, 2))
        assert part.shape == (4,)
        np.testing.assert_allclose(part, ref(x.astype(np.float64), axis=(0, 2)), rtol=1e-4)
        assert fn(np, x, axis=[-1], keepdims=True).shape == (3, 4, 1)
        np.testing.assert_array_equal(fn(np, x, axis=[]), x)


def test_reduction_grads():
    x = rng(31).standard_normal((3, 4))
    for axis, keepdims in [(None, False), (1, False), ((0,), True)]:
        for fwd, grad in [(R.reduce_sum, lambda dy: R.reduce_sum_grad(np, dy, input_shape=x.shape, axis=axis)),
                          (R.reduce_mean, lambda dy: R.reduce_mean_grad(np, dy, input_shape=x.shape, axis=axis)),
                          (R.reduce_max, lambda dy: R.reduce_max_grad(np, dy, x, R.reduce_max(
                              np, x, axis=axis, keepdims=keepdims), axis=axis)),
                          (R.reduce_min, lambda dy: R.reduce_min_grad(np, dy, x, R.reduce_min(
                              np, x, axis=axis, keepdims=keepdims), axis=axis)),
                          (R.reduce_prod, lambda dy: R.reduce_prod_grad(np, dy, x, axis=axis))]:
            dy = rng(32).standard_normal(fwd(np, x, axis=axis, keepdims=keepdims).shape)
            numeric = numeric_grad(lambda: float(np.sum(fwd(np, x, axis=axis, keepdims=keepdims) * dy)), x)
            np.testing.assert_allclose(grad(dy), numeric, rtol=1e-6, atol=1e-8)


def test_reduce_max_ties_share_and_prod_grad_with_zeros():
    x = np.array([[2.0, 2.0, 1.0], [0.0, 3.0, 0.0], [0.0, 3.0, 4.0]])
    dx = R.reduce_max_grad(np, np.array([6.0, 1.0, 1.0]), x, R.reduce_max(np, x, axis=1), axis=1)
    np.testing.assert_array_equal(dx[0], [3.0, 3.0, 0.0])
    dp = R.reduce_prod_grad(np, np.ones(3), x, axis=1)
    np.testing.assert_array_equal(dp, [[2.0, 2.0, 4.0], [0.0, 0.0, 0.0], [12.0, 0.0, 0.0]])


def test_argmax_unbroadcast_broadcast_to():
    x = np.array([[1, 5, 5], [7, 0, 7]], dtype=np.float32)
    am = R.argmax(np, x)
    assert am.dtype == np.int32
    np.testing.assert_array_equal(am, [1, 0])  # first maximum wins
    g = rng(33).standard_normal((2, 3, 4))
    np.testing.assert_allclose(R.unbroadcast(np, g, (3, 1)), g.sum(0).sum(1, keepdims=True))
    np.testing.assert_allclose(R.unbroadcast(np, g, (1, 4)), g.sum((0, 1))[None])
    assert R.unbroadcast(np, g, g.shape) is not g
    b = R.broadcast_to(np, np.array([1.0, 2.0]), (3, 2))
    b[0, 0] = 9.0  # a writable, materialized array
    np.testing.assert_array_equal(b[1:], [[1.0, 2.0], [1.0, 2.0]])


# --- shape ops ---------------------------------------------------------------------

def test_balanced_ranges():
    assert S.balanced_ranges(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert S.balanced_ranges(2, 4) == [(0, 1), (1, 2), (2, 2), (2, 2)]
    assert S.balanced_ranges(9, 3) == [(0, 3), (3, 6), (6, 9)]
    for n in range(0, 30):
        for k in range(1, 7):
            ranges = S.balanced_ranges(n, k)
            sizes = [b - a for a, b in ranges]
            assert ranges[0][0] == 0 and ranges[-1][1] == n
            assert all(ranges[i][1] == ranges[i + 1][0] for i in range(k - 1))
            assert sizes == [n // k + 1] * (n % k) + [n // k] * (k - n % k)
    with pytest.raises(ValueError):
        S.balanced_ranges(3, 0)


def test_slice_and_grad():
    x = np.arange(60.0).reshape(3, 4, 5)
    tup = ((1, 3, None), slice(None, None, 2), (4, 0, -2))
    y = S.slice_nd(np, x, slice_tup=tup)
    np.testing.assert_array_equal(y, x[1:3, ::2, 4:0:-2])
    dy = rng(34).standard_normal(y.shape)
    numeric = numeric_grad(lambda: float(np.sum(S.slice_nd(np, x, slice_tup=tup) * dy)), x)
    np.testing.assert_allclose(S.slice_grad(np, dy, input_shape=x.shape, slice_tup=tup), numeric, atol=1e-9)
    np.testing.assert_array_equal(S.slice_nd(np, x, slice_tup=[(None, 2, None)]), x[:2])


def test_concat_split_transpose_pad_one_hot():
    a, b = np.ones((2, 3)), np.zeros((2, 1))
    c = S.concat(np, a, b, axis=1)
    assert c.shape == (2, 4)
    parts = S.split(np, c, sizes=S.split_sizes([a.shape, b.shape], 1), axis=1)
    np.testing.assert_array_equal(parts[0], a)
    np.testing.assert_array_equal(parts[1], b)
    x = rng(35).standard_normal((2, 3, 4))
    t = S.transpose(np, x, perm=(2, 0, 1))
    assert t.flags.c_contiguous
    np.testing.assert_array_equal(S.transpose(np, t, perm=S.inverse_perm((2, 0, 1))), x)
    p = S.pad(np, x, paddings=((0, 1), (2, 0), (1, 1)), constant_value=-1.0)
    np.testing.assert_array_equal(p, np.pad(x, ((0, 1), (2, 0), (1, 1)), constant_values=-1.0))
    np.testing.assert_array_equal(S.pad_grad(np, p, paddings=((0, 1), (2, 0), (1, 1))), x)
    oh = S.one_hot(np, np.array([[2, 0], [1, 2]], dtype=np.int32), depth=3, dtype=np.float32)
    assert oh.dtype == np.float32 and oh.shape == (2, 2, 3)
    np.testing.assert_array_equal(oh[1, 0], [0, 1, 0])
    np.testing.assert_array_equal(S.one_hot(np, np.array([1]), depth=2, on_value=5, off_value=-1, dtype=np.int64,
                                            axis=0), [[-1], [5]])
    with pytest.raises(ValueError, match="index 3 out of range"):
        S.one_hot(np, np.array([3]), depth=3)
