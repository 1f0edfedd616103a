"""Inputs on two devices or two placements: OneFlow 0.9 refuses the op with its RuntimeError and words
(core/framework/local_tensor_infer_cache.cpp CheckInputDeviceIdentical, global_tensor_infer_cache.cpp
CheckInputParallelDescIdentical, op_interpreter/lazy_op_interpreter.cpp @ v0.9.0; the test
python/oneflow/test/exceptions/test_multi_input_with_diff_device_or_placement.py). The check is about the devices
the user named: "cuda" tensors that run on the CPU (no usable GPU) are refused as on a GPU. The mixes 0.9 allows
still work: a 0-d CPU tensor with add / mul / in-place div / maximum / minimum (CastDeviceForCPUScalarTensor,
functional/impl/binary_functor.cpp), CPU index tensors for a CUDA tensor, a device argument (`to`)."""
import numpy as np
import pytest

import oneflow_compat as flow
from simulated_ranks import on_ranks

DEVICE_WORDS = "Expected all tensors to be on the same device, but found at least two devices, "
PLACEMENT_WORDS = "Expected all tensors to be on the same placement, but found at least two placements, "


def _raised(fn):
    with pytest.raises(RuntimeError) as info:
        fn()
    return str(info.value)


def test_cpu_and_cuda_inputs_refused_with_oneflow_words():
    x = flow.tensor([1, 2, 3, 4])
    y = flow.tensor([2, 4, 6, 8], device="cuda")
    assert (DEVICE_WORDS + "cpu:0 (positional 0) and cuda:0 (positional 1)!") in _raised(lambda: flow.add(x, y))
    assert (DEVICE_WORDS + "cuda:0 (positional 0) and cpu:0 (positional 1)!") in _raised(lambda: y * x)
    assert (DEVICE_WORDS + "cpu:0 (positional 0) and cuda:0 (positional 1)!") in _raised(lambda: flow.cat([x, y]))
    # the third input differs: its position is named
    z = flow.tensor([1, 1, 1, 1], device="cuda")
    msg = _raised(lambda: flow.stack([z, y, x]))
    assert (DEVICE_WORDS + "cuda:0 (positional 0) and cpu:0 (positional 2)!") in msg


def test_cpu_scalar_tensor_moves_only_where_oneflow_moves_it():
    y = flow.tensor([2.0, -4.0, 6.0], device="cuda")
    s = flow.tensor(3.0)  # 0-d, on the CPU
    ref = np.array([2.0, -4.0, 6.0], np.float32)
    for out, want in ((y + s, ref + 3), (s + y, 3 + ref), (y * s, ref * 3), (s * y, 3 * ref),
                      (flow.maximum(y, s), np.maximum(ref, 3)), (flow.minimum(s, y), np.minimum(3, ref))):
        assert out.device == flow.device("cuda")
        np.testing.assert_allclose(out.numpy(), want)
    w = y.clone()
    w /= s  # InplaceDivFunctor moves it too
    assert w.device == flow.device("cuda")
    np.testing.assert_allclose(w.numpy(), ref / 3, rtol=1e-6)
    # every functor built on BinaryFunctor / BinaryFloatFunctor / InplaceableBinaryFunctor moves it too
    # (functional/impl/binary_functor.h @ v0.9.0): sub, pow, atan2, floor division, fmod, comparisons, logical and
    for out, want in ((y - s, ref - 3), (s - y, 3 - ref), (y ** s, ref ** 3), (flow.atan2(s, y), np.arctan2(3, ref)),
                      (flow.floor_divide(y, s), np.floor_divide(ref, 3)), (flow.fmod(y, s), np.fmod(ref, 3)),
                      (y > s, ref > 3), (flow.eq(s, y), ref == 3), (y <= s, ref <= 3),
                      (flow.logical_and(y, s), np.logical_and(ref, 3))):
        assert out.device == flow.device("cuda")
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    # other ops do not: the op is refused
    assert (DEVICE_WORDS + "cuda:0 (positional 0) and cpu:0 (positional 1)!") in _raised(
        lambda: flow.stack([flow.tensor(1.0, device="cuda"), s]))
    # a CPU tensor with one element is not a scalar tensor
    assert DEVICE_WORDS in _raised(lambda: y + flow.tensor([3.0]))


def test_in_place_ops_move_only_the_other_operand():
    # add_ / sub_ / div_ (inplace=true) move a 0-d CPU `other` onto x's device, never x itself; mul_
    # (InplaceMulFunctor) moves nothing (functional/impl/binary_functor.cpp @ v0.9.0): refused by the op's check
    y = flow.tensor([2.0, -4.0, 6.0], device="cuda")
    s = flow.tensor(3.0)
    for method, want in (("add_", [5.0, -1.0, 9.0]), ("sub_", [-1.0, -7.0, 3.0]), ("div_", [2 / 3, -4 / 3, 2.0])):
        w = y.clone()
        getattr(w, method)(s)
        assert w.device == flow.device("cuda")
        np.testing.assert_allclose(w.numpy(), want, rtol=1e-6)
    w = y.clone()
    w -= s
    np.testing.assert_allclose(w.numpy(), [-1.0, -7.0, 3.0])
    for fn in (lambda: y.clone().mul_(s), lambda: y.clone().__imul__(s)):
        assert (DEVICE_WORDS + "cuda:0 (positional 0) and cpu:0 (positional 1)!") in _raised(fn)
    c = flow.tensor(3.0, device="cuda")
    for method in ("add_", "sub_", "mul_", "div_"):
        scalar = flow.tensor(1.0)
        msg = _raised(lambda: getattr(scalar, method)(c))
        assert (DEVICE_WORDS + "cpu:0 (positional 0) and cuda:0 (positional 1)!") in msg, method
        assert scalar.device == flow.device("cpu") and scalar.item() == 1.0  # neither moved nor written
    with pytest.raises(RuntimeError, match="Can not expand origin shape"):  # the shape check comes first
        flow.tensor(1.0).add_(y)


def test_allowed_mixes_still_work():
    x = flow.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], device="cuda")
    idx = flow.tensor([2, 0])  # CPU index tensor for a CUDA tensor
    np.testing.assert_allclose(x[idx].numpy(), [[5.0, 6.0], [1.0, 2.0]])
    x2 = x.clone()
    x2[idx] = flow.tensor(0.0)  # a CPU 0-d value written into a CUDA tensor
    np.testing.assert_allclose(x2.numpy(), [[0.0, 0.0], [3.0, 4.0], [0.0, 0.0]])
    # `to` moves a CPU tensor to the other's device first: then the op runs
    c = flow.tensor([[1.0, 1.0]])
    np.testing.assert_allclose((x + c.to("cuda")).numpy(), [[2.0, 3.0], [4.0, 5.0], [6.0, 7.0]])
    np.testing.assert_allclose((x.cpu() + c).numpy(), [[2.0, 3.0], [4.0, 5.0], [6.0, 7.0]])
    # one device, one module: a CUDA model trains on CUDA data
    m = flow.nn.Linear(2, 1).to("cuda")
    loss = m(x).sum()
    loss.backward()
    np.testing.assert_allclose(m.weight.grad.numpy(), [[9.0, 12.0]])


def test_two_placements_refused_with_oneflow_words():
    x = flow.tensor([1, 2], placement=flow.placement("cpu", [0]), sbp=flow.sbp.broadcast)
    y = flow.tensor([1, 2], placement=flow.placement("cuda", [0]), sbp=flow.sbp.broadcast)
    with pytest.raises(RuntimeError) as info:
        flow.add(x, y)
    assert isinstance(info.value, ValueError)  # (what this project raised before: both catch it)
    assert (PLACEMENT_WORDS + 'oneflow.placement(type="cpu", ranks=[0]) (positional 0) and '
            'oneflow.placement(type="cuda", ranks=[0]) (positional 1)!') in str(info.value)


def test_two_placements_on_two_ranks_as_oneflow_test():
    def body():
        x = flow.tensor([1, 2, 3, 4], placement=flow.placement("cuda", [0]), sbp=flow.sbp.broadcast)
        y = flow.tensor([2, 4, 6, 8], placement=flow.placement("cuda", [1]), sbp=flow.sbp.broadcast)
        try:
            flow.add(x, y)
        except RuntimeError as e:
            return str(e)
        return None

    for msg in on_ranks(2, body):
        assert msg is not None and msg.startswith(PLACEMENT_WORDS)
        assert ('ranks=[0]) (positional 0) and oneflow.placement(type="cuda", ranks=[1]) (positional 1)!') in msg


def test_graph_refuses_mixed_devices_with_lazy_words():
    class AddGraph(flow.nn.Graph):
        def build(self, a, b):
            return a + b

    g = AddGraph()
    msg = _raised(lambda: g(flow.ones(2), flow.ones(2, device="cuda")))
    assert msg.startswith("Lazy nn.Graph name: %s encountered ERROR in module/op_name: add. " % g.name)
    assert msg.endswith(DEVICE_WORDS + "cpu:0 (positional 0) and cuda:0 (positional 1)! Please use tensor.to() "
                        "to synchronize all the input with the same device.")

    class MulGraph(flow.nn.Graph):
        def build(self, a, b):
            return a * b

    x = flow.ones(2, placement=flow.placement("cpu", [0]), sbp=flow.sbp.broadcast)
    y = flow.ones(2, placement=flow.placement("cuda", [0]), sbp=flow.sbp.broadcast)
    msg = _raised(lambda: MulGraph()(x, y))
    assert "encountered ERROR in module/op_name: multiply. " + PLACEMENT_WORDS in msg
    assert msg.endswith("Please use tensor.to_global() to synchronize all the input with the same placement.")


def test_graph_reads_a_cpu_scalar_input_with_a_cuda_one():
    class MulGraph(flow.nn.Graph):
        def build(self, a, b):
            return a * b

    out = MulGraph()(flow.tensor([1.0, 2.0], device="cuda"), flow.tensor(3.0))
    assert out.device == flow.device("cuda")
    np.testing.assert_allclose(out.numpy(), [3.0, 6.0])


def test_moves_between_devices_keep_the_history():
    # OneFlow 0.9 moves with its copy op: the moved tensor is not a leaf, the gradient reaches the source on its
    # own device (the moved 0-d CPU operand of a binary op too)
    w = flow.tensor([1.0, 2.0], requires_grad=True)
    h = (w * 2).to("cuda")
    assert not h.is_leaf and h.requires_grad and h.device == flow.device("cuda")
    (h * h).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [8.0, 16.0])  # d/dw (2w)^2 = 8w
    assert w.grad.device == flow.device("cpu")
    c = flow.tensor([3.0], device="cuda", requires_grad=True)
    c.cpu().sum().backward()
    assert c.grad.device == flow.device("cuda")
    np.testing.assert_allclose(c.grad.numpy(), [1.0])
    s = flow.tensor(3.0, requires_grad=True)
    y = flow.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    (y * s).sum().backward()
    np.testing.assert_allclose(s.grad.numpy(), 3.0)
    np.testing.assert_allclose(y.grad.numpy(), [3.0, 3.0])
    with flow.no_grad():
        assert not w.cuda().requires_grad
    x = flow.tensor([1.0, 2.0], requires_grad=True)
    (g,) = flow.autograd.grad(x.cuda().pow(2).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])
    assert flow.tensor([1.5], dtype=flow.bfloat16).cuda().dtype is flow.bfloat16


def test_allowed_mixes_cross_a_real_host_device_boundary(monkeypatch):
    # "cuda" on the strict fake device (CuPy's rules: no host/device mixing), "cpu" on numpy: as on a GPU machine
    import strict_device

    strict_device.install(monkeypatch, "auto", allow_syncs=True)
    y = flow.tensor([2.0, -4.0], device="cuda", requires_grad=True)
    s = flow.tensor(3.0, requires_grad=True)
    out = y * s + flow.tensor(1.0)
    assert isinstance(out._value.pieces[0], strict_device.StrictArray)
    np.testing.assert_allclose(out.numpy(), [7.0, -11.0])
    out.sum().backward()
    np.testing.assert_allclose(s.grad.numpy(), -2.0)
    assert isinstance(s.grad._value.pieces[0], np.ndarray)  # the gradient went back to the host
    np.testing.assert_allclose(y.grad.numpy(), [3.0, 3.0])
    x = flow.tensor([[1.0, 2.0], [3.0, 4.0]], device="cuda")
    np.testing.assert_allclose(x[flow.tensor([1])].numpy(), [[3.0, 4.0]])
    assert DEVICE_WORDS in _raised(lambda: x + flow.ones(2, 2))

    class MulGraph(flow.nn.Graph):
        def build(self, a, b):
            return a * b

    g = MulGraph()(flow.tensor([1.0, 2.0], device="cuda"), flow.tensor(3.0))
    np.testing.assert_allclose(g.numpy(), [3.0, 6.0])
