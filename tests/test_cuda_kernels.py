"""The CUDA kernels (kernels/cuda_*.py) against the numpy kernels, on three kinds of device:

* `twin`: the fake device (tests/strict_device.py) running each launch on the function's numpy twin — checks the
  launch plumbing (arguments, shapes, the C signatures) and that the twins are the numpy kernels' values;
* `host`: the fake device running the CUDA source itself, compiled for the host and run thread by thread
  (tests/cuda_host.py; skipped without a C++ compiler) — checks the CUDA code on a CPU;
* `cupy`: CuPy on a GPU (skipped without one).

The references are the numpy kernels (`xp = numpy`), never another device run. Where no exp/log is involved the
device values are the numpy ones bit for bit (compiled with --fmad=false); products (cuBLAS vs BLAS) and the softmax
are compared with tolerances."""
import numpy as np
import pytest

import cuda_host
import strict_device
from kernel_testing import CUPY
from oneflow_compat.kernels import activation, cuda_random, cuda_scatter, linalg, loss, nn, optim, random as rnd
from oneflow_compat.kernels import tensor_ops
from oneflow_compat.kernels import checks


@pytest.fixture(params=["twin", "host", "cupy"])
def dev(request):
    if request.param == "twin":
        return strict_device.module()
    if request.param == "host":
        if not cuda_host.available():
            pytest.skip("no C++ compiler to run the CUDA sources on the host")
        return strict_device.module(runner=cuda_host.runner())
    if CUPY is None:
        pytest.skip("CuPy with a usable GPU is not available")
    return CUPY


def _up(xp, a):
    return xp.asarray(a)


def _down(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


R = np.random.default_rng(7)


def _normal(*shape, dtype=np.float32):
    return R.standard_normal(shape).astype(dtype)


CONVS = [  # x shape, w shape, strides, pads, dilations, groups, data_format
    ((2, 3, 9, 8), (4, 3, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, "NCHW"),
    ((2, 4, 9, 7), (6, 2, 3, 2), (2, 1), ((2, 0), (1, 1)), (1, 2), 2, "NCHW"),
    ((3, 8, 7, 2), (5, 3, 3, 2), (1, 2), ((1, 1), (0, 1)), (1, 1), 1, "NHWC"),
    ((2, 1, 12, 12), (3, 1, 5, 5), (1, 1), ((2, 2), (2, 2)), (1, 1), 1, "NCHW"),
]


@pytest.mark.parametrize("case", range(len(CONVS)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_convolution_forward_and_gradients(dev, case, dtype):
    xs, ws, strides, pads, dil, groups, fmt = CONVS[case]
    x, w = _normal(*xs, dtype=dtype), _normal(*ws, dtype=dtype)
    b = _normal(ws[0], dtype=dtype)
    attrs = dict(strides=strides, pads=pads, dilations=dil, groups=groups, data_format=fmt)
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    y = nn.conv2d_bias_act(np, x, w, b, activation="relu", **attrs)
    got = nn.conv2d_bias_act(dev, _up(dev, x), _up(dev, w), _up(dev, b), activation="relu", **attrs)
    np.testing.assert_allclose(_down(got), y, **tol)
    np.testing.assert_allclose(_down(nn.conv2d(dev, _up(dev, x), _up(dev, w), **attrs)), nn.conv2d(np, x, w, **attrs),
                               **tol)
    dy = _normal(*y.shape, dtype=dtype)
    np.testing.assert_allclose(
        _down(nn.conv2d_grad_input(dev, _up(dev, dy), _up(dev, w), input_shape=xs, **attrs)),
        nn.conv2d_grad_input(np, dy, w, input_shape=xs, **attrs), **tol)
    np.testing.assert_allclose(
        _down(nn.conv2d_grad_weight(dev, _up(dev, dy), _up(dev, x), weight_shape=ws, **attrs)),
        nn.conv2d_grad_weight(np, dy, x, weight_shape=ws, **attrs), **tol)


POOLS = [  # x shape, ksize, strides, pads, format, ceil_mode
    ((2, 3, 8, 8), (2, 2), (2, 2), ((0, 0), (0, 0)), "NCHW", False),
    ((2, 3, 7, 9), (3, 2), (2, 3), ((1, 1), (0, 1)), "NCHW", False),
    ((2, 7, 5, 3), (2, 2), (2, 2), ((0, 0), (0, 0)), "NHWC", True),
    ((1, 2, 6, 6), (3, 3), (1, 1), ((1, 1), (1, 1)), "NCHW", False),
]


@pytest.mark.parametrize("case", range(len(POOLS)))
def test_pooling_forward_and_gradients_exactly(dev, case):
    xs, k, s, p, fmt, ceil = POOLS[case]
    x = R.integers(-3, 4, xs).astype(np.float32)  # ties: the first maximal cell in window order takes dy
    attrs = dict(ksize=k, strides=s, pads=p, data_format=fmt, ceil_mode=ceil)
    y = nn.max_pool2d(np, x, **attrs)
    got = nn.max_pool2d(dev, _up(dev, x), **attrs)
    np.testing.assert_array_equal(_down(got), y)
    dy = R.integers(-5, 6, y.shape).astype(np.float32)
    args = [_up(dev, a) for a in (dy, x, y)]
    np.testing.assert_array_equal(_down(nn.max_pool2d_grad(dev, *args, **attrs)),
                                  nn.max_pool2d_grad(np, dy, x, y, **attrs))
    np.testing.assert_array_equal(_down(nn.max_pool2d_relu_grad(dev, *args, **attrs)),
                                  nn.max_pool2d_relu_grad(np, dy, x, y, **attrs))
    xf = _normal(*xs)
    np.testing.assert_array_equal(_down(nn.avg_pool2d(dev, _up(dev, xf), **attrs)), nn.avg_pool2d(np, xf, **attrs))
    ya = nn.avg_pool2d(np, xf, **attrs)
    dya = _normal(*ya.shape)
    np.testing.assert_array_equal(_down(nn.avg_pool2d_grad(dev, _up(dev, dya), input_shape=xs, **attrs)),
                                  nn.avg_pool2d_grad(np, dya, input_shape=xs, **attrs))


@pytest.mark.parametrize("transpose_b", [False, True])
def test_dense_epilogues(dev, transpose_b):
    a, b = _normal(6, 5), _normal(7, 5) if transpose_b else _normal(5, 7)
    bias = _normal(7)
    for activation in (None, "relu"):
        want = linalg.matmul_bias_act(np, a, b, bias, transpose_b=transpose_b, activation=activation)
        got = linalg.matmul_bias_act(dev, _up(dev, a), _up(dev, b), _up(dev, bias), transpose_b=transpose_b,
                                     activation=activation)
        np.testing.assert_allclose(_down(got), want, rtol=1e-5, atol=1e-6)
    y = np.maximum(_normal(6, 7), 0)
    want = linalg.matmul_relu_grad(np, a, b, y, transpose_b=transpose_b)
    got = linalg.matmul_relu_grad(dev, _up(dev, a), _up(dev, b), _up(dev, y), transpose_b=transpose_b)
    np.testing.assert_allclose(_down(got), want, rtol=1e-5, atol=1e-6)
    assert (_down(got)[y == 0] == 0).all()


@pytest.mark.parametrize("dtype, label_dtype", [(np.float32, np.int32), (np.float64, np.int64)])
def test_softmax_cross_entropy_and_its_gradient(dev, dtype, label_dtype):
    logits = (_normal(9, 11) * 4).astype(dtype)
    labels = R.integers(0, 11, 9).astype(label_dtype)
    tol = dict(rtol=2e-6, atol=1e-7) if dtype == np.float32 else dict(rtol=1e-13, atol=1e-15)
    want_loss, want_prob = loss.sparse_softmax_cross_entropy(np, logits, labels)
    got_loss, got_prob = loss.sparse_softmax_cross_entropy(dev, _up(dev, logits), _up(dev, labels))
    np.testing.assert_allclose(_down(got_loss), want_loss, **tol)
    np.testing.assert_allclose(_down(got_prob), want_prob, **tol)
    for seed in (1.0, 0.25):
        want = loss.sparse_softmax_cross_entropy_and_grad(np, logits, labels, seed=seed)
        got = loss.sparse_softmax_cross_entropy_and_grad(dev, _up(dev, logits), _up(dev, labels), seed=seed)
        for g, w in zip(got, want):
            np.testing.assert_allclose(_down(g), w, **tol)
    checks.raise_failed()  # every label was in range


@pytest.mark.parametrize("bad, named", [([0, 3, 11, 2], 11), ([0, -2, 12, 1], -2)])
def test_labels_out_of_range_fail_at_the_step_end(dev, bad, named):
    logits, labels = _normal(4, 11), np.array(bad, np.int32)
    loss.sparse_softmax_cross_entropy_and_grad(dev, _up(dev, logits), _up(dev, labels))  # no wait here
    with pytest.raises(ValueError, match=r"^sparse_softmax_cross_entropy: label %d is out of range \[0, 11\)$"
                       % named):
        checks.raise_failed()


@pytest.mark.parametrize("shape, piece", [((40, 30), (slice(7, 19),)), ((40, 30), (slice(None), slice(11, 30))),
                                          ((6, 5, 4), (slice(2, 5), slice(1, 4), slice(0, 3))), ((17,), ()),
                                          ((2, 3, 4, 5, 6), (slice(None), slice(1, 2), slice(None), slice(2, 4)))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dropout_draws_the_host_mask_in_one_launch(dev, shape, piece, dtype):
    seed, rate = rnd.call_key(1234, 3), 0.4
    want_mask = rnd.dropout_mask(np, seed, shape, rate, piece)
    x = _normal(*want_mask.shape, dtype=dtype)
    want = rnd.dropout(np, x, want_mask, rate=rate)
    key = _up(dev, np.asarray(seed, np.uint64))
    y, mask = cuda_random.dropout(dev, _up(dev, x), key, rate, cuda_random.piece_geometry(shape, piece))
    np.testing.assert_array_equal(_down(mask), want_mask)  # the same bits as numpy's Philox
    np.testing.assert_array_equal(_down(y), want)
    only = cuda_random.mask(dev, key, rate, want_mask.shape, cuda_random.piece_geometry(shape, piece))
    np.testing.assert_array_equal(_down(only), want_mask)


def _signed_specials(dtype):
    """Values of both signs with the products' corner cases: zeros of both signs, infinities, a NaN."""
    x = _normal(5, 7, dtype=dtype)
    x.reshape(-1)[:5] = [0.0, -0.0, np.inf, -np.inf, np.nan]
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_and_dropout_gradients_are_one_launch_of_numpys_values(dev, dtype):
    # one raw launch each instead of a comparison and a product (relu) or two products (dropout), with numpy's
    # bits: NaN and infinities of dy through the mask's zeros (NaN), -0 where dy is negative and masked out
    dy, y = _signed_specials(dtype), np.maximum(_signed_specials(dtype)[::-1].copy(), 0)
    mask = R.integers(0, 2, (5, 7)).astype(np.int8)
    dy_d, y_d, mask_d = _up(dev, dy), _up(dev, y), _up(dev, mask)
    strict_device.Launches.reset()
    got_relu = activation.relu_grad(dev, dy_d, y_d)
    got_drop = cuda_random.dropout_grad(dev, dy_d, mask_d, rate=0.3)
    if dev is not CUPY:
        assert strict_device.Launches.by_name == {"raw:relu_grad_%s" % _SUFFIX[dtype]: 1,
                                                  "raw:dropout_grad_%s" % _SUFFIX[dtype]: 1}
    for got, want in ((got_relu, activation.relu_grad(np, dy, y)),
                      (got_drop, rnd.dropout_grad(np, dy, mask, rate=0.3))):
        assert _down(got).dtype == want.dtype
        np.testing.assert_array_equal(_down(got), want)
        # -0 where numpy makes it; a NaN's sign is the hardware's (x86 makes inf * 0 a negative NaN, a GPU the
        # positive canonical one), and numpy's assert_array_equal already asks NaN where numpy has NaN
        real = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(_down(got))[real], np.signbit(want)[real])


_SUFFIX = {np.float32: "f32", np.float64: "f64"}


def test_philox_uniform_kernel_equals_numpy_philox(dev):
    elements = np.concatenate([np.arange(0, 300), np.arange(123_456, 123_701)]).astype(np.uint64)
    for seed in (0, 1234, 2 ** 63 + 11, (1 << 128) - 1):
        key = _up(dev, np.array([seed & (2 ** 64 - 1), seed >> 64], np.uint64))
        out = dev.empty(elements.shape, dtype=np.float64)
        cuda_random.MODULE.launch(dev, "philox_uniform_at", elements.size, _up(dev, elements), out, key,
                                  elements.size)
        np.testing.assert_array_equal(_down(out), rnd.philox_uniform(np, seed, elements))
        keyed = dev.empty(elements.shape, dtype=np.float64)  # the key as two scalars (kernels/random.py's draws)
        rnd.UNIFORM.launch(dev, "philox_uniform_keyed", elements.size, _up(dev, elements), keyed,
                                  seed & (2 ** 64 - 1), seed >> 64, elements.size)
        np.testing.assert_array_equal(_down(keyed), rnd.philox_uniform(np, seed, elements))


OPTIMIZERS = [  # (device function, its keyword arguments, the numpy update it equals)
    ("sgd", dict(scale=1.0, weight_decay=0.0, fused=False),
     lambda w, s, g, lr: optim.sgd_update(np, w, g, lr=lr)),
    ("sgd", dict(scale=0.5, weight_decay=0.01, fused=False),
     lambda w, s, g, lr: optim.sgd_update(np, w, g * g.dtype.type(0.5), lr=lr, weight_decay=0.01)),
    ("sgd", dict(scale=0.25, weight_decay=0.0, fused=True),
     lambda w, s, g, lr: w.__isub__(g * g.dtype.type(np.float32(lr) * np.float32(0.25)))),
    ("momentum", dict(beta=0.9, scale=1.0, weight_decay=0.02, fused=False),
     lambda w, s, g, lr: optim.momentum_update(np, w, s[0], g, lr=lr, beta=0.9, weight_decay=0.02)),
    ("momentum", dict(beta=0.9, scale=0.5, weight_decay=0.0, fused=True),
     lambda w, s, g, lr: (s[0].__imul__(s[0].dtype.type(np.float32(0.9))),  # β a float attribute
                          s[0].__isub__(g * g.dtype.type(np.float32(lr) * np.float32(0.5))), w.__iadd__(s[0]))),
    ("adam", dict(beta1=0.9, beta2=0.999, epsilon=1e-8, scale=1.0, weight_decay=0.0),
     lambda w, s, g, lr: optim.adam_update(np, w, s[0], s[1], g, lr=lr, beta1=0.9, beta2=0.999, epsilon=1e-8)),
    ("adam", dict(beta1=0.8, beta2=0.99, epsilon=1e-6, scale=0.5, weight_decay=0.01),
     lambda w, s, g, lr: optim.adam_update(np, w, s[0], s[1], g * g.dtype.type(0.5), lr=lr, beta1=0.8, beta2=0.99,
                                           epsilon=1e-6, weight_decay=0.01)),
]


@pytest.mark.parametrize("case", range(len(OPTIMIZERS)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_optimizer_updates_equal_the_numpy_updates(dev, case, dtype):
    from oneflow_compat.kernels import cuda_optim

    name, kwargs, numpy_update = OPTIMIZERS[case]
    w, g = _normal(37, 3, dtype=dtype), _normal(37, 3, dtype=dtype)
    states = [_normal(37, 3, dtype=dtype) for _ in range({"sgd": 0, "momentum": 1, "adam": 2}[name])]
    if name == "adam":
        states[1] = np.abs(states[1])
    lr = np.float32(0.0375)
    want_w, want_s = w.copy(), [s.copy() for s in states]
    for _ in range(3):
        numpy_update(want_w, want_s, g, lr)
    dw, dg, ds = _up(dev, w), _up(dev, g), [_up(dev, s) for s in states]
    rate = _up(dev, np.asarray(lr))
    for _ in range(3):
        getattr(cuda_optim, name)(dev, dw, *ds, dg, rate, **kwargs)
    if dev is CUPY:  # cuBLAS-free, IEEE sqrt and division, no contraction: equal to the last bit but for sqrt libm
        np.testing.assert_allclose(_down(dw), want_w, rtol=1e-6, atol=1e-7)
    else:
        np.testing.assert_array_equal(_down(dw), want_w)
        for d, s in zip(ds, want_s):
            np.testing.assert_array_equal(_down(d), s)


BIAS_LAYOUTS = [  # (gradient shape, summed axes): a dense bias, a conv bias (NCHW, NHWC), a 3-D one, post > 1 only
    ((7, 5), (0,)), ((3, 4, 5, 6), (0, 2, 3)), ((3, 5, 6, 4), (0, 1, 2)), ((2, 3, 4), (0, 2)), ((1, 4, 9), (0, 2)),
    # rows and columns longer than a block's lanes (each lane adds several items before the tree)
    ((2, 3, 600), (0, 2)), ((600, 5), (0,)),
]


@pytest.mark.parametrize("case", range(len(BIAS_LAYOUTS)))
@pytest.mark.parametrize("beta", [0.0, 0.9])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_bias_gradient_and_its_sgd_step_equal_the_numpy_update(dev, case, beta, dtype):
    """cuda_optim.bias_sgd (row sums where needed, then the column sums with the fused SGD or momentum step: both
    a block of cuda_optim.LANES threads per output, a fixed tree)
    against the numpy kernel of the fused op (kernels/optim.py's reduce_sum_sgd_update), and, on the fake devices,
    against a reference written here: the sums in float64 in index order, rounded once, then the update kernels'
    arithmetic (which the twin and the compiled source must give to the bit)."""
    from oneflow_compat.kernels import cuda_optim

    shape, axis = BIAS_LAYOUTS[case]
    x = _normal(*shape, dtype=dtype)
    kept = [i for i in range(len(shape)) if i not in axis]
    k = int(np.prod([shape[i] for i in kept]))
    w, m = _normal(k, dtype=dtype), _normal(k, dtype=dtype)
    lr, scale = np.float32(0.0375), 0.5
    want_w, want_m = w.copy(), m.copy()
    for _ in range(2):
        optim.reduce_sum_sgd_update(np, want_w, want_m if beta else None, [x], lr=float(lr), axis=axis, scale=scale,
                                    momentum=beta)
    layout = cuda_optim.bias_layout(x, axis)
    assert layout[1] == k
    dw, dm, dx, rate = _up(dev, w), _up(dev, m), _up(dev, x), _up(dev, np.asarray(lr))
    for _ in range(2):
        cuda_optim.bias_sgd(dev, dw, dm if beta else None, dx, rate, layout, scale=scale, beta=beta)
    rtol = 1e-6 if dtype == np.float32 else 1e-13
    # (numpy's float32 sums round too: their error grows with the absolute sum of the summed column)
    atol = rtol * (1 + float(lr) * scale * 2 * float(np.abs(x).sum(axis=axis).max()))
    np.testing.assert_allclose(_down(dw), want_w, rtol=rtol, atol=atol)
    if beta:
        np.testing.assert_allclose(_down(dm), want_m, rtol=rtol, atol=atol)
    if dev is CUPY:
        return
    # the exact reference: float64 sums in the kernels' order (cuda_optim.LANES lanes per output, each adding
    # items lane, lane + LANES, ... in order, then the lanes' fixed tree), written here
    lanes = cuda_optim.LANES

    def block_sums(v):  # v (outputs, length) float64 -> the kernels' sum of each row
        part = np.zeros((v.shape[0], lanes))
        for j in range(v.shape[1]):
            part[:, j % lanes] += v[:, j]
        s = lanes // 2
        while s:
            part[:, :s] += part[:, s:2 * s]
            s //= 2
        return part[:, 0]

    moved = np.moveaxis(x.astype(np.float64), kept, list(range(len(kept)))).reshape(k, -1)
    pre, _, post = layout
    sums = x.astype(np.float64).reshape(pre, k, post)
    if post > 1:  # the row sums, written in the array's dtype
        sums = block_sums(sums.reshape(pre * k, post)).astype(dtype).astype(np.float64).reshape(pre, k, 1)
    g = block_sums(sums[:, :, 0].T)
    rounded = post > 1 and dtype == np.float32  # (the row sums' float32 rounding)
    np.testing.assert_allclose(g, moved.sum(axis=1), rtol=1e-12, atol=1e-6 * np.abs(x).sum() if rounded else 1e-12)
    g = g.astype(dtype)
    t = np.dtype(dtype).type
    c = t(np.float32(lr * np.float32(scale)))
    exact_w, exact_m = w.copy(), m.copy()
    for _ in range(2):
        if beta:
            exact_m = exact_m * t(np.float32(beta)) - g * c
            exact_w = exact_w + exact_m
        else:
            exact_w = exact_w - g * c
    np.testing.assert_array_equal(_down(dw), exact_w)
    if beta:
        np.testing.assert_array_equal(_down(dm), exact_m)


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_the_step_counter_is_one_more_in_one_launch(dev, dtype):
    from oneflow_compat.kernels import cuda_optim

    step = _up(dev, np.array([41], dtype))
    cuda_optim.increment(dev, step)
    cuda_optim.increment(dev, step)
    assert _down(step).tolist() == [43] and step.dtype == dtype
    other = _up(dev, np.array([1.5], np.float32))  # another dtype: the ufunc, the same value
    cuda_optim.increment(dev, other)
    assert _down(other).tolist() == [2.5]


def test_a_bias_layout_is_one_run_of_kept_axes():
    from oneflow_compat.kernels import cuda_optim

    x = np.zeros((2, 3, 4, 5), np.float32)
    assert cuda_optim.bias_layout(x, (0, 2, 3)) == (2, 3, 20)
    assert cuda_optim.bias_layout(x, (0, 1, 2)) == (24, 5, 1)
    assert cuda_optim.bias_layout(x, (0, 3)) == (2, 12, 5)
    assert cuda_optim.bias_layout(x, (1, 2)) is None  # kept axes 0 and 3: not one run
    assert cuda_optim.bias_layout(x, (0, 1, 2, 3)) is None  # nothing kept
    assert cuda_optim.bias_layout(x.astype(np.int32), (0, 2, 3)) is None


def test_a_wrong_argument_is_refused_naming_the_parameter(dev):
    from oneflow_compat.kernels import cuda_nn

    x = _up(dev, _normal(2, 3))
    with pytest.raises(TypeError, match=r"^CUDA function relu_mask_f32: y must be a float32 array, got float64$"):
        cuda_nn.MODULE.launch(dev, "relu_mask_f32", 6, x, _up(dev, _normal(2, 3, dtype=np.float64)), 6)
    with pytest.raises(ValueError, match=r"^CUDA function relu_mask_f32: g must be C-contiguous$"):
        cuda_nn.MODULE.launch(dev, "relu_mask_f32", 6, _up(dev, _normal(3, 2)).T, x, 6)
    with pytest.raises(TypeError, match=r"^CUDA function relu_mask_f32: g must be a device array, got ndarray$"):
        cuda_nn.MODULE.launch(dev, "relu_mask_f32", 6, _normal(2, 3), x, 6)
    with pytest.raises(TypeError, match=r"^CUDA function relu_mask_f32 takes 3 arguments \(g, y, n\), got 2$"):
        cuda_nn.MODULE.launch(dev, "relu_mask_f32", 6, x, x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8, np.int8, np.bool_])
def test_scatter_multiply_is_numpys_multiply_at_bit_for_bit(dev, dtype):
    """kernels/cuda_scatter.py against `numpy.multiply.at` (CuPy has no multiply.at): repeated positions multiply
    in the order of their items — a float product's rounding depends on that order, so the values are equal bit for
    bit — integers wrap as numpy's do, positions never written keep their value."""
    rng = np.random.default_rng(5)
    n, size = 400, 37
    positions = rng.integers(0, size - 5, n)  # the last 5 positions never written
    positions[:60] = 3  # one long run
    if dtype == np.bool_:
        out, values = rng.random(size) < 0.9, rng.random(n) < 0.97
    elif np.dtype(dtype).kind == "f":
        out, values = rng.standard_normal(size).astype(dtype), (1 + 0.3 * rng.standard_normal(n)).astype(dtype)
    else:
        out, values = rng.integers(-9, 9, size).astype(dtype), rng.integers(-7, 7, n).astype(dtype)
    want = out.copy()
    np.multiply.at(want, positions, values)
    got = _up(dev, out)
    cuda_scatter.multiply_at(dev, got, _up(dev, positions), _up(dev, values))
    np.testing.assert_array_equal(_down(got), want)
    empty = _up(dev, out)
    cuda_scatter.multiply_at(dev, empty, _up(dev, positions[:0]), _up(dev, values[:0]))
    np.testing.assert_array_equal(_down(empty), out)


def test_dim_scatter_mul_and_its_src_gradient_on_the_device(dev):
    """The op's kernels on the device (its _multiply_at goes through the CUDA kernel) equal numpy's, zeros among
    repeated factors included."""
    x = _normal(4, 6, dtype=np.float64)
    index = np.array([[0, 0, 2, 5], [1, 1, 1, 1], [3, 0, 3, 0], [5, 4, 3, 2]])
    src = _normal(4, 5, dtype=np.float64)
    src[1, 2] = src[2, 0] = 0.0
    want = tensor_ops.dim_scatter_mul(np, x, index, src, dim=1)
    got = tensor_ops.dim_scatter_mul(dev, _up(dev, x), _up(dev, index), _up(dev, src), dim=1)
    np.testing.assert_array_equal(_down(got), want)
    dy = _normal(4, 6, dtype=np.float64)
    want = tensor_ops.dim_scatter_mul_src_grad(np, dy, index, x, src, dim=1)
    got = tensor_ops.dim_scatter_mul_src_grad(dev, *[_up(dev, a) for a in (dy, index, x, src)], dim=1)
    np.testing.assert_array_equal(_down(got), want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.int8])
def test_scatter_add_by_rows_is_numpys_add_at_bit_for_bit(dev, dtype):
    """kernels/cuda_scatter.add_rows against `numpy.add.at`: each row's terms summed in the order of their items
    (CuPy's add.at adds with atomics, in an order that changes from run to run), the same bits every call."""
    rng = np.random.default_rng(6)
    n, rows, inner = 300, 23, 5
    positions = rng.integers(0, rows - 3, n)
    positions[:40] = 7
    if np.dtype(dtype).kind == "f":
        out, values = rng.standard_normal((rows, inner)).astype(dtype), rng.standard_normal((n, inner)).astype(dtype)
    else:
        out = rng.integers(-100, 100, (rows, inner)).astype(dtype)
        values = rng.integers(-90, 90, (n, inner)).astype(dtype)
    want = out.copy()
    np.add.at(want, positions, values)
    for _ in range(2):
        got = _up(dev, out)
        cuda_scatter.add_rows(dev, got, _up(dev, positions), _up(dev, values))
        np.testing.assert_array_equal(_down(got), want)


def test_the_device_adjoints_of_gathers_and_padding_are_numpys_bits(dev):
    """The scatter-adds of gradients on the device (gather's, a segment sum's, dim_scatter_add, padding's and
    upsampling's adjoints, indexed_slices_reduce_sum) go through the ordered kernel: numpy's values bit for bit."""
    from oneflow_compat.kernels import indexing, nd_index, resample, unique

    rng = np.random.default_rng(8)
    dy = rng.standard_normal((3, 6, 4))
    idx = np.array([0, 2, 2, 5, 1, 0])
    cases = [
        (lambda xp, a, i: indexing.gather_grad(xp, a, i, xp.zeros((3, 7, 4)), axis=1), [dy, idx]),
        (lambda xp, a, i: nd_index.unsorted_segment_sum(xp, a, i, num_segments=6, axis=1), [dy, idx]),
        (lambda xp, a, i: tensor_ops.dim_scatter_add(xp, xp.zeros((3, 6, 4)), i, a, dim=1),
         [dy, rng.integers(0, 6, (3, 6, 4))]),
        (lambda xp, a: resample.pad_edges_grad(xp, a, pads=((2, 1), (1, 2)), mode="reflect"),
         [rng.standard_normal((2, 3, 7, 8))]),
        (lambda xp, a: resample.upsample_grad(xp, a, input_shape=(2, 3, 3, 4), output_size=(7, 9), mode="linear"),
         [rng.standard_normal((2, 3, 7, 9))]),
        (lambda xp, i, a: unique.indexed_slices_reduce_sum(xp, i, a)[1], [idx, rng.standard_normal((6, 5))]),
    ]
    for k, (fn, arrays) in enumerate(cases):
        want = fn(np, *arrays)
        got = fn(dev, *[_up(dev, a) for a in arrays])
        np.testing.assert_array_equal(_down(got), _down(want), err_msg="case %d" % k)
