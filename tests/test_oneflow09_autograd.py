"""Autograd error texts as OneFlow 0.9 words them (v0.9.0 oneflow/core/framework/op_expr_grad_function.h)."""
import numpy as np
import pytest

import oneflow as flow
from oneflow import autograd


class _TwoGrads(autograd.Function):
    @staticmethod
    def forward(ctx, x, y, z):
        return x + y + z

    @staticmethod
    def backward(ctx, dz):
        return None, dz


def test_wrong_number_of_gradients_names_the_function_as_oneflow_does():
    y = flow.randn(2, 3).requires_grad_()
    out = _TwoGrads.apply(flow.randn(2, 3), y, flow.randn(2, 3))
    with pytest.raises(RuntimeError) as e:
        out.sum().backward()
    # OneFlow's CHECK message carries the "RuntimeError: " text itself
    assert str(e.value) == ("RuntimeError: function _TwoGrads returned an incorrect number of gradients "
                            "(expected 3, got 2)")


def _recording_hooks():
    kept = []

    def pack(t):
        kept.append(t)
        return len(kept) - 1

    return kept, pack, lambda i: kept[i]


def test_saved_tensor_hooks_see_multiplys_tensors_y_first():
    # v0.9.0 core/autograd/gradient_funcs/broadcast_binary_ops.cpp (BroadcastMul): y is saved before x
    x = flow.tensor([1.0, 2.0]).requires_grad_()
    y = flow.tensor([3.0, 5.0]).requires_grad_()
    kept, pack, unpack = _recording_hooks()
    with flow.autograd.graph.saved_tensors_hooks(pack, unpack):
        z = x * y
    z.sum().backward()
    assert len(kept) == 2 and kept[0] is y and kept[1] is x
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 5.0])
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 2.0])


def test_saved_tensor_hooks_apply_to_a_functions_saved_tensors():
    class Mul(autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, dz):
            a, b = ctx.saved_tensors
            return dz * b, dz * a

    x = flow.tensor([1.0, 2.0]).requires_grad_()
    y = flow.tensor([3.0, 5.0]).requires_grad_()
    kept = []

    def pack(t):
        kept.append(t)
        return len(kept) - 1

    def unpack(i):
        return kept[i] * 10  # what unpack returns is what backward reads

    with flow.autograd.graph.saved_tensors_hooks(pack, unpack):
        z = Mul.apply(x, y)
    z.sum().backward()
    assert len(kept) == 2 and kept[0] is x and kept[1] is y
    np.testing.assert_array_equal(x.grad.numpy(), [30.0, 50.0])
    np.testing.assert_array_equal(y.grad.numpy(), [10.0, 20.0])


def test_backward_of_a_tensor_without_grad_uses_oneflows_text():
    # api/python/autograd/autograd.cpp CheckAndInitOutGrads: the text starts with "\nRuntimeError: "
    with pytest.raises(RuntimeError) as e:
        flow.ones(4, 4).backward()
    assert str(e.value) == "\nRuntimeError: element 0 of tensors does not require grad and does not have a grad_fn"
    x = flow.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="element 1 of tensors does not require grad"):
        flow.autograd.grad([x.sum(), flow.ones(1).sum()], [x])


def test_floor_ceil_round_sign_have_a_zero_gradient():
    # user/ops/math_unary_elementwise_seq.h (v0.9.0): their backward fills zeros, so outputs require grad
    x = flow.tensor([0.3, -1.7, 2.5], requires_grad=True)
    for name in ("floor", "ceil", "round", "sign"):
        y = getattr(x, name)()
        assert y.requires_grad and y.grad_fn is not None
        (y * 3 + x).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0, 1.0])
        x.grad = None
    assert not flow.ones(2, dtype=flow.int64).floor().requires_grad


def test_post_grad_accumulation_hook_result_becomes_the_grad():
    # core/autograd/autograd_engine.cpp (v0.9.0): a tensor the hook returns replaces acc_grad; None keeps it
    x = flow.ones(2, 3, requires_grad=True)
    x._register_post_grad_accumulation_hook(lambda g: g * 2 + 1)
    (x.sum() + (x * 2).sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 7.0))
    z = flow.ones(2, 3, requires_grad=True)

    def bump(g):
        g.add_(1)

    z._register_post_grad_accumulation_hook(bump)
    (z.sum() + (z * 2).sum()).backward()
    np.testing.assert_array_equal(z.grad.numpy(), np.full((2, 3), 4.0))
