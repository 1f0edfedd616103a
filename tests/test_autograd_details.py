"""Autograd and printing as OneFlow 0.9 has them (issue 21, part 4): retain_grad, tensor hooks, grad_fn names,
requires_grad_/detach, no_grad/enable_grad as context and decorator, the error messages of the basics pages, the
printing of tensors, Parameters and state dicts (en/docs/basics/05_autograd.md, 06_optimization.md,
07_model_load_save.md show the expected text)."""
import collections
import math
import sys

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import nn


def test_retain_grad_keeps_a_non_leaf_gradient_as_the_autograd_page_prints_it():
    n1 = flow.tensor(math.pi / 2, requires_grad=True)
    n2 = flow.sin(n1)
    n2.retain_grad()
    n3 = flow.pow(n2, 2)
    n3.backward()
    assert str(n1.grad) == "tensor(-8.7423e-08, dtype=oneflow.float32)"  # float32 cos(pi/2) * 2
    assert str(n2.grad) == "tensor(2., dtype=oneflow.float32)"
    assert n2.retains_grad and not n2.is_leaf
    assert n3.grad is None  # not retained


def test_retain_grad_on_a_tensor_without_gradient_is_an_error():
    with pytest.raises(RuntimeError, match="Can't retain_grad on Tensor that has requires_grad=False"):
        flow.ones(2).retain_grad()


def test_grad_fn_names_are_oneflows():
    x = flow.ones(1, 5)
    w = flow.randn(5, 3, requires_grad=True)
    b = flow.randn(1, 3, requires_grad=True)
    assert w.grad_fn is None  # a leaf gets its accumulate_grad node once an op records it
    y = flow.matmul(x, w)
    z = y + b
    assert y.grad_fn.name() == "matmul_backward"
    assert z.grad_fn.name() == "add_n_backward"  # same shapes: OneFlow adds with add_n
    assert (y + flow.ones(3)).grad_fn.name() == "broadcast_add_backward"
    assert (y * 2).grad_fn.name() == "scalar_mul_backward"
    assert w.grad_fn.name() == "accumulate_grad" and w.is_leaf
    assert repr(z.grad_fn).startswith("<add_n_backward at 0x")
    assert "grad_fn=<matmul_backward>" in repr(y)
    w.requires_grad_(False)
    assert w.grad_fn is None


def test_backward_twice_and_non_scalar_backward_raise_oneflows_messages():
    n1 = flow.tensor(10.0, requires_grad=True)
    n2 = flow.pow(n1, 2)
    n2.backward()
    with pytest.raises(RuntimeError, match=r"Maybe you try to backward through the node a second time\. Specify "
                                           r"retain_graph=True when calling \.backward\(\) or autograd\.grad\(\) "
                                           r"the first time\."):
        n2.backward()
    y = 3 * flow.randn(1, 2, requires_grad=True) + 1
    with pytest.raises(RuntimeError, match="Grad can be implicitly created only for scalar outputs"):
        y.backward()


def test_retain_graph_accumulates_and_zero_clears():
    n1 = flow.tensor(10.0, requires_grad=True)
    n2 = flow.pow(n1, 2)
    n2.backward(retain_graph=True)
    assert str(n1.grad) == "tensor(20., dtype=oneflow.float32)"
    n2.backward()
    assert str(n1.grad) == "tensor(40., dtype=oneflow.float32)"
    n1.grad.zero_()
    assert float(n1.grad.numpy()) == 0.0


def test_register_hook_changes_the_gradient_and_post_accumulation_hooks_see_grad():
    x = flow.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    assert x.register_hook(lambda g: g * 10) is None  # OneFlow 0.9 returns None (no removable handle)
    x._register_post_grad_accumulation_hook(lambda g: seen.append(g.numpy().copy()))
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [20.0, 40.0])
    np.testing.assert_allclose(seen[0], [20.0, 40.0])
    x = flow.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])
    y = x * 3  # a hook on a non-leaf replaces the gradient flowing on
    y.register_hook(lambda g: g * 0)
    x.grad = None
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.0])
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        flow.ones(1).register_hook(lambda g: g)


def test_leaves_are_accumulated_as_soon_as_their_gradient_is_complete():
    # the last layer's weight is complete first (OneFlow's AccumulateGrad order, what DDP's buckets rely on)
    order = []
    a = flow.tensor([1.0], requires_grad=True)
    b = flow.tensor([2.0], requires_grad=True)
    for name, t in (("a", a), ("b", b)):
        t._register_post_grad_accumulation_hook(lambda g, name=name: order.append(name))
    h = a * 3
    out = (h * b).sum()
    out.backward()
    assert order == ["b", "a"]


def test_no_grad_enable_grad_as_context_and_decorator():
    x = flow.ones(2, requires_grad=True)
    with flow.no_grad():
        assert not (x * 2).requires_grad
        with flow.enable_grad():
            assert (x * 2).requires_grad

    @flow.no_grad()
    def f(t):
        return t * 2

    @flow.no_grad
    def g(t):
        return t * 2

    assert not f(x).requires_grad and not g(x).requires_grad and (x * 2).requires_grad
    z = (x * 2).detach()
    assert not z.requires_grad and z.is_leaf
    w = flow.ones(2)
    assert w.requires_grad_() is w and w.requires_grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point can require gradients"):
        flow.ones(2, dtype=flow.int64).requires_grad_()


def test_format_of_0d_tensors_is_the_python_number():
    loss = flow.tensor(0.004111831542104483, dtype=flow.float32)
    assert f"{loss}" == repr(float(np.float32(0.004111831542104483)))
    assert f"{loss:>7f}" == "0.004112"
    v = flow.tensor([1.0, 2.0])
    assert f"{v}" == str(v)
    with pytest.raises(TypeError):
        f"{v:>7f}"


def test_parameters_and_state_dicts_print_as_oneflow_09():
    m = nn.Linear(2, 3)
    m.load_state_dict({"weight": flow.ones(3, 2), "bias": flow.zeros(3)})
    text = str(m.state_dict())

    class Printed:  # a value whose repr is the given text: the dict's own repr comes from the running Python
        def __init__(self, text):
            self.text = text

        def __repr__(self):
            return self.text

    # OneFlow 0.9's state_dict is an OrderedDict: Python prints it ("OrderedDict([('weight', ...)])" before 3.12,
    # "OrderedDict({'weight': ...})" since; the GPU run's machine had 3.12); the tensors print as OneFlow 0.9's
    assert text == repr(collections.OrderedDict([
        ("weight", Printed("tensor([[1., 1.],\n        [1., 1.],\n        [1., 1.]], dtype=oneflow.float32, "
                           "requires_grad=True)")),
        ("bias", Printed("tensor([0., 0., 0.], dtype=oneflow.float32, requires_grad=True)"))]))
    assert text.startswith("OrderedDict([('weight', tensor([[1., 1.],") if sys.version_info < (3, 12) else \
        text.startswith("OrderedDict({'weight': tensor([[1., 1.],")
    assert m.state_dict()["weight"] is m.weight  # OneFlow 0.9 keeps the Parameter itself
    assert isinstance(m.state_dict(), collections.OrderedDict)
    p = nn.Parameter(flow.tensor([[2.0], [3.0]]))
    assert repr(p) == "tensor([[2.],\n        [3.]], dtype=oneflow.float32, requires_grad=True)"
    (p * 1).sum().backward()
    assert repr(p) == "tensor([[2.],\n        [3.]], dtype=oneflow.float32, grad_fn=<accumulate_grad>)"
