"""`oneflow.nn` as a package (issue 21, part 1): its submodules by OneFlow's paths, the containers, the Module API,
`nn.utils` (against torch where installed, else numpy written here), `flow.dtype`, `flow.jit`,
`oneflow.framework.tensor`, `flow.eye`."""
import importlib
import math

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import nn


def test_oneflow_paths_resolve():
    for path in ("oneflow_compat.nn.modules", "oneflow_compat.nn.modules.module", "oneflow_compat.nn.modules.utils",
                 "oneflow_compat.nn.modules.container", "oneflow_compat.nn.parallel", "oneflow_compat.nn.utils",
                 "oneflow_compat.nn.init", "oneflow_compat.nn.functional", "oneflow_compat.utils.data",
                 "oneflow_compat.framework.tensor", "oneflow_compat.framework.dtype", "oneflow_compat.jit"):
        importlib.import_module(path)
    from oneflow_compat.framework.tensor import Tensor
    from oneflow_compat.nn.modules.utils import _pair, _triple
    from oneflow_compat.framework.dtype import convert_oneflow_dtype_to_numpy_dtype
    assert Tensor is flow.Tensor and _pair(3) == (3, 3) and _triple((1, 2, 3)) == (1, 2, 3)
    assert convert_oneflow_dtype_to_numpy_dtype(flow.float32) is np.float32
    assert isinstance(flow.float32, flow.dtype) and repr(flow.int64) == "oneflow.int64"
    with pytest.warns(UserWarning, match="just to align the torch.jit.script interface"):
        assert flow.jit.script(len) is len
    assert flow.nn.parallel.DistributedDataParallel is flow.nn.parallel.distributed.DistributedDataParallel


def test_eye():
    assert str(flow.eye(3)) == ("tensor([[1., 0., 0.],\n        [0., 1., 0.],\n        [0., 0., 1.]], "
                                "dtype=oneflow.float32)")
    np.testing.assert_array_equal(flow.eye(2, 3, dtype=flow.int64).numpy(), np.eye(2, 3, dtype=np.int64))


def test_module_dict_and_parameter_containers_register_what_they_hold():
    d = nn.ModuleDict({"b": nn.Linear(2, 3), "a": nn.ReLU()})
    assert list(d.keys()) == ["b", "a"] and "a" in d and len(d) == 2
    d.update([("c", nn.Linear(3, 1))])
    assert [n for n, _ in d.named_parameters()] == ["b.weight", "b.bias", "c.weight", "c.bias"]
    assert isinstance(d.pop("a"), nn.ReLU) and len(d) == 2
    pl = nn.ParameterList([nn.Parameter(flow.ones(2)), nn.Parameter(flow.zeros(3))])
    pl.append(nn.Parameter(flow.ones(1)))
    assert len(pl) == 3 and [tuple(p.shape) for p in pl] == [(2,), (3,), (1,)]
    assert list(dict(pl.named_parameters())) == ["0", "1", "2"]
    pd = nn.ParameterDict({"y": nn.Parameter(flow.ones(1)), "x": nn.Parameter(flow.ones(2))})
    assert list(pd.keys()) == ["x", "y"]  # a plain dict is taken in sorted order (OneFlow 0.9)
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        pl(1)
    ml = nn.ModuleList([nn.ReLU(), nn.Identity(), nn.ReLU()])
    del ml[1]
    assert list(ml._modules.keys()) == ["0", "1"] and isinstance(ml[1], nn.ReLU)
    ml.insert(0, nn.Identity())
    assert isinstance(ml[0], nn.Identity) and len(ml) == 3
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable, but got int"):
        ml.extend(3)


def test_module_api():
    m = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "ReLU", "Linear", "Sequential"]
    assert [n for n, _ in m.named_modules()] == ["", "0", "1", "2"]
    m.eval()
    assert not m[0].training
    m.train()
    assert m[2].training
    m.half()
    assert m[0].weight.dtype is flow.float16 and isinstance(m[0].weight, nn.Parameter)
    m.float()
    m.register_buffer("steps", flow.zeros(1))
    assert [n for n, _ in m.named_buffers()] == ["steps"] and "steps" in m.state_dict()
    m(flow.ones(4, 2)).sum().backward()
    m.zero_grad()
    assert float(m[0].weight.grad.abs().sum().numpy()) == 0.0
    m.zero_grad(set_to_none=True)
    assert m[0].weight.grad is None


def _grads(seed=0):
    rng = np.random.RandomState(seed)
    params = [nn.Parameter(flow.tensor(rng.randn(3, 4).astype(np.float32))),
              nn.Parameter(flow.tensor(rng.randn(5).astype(np.float32)))]
    gs = [rng.randn(3, 4).astype(np.float32), rng.randn(5).astype(np.float32)]
    for p, g in zip(params, gs):
        p.grad = flow.tensor(g)
    return params, gs


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.5, math.inf])
def test_clip_grad_norm_scales_by_the_joint_norm(norm_type):
    params, gs = _grads()
    flat = np.concatenate([g.ravel() for g in gs]).astype(np.float64)
    want_norm = np.abs(flat).max() if norm_type == math.inf else (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)
    total = nn.utils.clip_grad_norm_(params, max_norm=0.5, norm_type=norm_type)
    np.testing.assert_allclose(float(total.numpy()), want_norm, rtol=1e-5)
    coef = min(0.5 / (want_norm + 1e-6), 1.0)
    for p, g in zip(params, gs):
        np.testing.assert_allclose(p.grad.numpy(), g * coef, rtol=1e-5)
    params, gs = _grads()
    nn.utils.clip_grad_norm_(params, max_norm=1e6)  # above the norm: unchanged
    np.testing.assert_allclose(params[0].grad.numpy(), gs[0], rtol=1e-6)


def test_clip_grad_norm_nonfinite_and_clip_value():
    params, _ = _grads()
    params[0].grad = flow.tensor(np.full((3, 4), np.inf, np.float32))
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        nn.utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    params, gs = _grads(1)
    nn.utils.clip_grad_value_(params, 0.3)
    np.testing.assert_allclose(params[1].grad.numpy(), np.clip(gs[1], -0.3, 0.3))


def test_parameters_to_vector_and_back():
    params, _ = _grads()
    v = nn.utils.parameters_to_vector(params)
    np.testing.assert_array_equal(v.numpy(), np.concatenate([p.numpy().ravel() for p in params]))
    nn.utils.vector_to_parameters(flow.arange(17, dtype=flow.float32), params)
    np.testing.assert_array_equal(params[1].numpy(), np.arange(12, 17))
    with pytest.raises(ValueError, match="holds? 17 elements|hold 17 elements"):
        nn.utils.vector_to_parameters(flow.ones(3), params)


def test_weight_norm_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.RandomState(0)
    w = rng.randn(4, 3).astype(np.float32)
    x = rng.randn(2, 3).astype(np.float32)
    m = nn.Linear(3, 4)
    m.weight.data = flow.tensor(w)
    nn.utils.weight_norm(m)
    assert sorted(n for n, _ in m.named_parameters()) == ["bias", "weight_g", "weight_v"]
    tm = torch.nn.Linear(3, 4)
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(w))
        tm.bias.copy_(torch.tensor(m.bias.numpy()))
    tm = torch.nn.utils.weight_norm(tm)
    out = m(flow.tensor(x))
    tout = tm(torch.tensor(x))
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-6)
    out.sum().backward()
    tout.sum().backward()
    np.testing.assert_allclose(m.weight_g.grad.numpy(), tm.weight_g.grad.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(m.weight_v.grad.numpy(), tm.weight_v.grad.numpy(), rtol=1e-4, atol=1e-6)
    nn.utils.remove_weight_norm(m)
    np.testing.assert_allclose(m.weight.numpy(), w, rtol=1e-5)


def test_nn_modules_per_file_paths_as_oneflow_09():
    """`oneflow.nn.modules.<file>` binds the classes OneFlow 0.9 defines in that file (the same objects as nn.*)."""
    import importlib

    import oneflow_compat.nn as nn

    layout = {"conv": ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"],
              "batchnorm": ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"],
              "pooling": ["MaxPool1d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d"],
              "activation": ["ReLU", "GELU", "Softmax", "Hardswish", "SiLU", "LeakyReLU"],
              "loss": ["CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss", "KLDivLoss", "SmoothL1Loss"],
              "normalization": ["LayerNorm", "GroupNorm"], "instancenorm": ["InstanceNorm2d"],
              "sparse": ["Embedding"], "dropout": ["Dropout", "Dropout2d"], "padding": ["ZeroPad2d"],
              "upsampling": ["Upsample"], "pixelshuffle": ["PixelShufflev2"], "linear": ["Linear", "Identity"],
              "container": ["Sequential", "ModuleList", "ModuleDict"], "flatten": ["Flatten"]}
    for file, names in layout.items():
        mod = importlib.import_module("oneflow.nn.modules." + file)
        for n in names:
            assert getattr(mod, n) is getattr(nn, n), (file, n)


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-5), (np.float32, 1e-4)])
def test_a_cnn_of_the_issue_modules_matches_torch_forward_and_backward(dtype, rtol):
    """The modules of issue 21 stacked (Conv2d, BatchNorm2d, GELU, MaxPool2d, Conv1d via reshape, AvgPool2d,
    AdaptiveAvgPool2d, GroupNorm, LayerNorm, SiLU, Hardswish, LeakyReLU, Linear, LogSoftmax, NLLLoss) on the same
    weights as torch: outputs, input gradient and every parameter gradient."""
    torch = pytest.importorskip("torch")
    import oneflow_compat as flow

    def make(nn):
        return nn.Sequential(
            nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.GELU(), nn.MaxPool2d(2),
            nn.Conv2d(4, 6, 3, stride=1, padding=1, groups=2), nn.GroupNorm(3, 6), nn.SiLU(), nn.AvgPool2d(2),
            nn.Conv2d(6, 8, 1), nn.Hardswish(), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.LayerNorm(8),
            nn.Linear(8, 5), nn.LeakyReLU(0.1), nn.Linear(5, 3), nn.LogSoftmax(dim=1))

    fm, tm = make(flow.nn), make(torch.nn).to(torch.float64 if dtype == np.float64 else torch.float32)
    if dtype == np.float64:
        fm = fm.double()
    rng = np.random.default_rng(0)
    with torch.no_grad():
        for (name, tp), fp in zip(tm.named_parameters(), fm.parameters()):
            value = rng.uniform(-0.5, 0.5, tuple(tp.shape)).astype(dtype) + (1.0 if "weight" in name and
                                                                           tp.dim() == 1 else 0.0)
            tp.copy_(torch.tensor(value))
            fp.copy_(flow.tensor(value))
    assert all(p.dtype == (flow.float64 if dtype == np.float64 else flow.float32) for p in fm.parameters())
    x = rng.standard_normal((4, 2, 8, 8)).astype(dtype)
    y = np.array([0, 2, 1, 2])
    fx, tx = flow.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    fl = flow.nn.NLLLoss()(fm(fx), flow.tensor(y))
    tl = torch.nn.NLLLoss()(tm(tx), torch.tensor(y))
    fl.backward()
    tl.backward()
    np.testing.assert_allclose(fl.numpy(), tl.detach().numpy(), rtol=rtol)
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=rtol, atol=rtol * 1e-2)
    for (name, tp), fp in zip(tm.named_parameters(), fm.parameters()):
        np.testing.assert_allclose(fp.grad.numpy(), tp.grad.numpy(), rtol=rtol, atol=rtol * 1e-2, err_msg=name)
