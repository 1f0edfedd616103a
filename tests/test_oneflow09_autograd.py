"""Autograd error texts as OneFlow 0.9 words them (v0.9.0 oneflow/core/framework/op_expr_grad_function.h)."""
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
