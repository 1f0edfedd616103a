"""`oneflow.experimental`: OneFlow v0.4.0's eager module API on the global-tensor API
(oneflow_compat/_global/experimental_v04.py, bound by oneflow_compat/experimental.py).

A v0.4-style training program against numpy written here; each adaptation where v0.4.0 differs from the global
API (argument orders and spellings, v0.4.0's population variance, out-of-place slice_update, loss reductions,
optimizer `scale`, CosineScheduler); that every name v0.4.0 exported there resolves; and that the legacy
`flow.experimental` names still run in a job function.
"""
import importlib
import math

import numpy as np
import pytest

import oneflow_compat as flow_top
from oneflow_compat import experimental as flow
from oneflow_compat._global import experimental_v04

# The names OneFlow v0.4.0 exported under `oneflow.experimental` with `@experimental_api` (collected from
# `@oneflow_export` + `@experimental_api` in oneflow/python/**/*.py at tag v0.4.0), and untagged ones its tests use.
V040_EXPERIMENTAL = """
abs add arange arcsin arcsinh argmax argwhere asin asinh broadcast_like cast cat cos cosh div eq equal exp flatten
gather gelu gt log lt masked_fill matmul mean mul neg negative ones ones_like pow reciprocal repeat reshape rsqrt
sigmoid sin slice slice_update softmax sqrt square squeeze std sub sum tanh tensor_buffer_to_list_of_tensors
transpose unsqueeze var where zeros zeros_like
nn.AvgPool2d nn.BatchNorm1d nn.BatchNorm2d nn.CoinFlip nn.Conv2d nn.CropMirrorNormalize nn.CrossEntropyLoss
nn.Dropout nn.ELU nn.Flatten nn.GELU nn.Hardsigmoid nn.Hardswish nn.Hardtanh nn.Identity nn.LayerNorm nn.LeakyReLU
nn.Linear nn.LogSigmoid nn.LogSoftmax nn.MaxPool2d nn.ModuleDict nn.ModuleList nn.NLLLoss nn.OFRecordImageDecoder
nn.OFRecordImageDecoderRandomCrop nn.OfrecordRawDecoder nn.OfrecordReader nn.PReLU nn.ParameterDict
nn.ParameterList nn.ReLU nn.ReLU6 nn.Sequential nn.Sigmoid nn.Softmax nn.Softplus nn.Tanh nn.Upsample
nn.UpsamplingBilinear2d nn.UpsamplingNearest2d nn.image.Resize
optim.Adam optim.AdamW optim.RMSprop optim.SGD optim.lr_scheduler.CosineScheduler optim.lr_scheduler.LambdaLR
optim.lr_scheduler.StepLR tmp.OfrecordReader tmp.RawDecoder tmp.logical_slice_assign
Tensor tensor device to Size no_grad nn.Module nn.Parameter nn.Embedding nn.init.constant_ autograd.grad
autograd.backward unittest.TestCase unittest.env.eager_execution_enabled enable_eager_execution float32 int64
""".split()


def _resolve(path):
    obj = flow
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def test_every_v040_experimental_name_resolves():
    missing = []
    for name in V040_EXPERIMENTAL:
        try:
            obj = _resolve(name)
        except AttributeError:
            missing.append(name)
            continue
        assert obj is not None, name
    assert missing == []
    assert len(V040_EXPERIMENTAL) == 125


def test_names_are_the_global_api_where_v040_agrees():
    # one implementation: the global API's own objects, not copies
    assert flow.Tensor is flow_top.Tensor and flow.nn.Module is flow_top.nn.Module
    assert flow.nn.Conv2d is flow_top.nn.Conv2d and flow.optim.lr_scheduler.StepLR is flow_top.optim.lr_scheduler.StepLR
    assert flow.matmul is flow_top.matmul.modern and flow.abs is flow_top.abs
    assert flow.arcsin is flow.asin and flow.neg is flow.negative
    # untagged exports resolve as the package's own names
    assert flow.float32 is flow_top.float32 and flow.unittest is flow_top.unittest


def test_submodule_imports():
    nn = importlib.import_module("oneflow_compat.experimental.nn")
    assert nn is flow.nn and nn.Linear is flow_top.nn.Linear
    sched = importlib.import_module("oneflow_compat.experimental.optim.lr_scheduler")
    assert sched.CosineScheduler is experimental_v04.CosineScheduler
    with pytest.raises(AttributeError, match="module 'oneflow.experimental' has no attribute 'no_such_name'"):
        flow.no_such_name  # noqa: B018


# --- a v0.4-style program ------------------------------------------------------------------------------------------
class _Net(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = flow.nn.Linear(4, 3)
        self.act = flow.nn.ReLU()
        self.out = flow.nn.Linear(3, 2)

    def forward(self, x):
        return self.out(self.act(self.fc(x)))


def _numpy_step(w1, b1, w2, b2, x, y, lr, momentum, bufs):
    h = x @ w1.T + b1
    a = np.maximum(h, 0)
    z = a @ w2.T + b2
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    n = x.shape[0]
    loss = -np.log(p[np.arange(n), y]).mean()
    dz = p.copy()
    dz[np.arange(n), y] -= 1
    dz /= n
    grads = [None, None, dz.T @ a, dz.sum(0)]
    da = dz @ w2
    dh = da * (h > 0)
    grads[0], grads[1] = dh.T @ x, dh.sum(0)
    params = [w1, b1, w2, b2]
    for i, g in enumerate(grads):
        bufs[i] = momentum * bufs[i] + g
        params[i] = params[i] - lr * bufs[i]
    return loss, params


def test_v04_style_training_program_against_numpy():
    rng = np.random.RandomState(7)
    w1, b1 = rng.randn(3, 4).astype(np.float32) * 0.5, rng.randn(3).astype(np.float32) * 0.1
    w2, b2 = rng.randn(2, 3).astype(np.float32) * 0.5, rng.randn(2).astype(np.float32) * 0.1
    x = rng.randn(6, 4).astype(np.float32)
    y = np.array([0, 1, 1, 0, 1, 0])

    net = _Net()
    device = flow.device("cpu")
    net.to(device)
    for p, v in zip([net.fc.weight, net.fc.bias, net.out.weight, net.out.bias], [w1, b1, w2, b2]):
        flow.nn.init.constant_(p, 0.0)
        with flow.no_grad():
            p.copy_(flow.Tensor(v))
    sgd = flow.optim.SGD(parameters=net.parameters(), lr=0.1, momentum=0.9)
    loss_fn = flow.nn.CrossEntropyLoss()
    xt = flow.to(flow.Tensor(x), device)
    yt = flow.Tensor(y, dtype=flow.int64).to("cpu")

    ref, bufs = [w1, b1, w2, b2], [0.0] * 4
    for _ in range(3):
        loss = loss_fn(net(xt), yt)
        loss.backward()
        sgd.step()
        sgd.zero_grad()
        ref_loss, ref = _numpy_step(*ref, x, y, 0.1, 0.9, bufs)
        np.testing.assert_allclose(loss.numpy(), ref_loss, rtol=1e-5, atol=1e-6)
    for p, r in zip([net.fc.weight, net.fc.bias, net.out.weight, net.out.bias], ref):
        np.testing.assert_allclose(p.numpy(), r, rtol=1e-4, atol=1e-6)


def test_to_function():
    t = flow.Tensor(np.array([1.5, 2.5], np.float32))
    as_int = flow.to(t, flow.int32)
    assert as_int.dtype == flow.int32 and as_int.numpy().tolist() == [1, 2]
    assert flow.to(t, "cpu").numpy().tolist() == [1.5, 2.5]
    with pytest.raises(TypeError, match="to\\(\\) expected a Tensor as its input, got list"):
        flow.to([1.0], "cpu")


# --- the adaptations ---------------------------------------------------------------------------------------------
def test_gather_in_v04_argument_order():
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    idx = np.array([[0, 0], [1, 0]])
    want = np.take_along_axis(x, idx, 1)
    xt, it = flow.Tensor(x), flow.Tensor(idx, dtype=flow.int64)
    np.testing.assert_array_equal(flow.gather(xt, it, dim=1).numpy(), want)
    np.testing.assert_array_equal(flow.gather(xt, it, 1).numpy(), want)
    # the Tensor method takes both v0.4.0's (index, dim) and 0.9's (dim, index)
    np.testing.assert_array_equal(xt.gather(it, dim=1).numpy(), want)
    np.testing.assert_array_equal(xt.gather(1, it).numpy(), want)
    np.testing.assert_array_equal(xt.gather(it).numpy(), np.take_along_axis(x, idx, 0))
    with pytest.raises(AssertionError, match="Only support bool = False for now!"):
        flow.gather(xt, it, 1, sparse_grad=True)


def test_sum_keepdims_spelling():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert flow.sum(flow.Tensor(x), 1, keepdims=True).numpy().tolist() == [[3.0], [12.0]]
    assert flow.sum(flow.Tensor(x), 0).numpy().tolist() == [3.0, 5.0, 7.0]


def test_var_and_std_are_population_statistics():
    x = np.array([[1.0, 2.0, 4.0, 7.0], [0.0, -1.0, 3.0, 2.0]], np.float32)
    # population variance: mean of squares minus square of the mean (no n - 1)
    want_var = ((x ** 2).mean(1) - x.mean(1) ** 2)
    np.testing.assert_allclose(flow.var(flow.Tensor(x), 1).numpy(), want_var, rtol=1e-6)
    np.testing.assert_allclose(flow.std(flow.Tensor(x), dim=1, keepdim=True).numpy(),
                               np.sqrt(want_var)[:, None], rtol=1e-6)
    with pytest.raises(AssertionError, match="Only support 'unbiased=True' for now!"):
        flow.std(flow.Tensor(x), 1, unbiased=False)
    # the global API keeps its Bessel-corrected default
    np.testing.assert_allclose(flow_top.var(flow.Tensor(x), 1).numpy(), want_var * 4 / 3, rtol=1e-6)


def test_comparisons_are_int8_and_equal_is_elementwise():
    a, b = flow.Tensor(np.array([1.0, 2.0, 3.0])), flow.Tensor(np.array([1.0, 0.0, 3.0]))
    for fn, want in ((flow.eq, [1, 0, 1]), (flow.equal, [1, 0, 1]), (flow.gt, [0, 1, 0]), (flow.lt, [0, 0, 0])):
        out = fn(a, b)
        assert out.dtype == flow.int8 and out.numpy().tolist() == want, fn
    assert flow.gt(a, 1.5).numpy().tolist() == [0, 1, 1]
    assert flow_top.equal(a, b) is False  # 0.9's whole-tensor comparison
    assert flow_top.eq(a, b).dtype == flow.bool  # and 0.9's elementwise one is bool


def test_arange_defaults_to_int64():
    r = flow.arange(2, 7, 2)
    assert r.dtype == flow.int64 and r.numpy().tolist() == [2, 4, 6]
    assert flow.arange(3, dtype=flow.float32).dtype == flow.float32


def test_slice_update_is_out_of_place_and_logical_slice_assign_in_place():
    x = flow.Tensor(np.ones(5, np.float32))
    upd = flow.Tensor(np.array([7.0, 8.0], np.float32))
    y = flow.slice_update(x, upd, slice_tup_list=[[1, 5, 2]])
    assert y.numpy().tolist() == [1.0, 7.0, 1.0, 8.0, 1.0]
    assert x.numpy().tolist() == [1.0] * 5
    assert flow.tmp.logical_slice_assign(x, upd, [[0, 2, 1]]) is None
    assert x.numpy().tolist() == [7.0, 8.0, 1.0, 1.0, 1.0]


def test_log_softmax_default_dim_is_1():
    x = np.array([[1.0, 2.0, 0.5], [3.0, -1.0, 0.0]], np.float32)
    want = x - np.log(np.exp(x).sum(1, keepdims=True))
    np.testing.assert_allclose(flow.nn.LogSoftmax()(flow.Tensor(x)).numpy(), want, rtol=1e-5)


def test_loss_reduction_none():
    logits = np.array([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0]], np.float32)
    label = np.array([0, 2])
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    per_sample = -logp[np.arange(2), label]
    ce = flow.nn.CrossEntropyLoss(reduction=None)(flow.Tensor(logits), flow.Tensor(label, dtype=flow.int64))
    np.testing.assert_allclose(ce.numpy(), per_sample, rtol=1e-5)
    # v0.4.0's NLLLoss averages unless the reduction is "none" or "sum": None means the mean
    nll = flow.nn.NLLLoss(reduction=None)(flow.Tensor(logp), flow.Tensor(label, dtype=flow.int64))
    np.testing.assert_allclose(nll.numpy(), per_sample.mean(), rtol=1e-5)


def test_optimizer_scale_multiplies_the_gradient():
    w0 = np.array([1.0, -2.0, 0.5], np.float32)
    for cls, kwargs in ((flow.optim.SGD, {"momentum": 0.0}), (flow.optim.Adam, {"eps": 1.0})):
        w = flow.nn.Parameter(flow.Tensor(w0))
        opt = cls([w], lr=0.1, scale=2.0, **kwargs)
        (w * w).sum().backward()  # gradient 2w, scaled to 4w for the update
        opt.step()
        np.testing.assert_allclose(w.grad.numpy(), 2 * w0)  # the gradient itself is left as it was
        if cls is flow.optim.SGD:
            np.testing.assert_allclose(w.numpy(), w0 - 0.1 * 4 * w0, rtol=1e-6)
        else:  # Adam's first step, uncorrected moments of the scaled g: m = 0.1 g, v = 0.001 g²
            g = 4 * w0
            np.testing.assert_allclose(w.numpy(), w0 - 0.1 * (0.1 * g) / (np.sqrt(0.001 * g * g) + 1.0), rtol=1e-6)
    with pytest.raises(AssertionError, match="Invalid scale factor: -1.0"):
        flow.optim.SGD([flow.nn.Parameter(flow.Tensor(w0))], lr=0.1, scale=-1.0)


def test_optimizer_scale_per_param_group():
    w0 = np.array([1.0, 2.0], np.float32)
    a, b = flow.nn.Parameter(flow.Tensor(w0)), flow.nn.Parameter(flow.Tensor(w0))
    opt = flow.optim.SGD([{"params": [a], "lr": 0.5, "scale": 0.5}, {"params": [b], "lr": 0.5}], scale=3.0)
    (a.sum() + b.sum()).backward()  # gradients 1
    opt.step()
    np.testing.assert_allclose(a.numpy(), w0 - 0.5 * 0.5)
    np.testing.assert_allclose(b.numpy(), w0 - 0.5 * 3.0)
    assert [g["scale"] for g in opt.param_groups] == [0.5, 3.0]


def test_adam_has_no_bias_correction():
    # v0.4.0's adam_update: m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g², w -= lr m / (sqrt(v) + eps), uncorrected
    g, w0 = np.array([0.5, -2.0], np.float32), np.array([1.0, 1.0], np.float32)
    for cls in (flow.optim.Adam, flow.optim.AdamW):
        w = flow.nn.Parameter(flow.Tensor(w0))
        opt = cls([w], lr=0.1, betas=(0.9, 0.99), eps=1e-3)
        (w * flow.Tensor(g)).sum().backward()
        opt.step()
        m, v = 0.1 * g, 0.01 * g * g
        np.testing.assert_allclose(w.numpy(), w0 - 0.1 * m / (np.sqrt(v) + 1e-3), rtol=1e-5)


def test_rmsprop_update_ignores_weight_decay():
    # v0.4.0's rmsprop_update never read weight_decay: r = a r + (1 - a) g², w -= lr g / sqrt(r + eps)
    g, w0 = np.array([0.5, -2.0], np.float32), np.array([1.0, 3.0], np.float32)
    w = flow.nn.Parameter(flow.Tensor(w0))
    opt = flow.optim.RMSprop([w], lr=0.1, alpha=0.9, eps=1e-4, weight_decay=0.5)
    (w * flow.Tensor(g)).sum().backward()
    opt.step()
    np.testing.assert_allclose(w.numpy(), w0 - 0.1 * g / np.sqrt(0.1 * g * g + 1e-4), rtol=1e-5)
    assert opt.param_groups[0]["weight_decay"] == 0.5


def test_where_with_python_numbers_is_float32():
    cond = flow.Tensor(np.array([1, 0, 1]), dtype=flow.int32)
    out = flow.where(cond, 0.5, 2)
    assert out.dtype == flow.float32 and out.numpy().tolist() == [0.5, 2.0, 0.5]
    x = flow.Tensor(np.array([1.0, 2.0, 3.0], np.float32))
    assert flow.where(cond, x, -1.0).numpy().tolist() == [1.0, -1.0, 3.0]


def test_tensor_methods_in_v04_forms():
    x = flow.Tensor(np.array([[1.0, 2.0]], np.float32))
    np.testing.assert_array_equal(x.repeat(sizes=(2, 2)).numpy(), np.tile([[1.0, 2.0]], (2, 2)))
    np.testing.assert_array_equal(x.repeat(2, 1).numpy(), np.tile([[1.0, 2.0]], (2, 1)))
    with pytest.raises(TypeError, match=r"repeat\(\) got multiple values for argument 'sizes'"):
        x.repeat(2, sizes=(1, 1))
    x.zeros_()
    assert x.numpy().tolist() == [[0.0, 0.0]]


def test_cosine_scheduler():
    w = flow.nn.Parameter(flow.Tensor(np.zeros(2, np.float32)))
    opt = flow.optim.SGD([w], lr=0.5)
    sched = flow.optim.lr_scheduler.CosineScheduler(opt, steps=4, alpha=0.1)
    seen = []
    for _ in range(6):
        opt.step()
        sched.step()
        seen.append(opt.param_groups[0]["lr"])
    want = [0.5 * ((1 - 0.1) * 0.5 * (1 + math.cos(math.pi * min(s, 4) / 4)) + 0.1) for s in range(1, 7)]
    np.testing.assert_allclose(seen, want, rtol=1e-12)
    assert sched.steps == 4
    with pytest.raises(AssertionError, match="steps must greater than zero, but got 0"):
        flow.optim.lr_scheduler.CosineScheduler(opt, steps=0)


def test_tensor_buffer_to_list_of_tensors():
    from oneflow_compat._global import nn_data
    buf = nn_data.tensor_to_tensor_buffer(flow.Tensor(np.arange(8, dtype=np.float32).reshape(2, 4)), 1)
    a, b = flow.tensor_buffer_to_list_of_tensors(buf, [(2, 2), (4,)], [flow.float32, flow.float32])
    assert a.numpy().tolist() == [[0.0, 1.0], [2.0, 3.0]] and b.numpy().tolist() == [4.0, 5.0, 6.0, 7.0]
    with pytest.raises(ValueError, match="the tensor buffer holds 2 elements, 1 out_shapes were given"):
        flow.tensor_buffer_to_list_of_tensors(buf, [(4,)], [flow.float32])
    with pytest.raises(ValueError, match=r"element 1 holds 4 values \(shape \(4,\)\), out_shapes\[1\] \(3,\) holds 3"):
        flow.tensor_buffer_to_list_of_tensors(buf, [(4,), (3,)], [flow.float32, flow.float32])


def test_v04_module_paths():
    from oneflow_compat.python.nn.module import Module
    from oneflow_compat.python.nn.parameter import Parameter
    from oneflow_compat.python.nn.modules.utils import _pair
    assert Module is flow.nn.Module and Parameter is flow.nn.Parameter and _pair(3) == (3, 3)


def test_unittest_eager_flag_chooses_no_api(monkeypatch):
    from oneflow_compat.framework import client_mode
    monkeypatch.setenv("ONEFLOW_TEST_ENABLE_EAGER", "1")
    flow.unittest.TestCase("__init__").setUp()
    assert client_mode.current() is None and flow.eager_execution_enabled()
    flow.enable_eager_execution(False)
    assert client_mode.current() is None and not flow.eager_execution_enabled()
    assert (flow.Tensor(np.ones(2)) + 1).numpy().tolist() == [2.0, 2.0]  # the global API is free to run
    assert client_mode.current() == client_mode.GLOBAL


# --- the legacy names of flow.experimental -------------------------------------------------------------------------
def test_legacy_experimental_names_still_run():
    from oneflow_compat import typing as tp
    assert flow.scope.config is not None and callable(flow.name_scope)

    @flow_top.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        with flow.name_scope("outer"):
            return flow.square_sum(flow.logical_slice(x, [(0, 2, 1), (1, 3, 1)]))

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(job(x), [(x[:, 1:] ** 2).sum()])
