"""Gradients read inside `nn.Graph.build` (OneFlow 0.9: `x.retain_grad()`, `loss.backward()`, then `x.grad`,
`h.grad`, `self.model.weight.grad` are the job's lazy gradient blobs, returned as graph outputs or used by further
ops; test_autograd_function.py::test_graph_test_multi_input at v0.9.0). Compared with eager autograd on the same
program and with the gradients written out in numpy here; a tensor that does not require grad gives 0.9's
behaviour (retain_grad refused with tensor_impl.cpp's message, `.grad` None). Two ranks: test_graph_retain_grad_mpi.py."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import nn


def _setup(seed=3):
    rng = np.random.RandomState(seed)
    x = rng.randn(4, 3).astype(np.float32)
    y = rng.randn(4, 2).astype(np.float32)
    w = rng.randn(2, 3).astype(np.float32)
    b = rng.randn(2).astype(np.float32)
    model = nn.Linear(3, 2)
    with flow.no_grad():
        model.weight.copy_(flow.tensor(w))
        model.bias.copy_(flow.tensor(b))
    return model, x, y, w, b


def _numpy_grads(x, y, w, b):
    """loss = Σ tanh(x Wᵀ + b) * y: d/dh = (1 - tanh²(h)) y, d/dx = dh W, d/dW = dhᵀ x, d/db = Σ_rows dh."""
    h = x @ w.T + b
    dh = (1 - np.tanh(h) ** 2) * y
    return {"loss": (np.tanh(h) * y).sum(), "x": dh @ w, "h": dh, "w": dh.T @ x, "b": dh.sum(0)}


class _GradGraph(nn.Graph):
    def __init__(self, model, lr):
        super().__init__()
        self.model = model
        self.add_optimizer(flow.optim.SGD(model.parameters(), lr=lr))

    def build(self, x, y):
        x.retain_grad()
        h = self.model(x)
        h.retain_grad()
        loss = (flow.tanh(h) * y).sum()
        loss.backward()
        w = self.model.weight
        # the gradient blobs as outputs, and as inputs of further ops (which read the weight before its update)
        return loss, x.grad, h.grad, w.grad, self.model.bias.grad, x.grad * 2 + 1, w.grad + w


def test_input_intermediate_and_parameter_gradients_equal_eager_and_numpy():
    model, x, y, w, b = _setup()
    ref = _numpy_grads(x, y, w, b)
    # eager, on the same module before the graph's update
    ex = flow.tensor(x, requires_grad=True)
    eh = model(ex)
    eh.retain_grad()
    (flow.tanh(eh) * flow.tensor(y)).sum().backward()
    eager = {"x": ex.grad.numpy().copy(), "h": eh.grad.numpy().copy(), "w": model.weight.grad.numpy().copy(),
             "b": model.bias.grad.numpy().copy()}
    model.zero_grad()

    gx = flow.tensor(x, requires_grad=True)
    loss, x_grad, h_grad, w_grad, b_grad, x_grad_2p1, w_grad_pw = _GradGraph(model, lr=0.0)(gx, flow.tensor(y))
    got = {"x": x_grad.numpy(), "h": h_grad.numpy(), "w": w_grad.numpy(), "b": b_grad.numpy()}
    np.testing.assert_allclose(loss.numpy(), ref["loss"], rtol=1e-5)
    for k in got:
        assert got[k].shape == ref[k].shape, k
        np.testing.assert_allclose(got[k], ref[k], rtol=1e-5, atol=1e-6, err_msg=k)
        np.testing.assert_allclose(got[k], eager[k], rtol=1e-5, atol=1e-6, err_msg=k)
    np.testing.assert_allclose(x_grad_2p1.numpy(), 2 * ref["x"] + 1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w_grad_pw.numpy(), ref["w"] + w, rtol=1e-5, atol=1e-6)
    assert not x_grad.is_lazy and not x_grad.requires_grad
    assert gx.grad is None  # the eager tensor passed in gets no gradient from the graph, as 0.9's


def test_parameter_still_updates_with_the_optimizer_and_grads_follow_it():
    model, x, y, w, b = _setup(4)
    lr = 0.5
    graph = _GradGraph(model, lr=lr)
    gx, gy = flow.tensor(x, requires_grad=True), flow.tensor(y)
    for _ in range(2):
        ref = _numpy_grads(x, y, w, b)
        _, x_grad, _, w_grad, b_grad, _, w_grad_pw = graph(gx, gy)
        np.testing.assert_allclose(x_grad.numpy(), ref["x"], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(w_grad.numpy(), ref["w"], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(w_grad_pw.numpy(), ref["w"] + w, rtol=1e-5, atol=1e-6)  # pre-update weight
        w, b = w - lr * ref["w"], b - lr * ref["b"]
        np.testing.assert_allclose(model.weight.numpy(), w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(model.bias.numpy(), b, rtol=1e-5, atol=1e-6)


def test_oneflow_09_custom_function_multi_input():
    """OneFlow 0.9's test_graph_test_multi_input: autograd.Functions with their own backward inside build."""
    class MyMul(flow.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, z_grad):
            x, y = ctx.saved_tensors
            return 2 * y * z_grad, 3 * x * z_grad

    class MyAdd(flow.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return 2 * x + y

        @staticmethod
        def backward(ctx, z_grad):
            return z_grad, 2 * z_grad

    model = nn.Linear(5, 4, bias=False)

    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(flow.optim.SGD(self.model.parameters(), lr=0.0))

        def build(self, x, y):
            x.retain_grad()
            y.retain_grad()
            self.model.weight.retain_grad()
            z = MyAdd().apply(MyMul().apply(x, y), self.model.weight)
            z.sum().backward()
            return z, x.grad, y.grad, self.model.weight.grad

    rng = np.random.RandomState(0)
    a, b, w = (rng.randn(4, 5).astype(np.float32) for _ in range(3))
    with flow.no_grad():
        model.weight.copy_(flow.tensor(w))
    z, a_grad, b_grad, w_grad = G()(flow.tensor(a, requires_grad=True), flow.tensor(b, requires_grad=True))
    np.testing.assert_allclose(z.numpy(), 2 * a * b + w, rtol=1e-6)
    # the custom backwards, not the forwards' derivatives: MyAdd hands its first input z_grad (1) and its second
    # 2 z_grad; MyMul hands x 2 y z_grad and y 3 x z_grad
    np.testing.assert_allclose(a_grad.numpy(), 2 * b, rtol=1e-6)
    np.testing.assert_allclose(b_grad.numpy(), 3 * a, rtol=1e-6)
    np.testing.assert_allclose(w_grad.numpy(), np.full((4, 5), 2.0), rtol=1e-6)


def test_tensor_without_requires_grad_behaves_as_0_9():
    model, x, y, _, _ = _setup()
    seen = {}

    class G(nn.Graph):
        def __init__(self, refuse):
            super().__init__()
            self.model = model
            self.refuse = refuse
            self.add_optimizer(flow.optim.SGD(model.parameters(), lr=0.0))

        def build(self, x, y):
            if self.refuse:
                y.retain_grad()  # y was passed in without requires_grad
            seen["before"] = x.grad
            h = self.model(x)
            loss = (h * y).sum()
            loss.backward()
            seen["x"] = x.grad  # not retained: None, as a non-leaf's in 0.9
            seen["y"] = y.grad
            seen["h"] = h.grad
            return loss

    with pytest.raises(RuntimeError, match="^Can't retain_grad on Tensor that has requires_grad=False$"):
        G(True)(flow.tensor(x, requires_grad=True), flow.tensor(y))
    G(False)(flow.tensor(x, requires_grad=True), flow.tensor(y))
    assert seen == {"before": None, "x": None, "y": None, "h": None}


def test_frozen_parameter_and_unreached_tensor_have_no_gradient():
    model, x, y, _, _ = _setup()
    model.bias.requires_grad_(False)
    seen = {}

    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(flow.optim.SGD([model.weight], lr=0.0))

        def build(self, x, y):
            x.retain_grad()
            side = x * 3  # not on the loss's path
            side.retain_grad()
            loss = self.model(x).sum()
            loss.backward()
            seen["bias"] = self.model.bias.grad
            seen["side"] = side.grad
            return x.grad, self.model.weight.grad

    x_grad, w_grad = G()(flow.tensor(x, requires_grad=True), flow.tensor(y))
    assert seen == {"bias": None, "side": None}
    np.testing.assert_allclose(x_grad.numpy(), np.broadcast_to(model.weight.numpy().sum(0), (4, 3)), rtol=1e-6)
    np.testing.assert_allclose(w_grad.numpy(), np.broadcast_to(x.sum(0), (2, 3)), rtol=1e-6)


@pytest.mark.parametrize("how", ["mul_", "clip_grad_norm_", "clip_grad_value_"])
def test_gradient_changed_in_build_is_the_one_the_update_reads(how):
    """0.9's MarkVariableGradients: a parameter's lazy `.grad` at the end of build is what its update reads."""
    model, x, y, w, b = _setup(6)
    lr, max_norm, clip = 0.5, 0.3, 0.05

    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(flow.optim.SGD(model.parameters(), lr=lr))

        def build(self, x, y):
            loss = (flow.tanh(self.model(x)) * y).sum()
            loss.backward()
            assert self.model.weight.grad is self.model.weight.grad
            if how == "mul_":
                self.model.weight.grad.mul_(0.25)
            elif how == "clip_grad_norm_":
                flow.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm)
            else:
                flow.nn.utils.clip_grad_value_(self.model.parameters(), clip)
            return self.model.weight.grad, self.model.bias.grad

    ref = _numpy_grads(x, y, w, b)
    gw, gb = ref["w"], ref["b"]
    if how == "mul_":
        gw = gw * 0.25
    elif how == "clip_grad_norm_":
        coef = min(1.0, max_norm / (np.sqrt((gw ** 2).sum() + (gb ** 2).sum()) + 1e-6))
        assert coef < 1.0  # the clipping takes effect
        gw, gb = gw * coef, gb * coef
    else:
        gw, gb = np.clip(gw, -clip, clip), np.clip(gb, -clip, clip)
    w_grad, b_grad = G()(flow.tensor(x, requires_grad=True), flow.tensor(y))
    np.testing.assert_allclose(w_grad.numpy(), gw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b_grad.numpy(), gb, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.weight.numpy(), w - lr * gw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.bias.numpy(), b - lr * gb, rtol=1e-5, atol=1e-6)

