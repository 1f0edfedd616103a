"""oneflow._C's `bind_python: true` names (functional_api.yaml v0.9.0) and the yaml's full signatures of names bound
earlier (add / sub / mul / relu / layer_norm / conv2d / normalize / local_all_reduce), against numpy / torch; the
earlier forms still work; two simulated ranks; bad input."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import _C
from simulated_ranks import on_ranks

try:
    import torch
except ImportError:
    torch = None

RNG = np.random.RandomState(4)
A = RNG.randn(3, 4).astype(np.float32)
B = RNG.randn(3, 4).astype(np.float32)


def test_comparisons_and_logic_each_overload():
    x, y = flow.tensor(A), flow.tensor(B)
    np.testing.assert_array_equal(_C.broadcast_equal(input=x, other=x).numpy(), np.ones((3, 4), bool))
    np.testing.assert_array_equal(_C.not_equal(input=x, other=y).numpy(), A != B)
    np.testing.assert_array_equal(_C.greater(input=x, other=y).numpy(), A > B)
    np.testing.assert_array_equal(_C.greater(0.0, x).numpy(), 0.0 > A)
    np.testing.assert_array_equal(_C.greater_equal(x, 0.0).numpy(), A >= 0.0)
    np.testing.assert_array_equal(_C.greater_equal(0.5, x).numpy(), 0.5 >= A)
    np.testing.assert_array_equal(_C.broadcast_equal(2, flow.tensor([2, 3])).numpy(), [True, False])
    p, q = flow.tensor(A > 0), flow.tensor(B > 0)
    np.testing.assert_array_equal(_C.logical_and(input=p, other=q).numpy(), (A > 0) & (B > 0))
    np.testing.assert_array_equal(_C.logical_or(input=p, other=q).numpy(), (A > 0) | (B > 0))
    np.testing.assert_array_equal(_C.logical_and(p, 1).numpy(), A > 0)
    np.testing.assert_array_equal(_C.logical_not(input=p).numpy(), ~(A > 0))
    np.testing.assert_array_equal(_C.where(condition=p, x=x, y=y).numpy(), np.where(A > 0, A, B))
    np.testing.assert_array_equal(_C.where(p, 1.0, y).numpy(), np.where(A > 0, 1.0, B))
    np.testing.assert_array_equal(_C.where(p, x, -1.0).numpy(), np.where(A > 0, A, -1.0))
    np.testing.assert_array_equal(_C.where(p, 1.0, 0.0).numpy(), np.where(A > 0, 1.0, 0.0))
    np.testing.assert_array_equal(_C.masked_fill(input=x, mask=p, value=7.0).numpy(), np.where(A > 0, 7.0, A))


def test_arithmetic_full_signatures():
    x, y = flow.tensor(A), flow.tensor(B)
    np.testing.assert_allclose(_C.add(input=x, other=y, alpha=2).numpy(), A + 2 * B, rtol=1e-6)
    np.testing.assert_allclose(_C.add(1.5, y, alpha=2).numpy(), 1.5 + 2 * B, rtol=1e-6)
    np.testing.assert_allclose(_C.add([x, y, x]).numpy(), 2 * A + B, rtol=1e-6)
    z = flow.tensor(A)
    assert _C.add(z, 1.0, inplace=True) is z
    np.testing.assert_allclose(z.numpy(), A + 1, rtol=1e-6)
    np.testing.assert_allclose(_C.sub(input=x, other=y, alpha=3).numpy(), A - 3 * B, rtol=1e-6)
    np.testing.assert_allclose(_C.sub(1.0, y).numpy(), 1.0 - B, rtol=1e-6)
    np.testing.assert_allclose(_C.mul(x, 2.0, inplace=False).numpy(), 2 * A, rtol=1e-6)
    np.testing.assert_allclose(_C.mul(2.0, y).numpy(), 2 * B, rtol=1e-6)
    m = flow.tensor(A)
    assert _C.mul_(input=m, other=y) is m
    np.testing.assert_allclose(m.numpy(), A * B, rtol=1e-6)
    r = flow.tensor(A)
    assert _C.relu(x=r, inplace=True) is r
    np.testing.assert_array_equal(r.numpy(), np.maximum(A, 0))


def test_gradient_through_add_alpha_and_where():
    x = flow.tensor(A, requires_grad=True)
    (_C.add(x, x, alpha=3) + _C.where(flow.tensor(A > 0), x, 0.0)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 4 + (A > 0), rtol=1e-6)


def test_layer_norm_yaml_form_and_the_functional_form():
    x = RNG.randn(2, 3, 4).astype(np.float32)
    got = _C.layer_norm(x=flow.tensor(x), begin_norm_axis=1, begin_params_axis=1, epsilon=1e-5).numpy()
    flat = x.reshape(2, -1).astype(np.float64)
    want = ((flat - flat.mean(1, keepdims=True)) / np.sqrt(flat.var(1, keepdims=True) + 1e-5)).reshape(x.shape)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    w = RNG.rand(4).astype(np.float32)
    got = _C.layer_norm(flow.tensor(x), [4], flow.tensor(w), None, 1e-5).numpy()  # the earlier form
    last = x.astype(np.float64)
    want = (last - last.mean(-1, keepdims=True)) / np.sqrt(last.var(-1, keepdims=True) + 1e-5) * w
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.skipif(torch is None, reason="torch is not installed")
def test_conv2d_channels_last_and_normalize():
    x = RNG.randn(1, 2, 5, 5).astype(np.float32)
    w = RNG.randn(3, 2, 3, 3).astype(np.float32)
    want = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding=1).numpy()
    got = _C.conv2d(input=flow.tensor(x.transpose(0, 2, 3, 1).copy()), weight=flow.tensor(w.transpose(0, 2, 3, 1)
                                                                                          .copy()),
                    padding=1, channel_pos="channels_last")
    np.testing.assert_allclose(got.numpy(), want.transpose(0, 2, 3, 1), rtol=1e-4, atol=1e-4)
    got = _C.normalize(input=flow.tensor(A), p=2.0, dim=1, eps=1e-12, use_l2_norm_kernel=True)
    np.testing.assert_allclose(got.numpy(), A / np.linalg.norm(A, axis=1, keepdims=True), rtol=1e-5)


def test_local_all_reduce_inplace_on_two_ranks():
    def body():
        rank = flow.env.get_rank()
        x = flow.tensor(A[rank])
        new = _C.local_all_reduce(x, inplace=False)
        same = _C.local_all_reduce(x, inplace=True)
        return new.numpy(), same is x, x.numpy()

    for new, same, x in on_ranks(2, body):
        np.testing.assert_allclose(new, A[0] + A[1], rtol=1e-6)
        assert same
        np.testing.assert_allclose(x, A[0] + A[1], rtol=1e-6)


def test_bad_input_is_named():
    with pytest.raises(TypeError, match=r"^layer_norm\(\) missing required argument\(s\): 'begin_params_axis', "
                                        r"'epsilon'$"):
        _C.layer_norm(flow.tensor(A), 1)
    with pytest.raises(TypeError, match=r"^where\(\): argument 'condition' must be Tensor, not bool$"):
        _C.where(True, flow.tensor(A), flow.tensor(B))
    with pytest.raises(TypeError, match=r"^greater\(\): argument 'other' must be Tensor, not float$"):
        _C.greater(1.0, 2.0)


def test_half_layer_norm_is_computed_in_float():
    # the layer_norm kernel read `.type` of a numpy scalar type for half inputs (OneFlow's test_layer_norm runs them)
    x = RNG.randn(4, 8).astype(np.float16)
    got = _C.layer_norm(flow.tensor(x), begin_norm_axis=1, begin_params_axis=1, epsilon=1e-5)
    assert got.dtype == flow.float16
    xf = x.astype(np.float64)
    want = (xf - xf.mean(1, keepdims=True)) / np.sqrt(xf.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(got.numpy().astype(np.float64), want, rtol=1e-2, atol=1e-2)
