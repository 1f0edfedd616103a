"""The kernels the model zoo's speed needed (ResNet-50 within 1.2x of PyTorch): pointwise (1 x 1) convolutions as
plain matrix products, and batch normalization in training as per-channel sums plus one gradient formula. Checked
against independent references: einsum for the convolutions, finite differences of the whole batch normalization
(float64), PyTorch's batch norm in training on 1, 2 and 3 devices, and the numpy versions of the compiled loops."""
import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp
from oneflow_compat.kernels import nn as K
from oneflow_compat.kernels import norm as N
from oneflow_compat.kernels import norm_jit


def _conv_ref(x, w, stride):
    """NCHW 1 x 1 convolution by einsum, on the strided pixels."""
    xs = x[:, :, ::stride, ::stride]
    return np.einsum("fc,nchw->nfhw", w[:, :, 0, 0], xs)


@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pointwise_convolution(fmt, stride, dtype):
    r = np.random.default_rng(stride)
    x = r.standard_normal((3, 5, 7, 6)).astype(dtype)
    w = r.standard_normal((4, 5, 1, 1)).astype(dtype)
    b = r.standard_normal(4).astype(dtype)
    want = _conv_ref(x, w, stride)
    dy = r.standard_normal(want.shape).astype(dtype)
    to = (lambda a: a.transpose(0, 2, 3, 1).copy()) if fmt == "NHWC" else (lambda a: a)
    back = (lambda a: a.transpose(0, 3, 1, 2)) if fmt == "NHWC" else (lambda a: a)
    wf = w.transpose(0, 2, 3, 1).copy() if fmt == "NHWC" else w
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    got = K.conv2d(np, to(x), wf, strides=stride, data_format=fmt)
    np.testing.assert_allclose(back(got), want, **tol)
    fused = K.conv2d_bias_act(np, to(x), wf, b, activation="relu", strides=stride, data_format=fmt)
    np.testing.assert_allclose(back(fused), np.maximum(want + b[None, :, None, None], 0), **tol)
    # gradients: the adjoints of the product, the input's landing on the strided pixels only
    dx_want = np.zeros_like(x)
    dx_want[:, :, ::stride, ::stride] = np.einsum("fc,nfhw->nchw", w[:, :, 0, 0], dy)
    dw_want = np.einsum("nfhw,nchw->fc", dy, x[:, :, ::stride, ::stride])[:, :, None, None]
    dx = K.conv2d_grad_input(np, to(dy), wf, input_shape=to(x).shape, strides=stride, data_format=fmt)
    dw = K.conv2d_grad_weight(np, to(dy), to(x), weight_shape=wf.shape, strides=stride, data_format=fmt)
    np.testing.assert_allclose(back(dx), dx_want, **tol)
    np.testing.assert_allclose(dw.transpose(0, 3, 1, 2) if fmt == "NHWC" else dw, dw_want, **tol)
    assert dx.dtype == dw.dtype == got.dtype == dtype


def _bn(x, gamma, beta, axis, eps=1e-5):
    others = tuple(i for i in range(x.ndim) if i != axis)
    shape = [1] * x.ndim
    shape[axis] = -1
    m = x.mean(axis=others, keepdims=True)
    v = ((x - m) ** 2).mean(axis=others, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * gamma.reshape(shape) + beta.reshape(shape)


def _bn_kernels(x, gamma, beta, dy, axis):
    n = x.size // x.shape[axis]
    mean = N.channel_sum(np, x, axis=axis) / n
    var = N.centered_square_sum(np, x, mean, axis=axis) / n
    y = N.normalization_batch_stats(np, x, mean, var, gamma, beta, axis=axis, count=n)
    s_dy, s_dyx = N.normalization_batch_stats_grad_sums(np, dy, x, mean, var, axis=axis)
    dx = N.normalization_batch_stats_grad(np, dy, x, mean, var, gamma, s_dy, s_dyx, axis=axis, count=n)
    return y, dx, s_dyx, s_dy


@pytest.mark.parametrize("shape,axis", [((4, 3, 5), 1), ((6, 4), 1), ((2, 3, 4, 5), 3)])
def test_batch_norm_gradient_is_the_whole_functions(shape, axis):
    r = np.random.default_rng(0)
    x = r.standard_normal(shape) * 2 + 1
    gamma, beta = r.uniform(0.5, 2, shape[axis]), r.standard_normal(shape[axis])
    dy = r.standard_normal(shape)
    y, dx, dgamma, dbeta = _bn_kernels(x, gamma, beta, dy, axis)
    np.testing.assert_allclose(y, _bn(x, gamma, beta, axis), rtol=1e-10, atol=1e-12)
    eps = 1e-6
    numeric = np.zeros_like(x)
    for i in np.ndindex(*shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        numeric[i] = ((_bn(hi, gamma, beta, axis) - _bn(lo, gamma, beta, axis)) * dy).sum() / (2 * eps)
    np.testing.assert_allclose(dx, numeric, rtol=1e-5, atol=1e-7)
    others = tuple(i for i in range(len(shape)) if i != axis)
    xhat = (_bn(x, np.ones_like(gamma), np.zeros_like(beta), axis))
    np.testing.assert_allclose(dgamma, (dy * xhat).sum(axis=others), rtol=1e-8)
    np.testing.assert_allclose(dbeta, dy.sum(axis=others), rtol=1e-10)


@pytest.mark.skipif(not norm_jit.AVAILABLE, reason="numba is not installed")
def test_compiled_batch_norm_loops_equal_numpy(monkeypatch):
    r = np.random.default_rng(1)
    x = r.standard_normal((4, 6, 9)).astype(np.float32)
    gamma, beta = r.uniform(0.5, 2, 6).astype(np.float32), r.standard_normal(6).astype(np.float32)
    dy = r.standard_normal(x.shape).astype(np.float32)
    compiled = _bn_kernels(x, gamma, beta, dy, 1)
    monkeypatch.setattr(norm_jit, "AVAILABLE", False)
    plain = _bn_kernels(x, gamma, beta, dy, 1)
    for a, b in zip(compiled, plain):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("devices", [1, 2, 3])
@pytest.mark.parametrize("channels_last", [False, True])
def test_layers_batch_normalization_in_training_matches_torch(devices, channels_last):
    torch = pytest.importorskip("torch")
    r = np.random.default_rng(2)
    shape = (6, 5, 4, 3) if channels_last else (6, 3, 5, 4)
    x = (r.standard_normal(shape) * 3 + 1).astype(np.float32)
    dy = r.standard_normal(shape).astype(np.float32)
    grads = {}
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function("train")
    def bn_job(images: tp.Numpy.Placeholder(shape), g: tp.Numpy.Placeholder(shape)) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-%d" % (devices - 1)):
            images = images + flow.get_variable("zero", shape=shape, initializer=flow.zeros_initializer())
            flow.watch_diff(images, lambda g: grads.__setitem__("x", g.numpy()))
            y = flow.layers.batch_normalization(images, axis=-1 if channels_last else 1, momentum=0.9,
                                                epsilon=1e-5, gamma_initializer=flow.constant_initializer(1.5),
                                                beta_initializer=flow.constant_initializer(0.25), name="bn")
            loss = flow.math.reduce_sum(y * g)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0])).minimize(loss)
            return y

    y = bn_job(x, dy)
    moving_mean = flow.get_all_variables()["bn-moving_mean"].numpy()
    xt = torch.tensor(x, requires_grad=True)
    xt_nc = xt.permute(0, 3, 1, 2) if channels_last else xt
    rm, rv = torch.zeros(shape[-1] if channels_last else shape[1]), torch.ones(shape[-1] if channels_last else 3)
    want = torch.nn.functional.batch_norm(xt_nc, rm, rv, torch.full_like(rm, 1.5), torch.full_like(rm, 0.25),
                                          training=True, momentum=0.1, eps=1e-5)
    want = want.permute(0, 2, 3, 1) if channels_last else want
    (want * torch.tensor(dy)).sum().backward()
    np.testing.assert_allclose(y, want.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grads["x"], xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(moving_mean, rm.numpy(), rtol=1e-5, atol=1e-6)
