"""oneflow.autograd.Function and oneflow.autograd.grad (OneFlow 0.9 autograd.rst): custom forward/backward pairs on
local and global tensors (one rank and two simulated ranks), their ctx, OneFlow's refusals, nn.Graph, and
autograd.grad against numpy and torch."""
import re

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import autograd
from simulated_ranks import on_ranks


class MyExp(autograd.Function):  # the docstring's example
    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result


class MulAdd(autograd.Function):
    """Two inputs, two outputs; the second output is differentiable too."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y, x + y

    @staticmethod
    def backward(ctx, g_mul, g_add):
        x, y = ctx.saved_tensors
        return g_mul * y + g_add, g_mul * x + g_add


class Scaled(autograd.Function):
    """A deliberately "wrong" backward (3 instead of 2): shows the custom backward is what runs."""

    @staticmethod
    def forward(ctx, x):
        ctx.scale = 2.0  # dynamic attributes on ctx
        return x * ctx.scale

    @staticmethod
    def backward(ctx, g):
        return g * (ctx.scale + 1.0)


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.fixture(params=["local", "global"])
def lay(request):
    if request.param == "local":
        return lambda a, **kw: flow.tensor(a, **kw)
    p = flow.placement("cpu", [0])
    return lambda a, **kw: flow.tensor(a, placement=p, sbp=flow.sbp.broadcast, **kw)


def test_the_docstring_example_and_its_gradient(lay):
    a = _rand(3, 4)
    x = lay(a, requires_grad=True)
    y = MyExp.apply(x)
    assert y.requires_grad and not y.is_leaf
    assert y.grad_fn.name() == "MyExp_backward"
    np.testing.assert_allclose(y.numpy(), np.exp(a), rtol=1e-6)
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(a) * np.exp(a), rtol=1e-5)
    # __call__ on an instance is apply
    z = MyExp()(lay(a, requires_grad=True))
    np.testing.assert_allclose(z.numpy(), np.exp(a), rtol=1e-6)


def test_several_inputs_and_outputs_against_torch(lay):
    torch = pytest.importorskip("torch")
    a, b = _rand(2, 3, seed=1), _rand(2, 3, seed=2)
    x, y = lay(a, requires_grad=True), lay(b, requires_grad=True)
    m, s = MulAdd.apply(x, y)
    (m * 3 + s * s).sum().backward()

    class TorchMulAdd(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y, x + y

        @staticmethod
        def backward(ctx, g_mul, g_add):
            x, y = ctx.saved_tensors
            return g_mul * y + g_add, g_mul * x + g_add

    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    tm, ts = TorchMulAdd.apply(tx, ty)
    (tm * 3 + ts * ts).sum().backward()
    np.testing.assert_allclose(m.numpy(), tm.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-5)


def test_an_output_no_gradient_reached_gets_zeros():
    """OneFlow 0.9 FunctionNode::Apply: the backward sees zeros for an output that requires grad but was unused."""
    seen = {}

    class Spy(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g0, g1):
            seen["g1"] = g1.numpy()
            return g0 * 2 + g1 * 3

    x = flow.tensor(_rand(4), requires_grad=True)
    first, _ = Spy.apply(x)
    first.sum().backward()
    np.testing.assert_array_equal(seen["g1"], np.zeros(4, np.float32))
    np.testing.assert_allclose(x.grad.numpy(), np.full(4, 2.0, np.float32))


def test_mark_non_differentiable_as_oneflows_test():
    class MyModule(autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            mul_res, add_res = x * y, x + y
            ctx.save_for_backward(x, y)
            ctx.mark_non_differentiable(add_res)
            return mul_res, add_res

        @staticmethod
        def backward(ctx, mul_grad, add_grad=None):
            assert add_grad is None
            x, y = ctx.saved_tensors
            return y * mul_grad, x * mul_grad

    a, b = _rand(4, 5, seed=3), _rand(4, 5, seed=4)
    x, y = flow.tensor(a, requires_grad=True), flow.tensor(b, requires_grad=True)
    c, d = MyModule.apply(x, y)
    assert not d.requires_grad and d.grad_fn is None
    c.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), b, rtol=1e-6)
    np.testing.assert_allclose(y.grad.numpy(), a, rtol=1e-6)


def test_none_gradients_for_inputs_that_need_none_and_none_inputs():
    class Partial(autograd.Function):
        @staticmethod
        def forward(ctx, x, y, z, nothing):
            assert nothing is None
            return x + y + z

        @staticmethod
        def backward(ctx, g):
            return None, g, None, None

    x, z = flow.randn(4, 5), flow.randn(4, 5)
    y = flow.randn(4, 5).requires_grad_()
    res = Partial.apply(x, y, z, None)
    np.testing.assert_allclose(res.numpy(), x.numpy() + y.numpy() + z.numpy(), rtol=1e-6)
    res.sum().backward()
    assert x.grad is None and z.grad is None
    np.testing.assert_array_equal(y.grad.numpy(), np.ones((4, 5), np.float32))


def test_ctx_attributes_and_no_recording_without_grad():
    x = flow.tensor(_rand(3), requires_grad=True)
    y = Scaled.apply(x)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 3.0, np.float32))  # the custom backward ran
    with flow.no_grad():
        assert not Scaled.apply(x).requires_grad
    assert not Scaled.apply(flow.tensor(_rand(3))).requires_grad  # no input requires grad


def test_oneflows_refusals_and_messages():
    class Short(autograd.Function):
        @staticmethod
        def forward(ctx, x, y, z):
            return x + y + z

        @staticmethod
        def backward(ctx, g):
            return None, g

    x, y, z = flow.randn(4, 5), flow.randn(4, 5).requires_grad_(), flow.randn(4, 5)
    res = Short.apply(x, y, z)
    with pytest.raises(RuntimeError, match=re.escape(
            "function Short returned an incorrect number of gradients (expected 3, got 2)")):
        res.sum().backward()

    class NoneGrad(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return (None,)

    with pytest.raises(RuntimeError, match=re.escape(
            "autograd.Function named NoneGrad's inputs[0] requires grad but got None grad. Please use "
            "Tensor.detach() for this input.")):
        NoneGrad.apply(flow.randn(3).requires_grad_()).sum().backward()
    # every argument of apply is a Tensor or None (OneFlow 0.9 UnpackTensorTuple)
    with pytest.raises(RuntimeError, match=re.escape("expected Tensor or None as element 1, but got <class 'int'>")):
        MyExp.apply(flow.randn(3), 2)

    class ReturnsList(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return [x * 1]

    with pytest.raises(RuntimeError, match="autograd.Function's output only support tensor or list of tensors"):
        ReturnsList.apply(flow.randn(3))
    with pytest.raises(NotImplementedError, match="You must implement the forward function"):
        autograd.Function.apply(flow.randn(3))

    class SavesAnInt(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x

    with pytest.raises(TypeError, match=re.escape("save_for_backward() only support Tensor or Tensors")):
        SavesAnInt.apply(flow.randn(3))


def test_the_ctx_is_released_after_the_backward_and_a_second_pass_says_so():
    holder = {}

    class Keep(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            z = x.clone()
            ctx.save_for_backward(z)
            holder["ctx"] = ctx
            return z

        @staticmethod
        def backward(ctx, g):
            (z,) = ctx.saved_tensors
            return z

    x = flow.randn(5, 5).requires_grad_()
    res = Keep.apply(x)
    assert holder["ctx"]._is_data_valid()
    s = res.sum()
    s.backward(retain_graph=True)
    assert holder["ctx"]._is_data_valid()  # retained
    s2 = Keep.apply(x).sum()
    s2.backward()
    assert not holder["ctx"]._is_data_valid()
    with pytest.raises(RuntimeError, match="Data is deallocated"):
        holder["ctx"].saved_tensors
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.numpy(), rtol=1e-6)
    assert isinstance(holder["ctx"], autograd.Function.FunctionCtx)


def test_inside_an_eval_graph_the_forward_is_traced():
    a = _rand(2, 3)
    lin = flow.nn.Linear(3, 3)

    class Eval(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.lin = lin

        def build(self, x):
            return MyExp.apply(self.lin(x))

    want = np.exp(a @ lin.weight.numpy().T + lin.bias.numpy())
    np.testing.assert_allclose(Eval()(flow.tensor(a)).numpy(), want, rtol=1e-5)


def test_oneflows_graph_test_the_custom_backward_trains_the_weight():
    """OneFlow 0.9's test_graph_test_multi_input: the custom backward (not the forward's derivative) gives the
    weight its gradient inside nn.Graph (2 where d(2x + w)/dw is 1)."""

    class MyMul(autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, z_grad):
            x, y = ctx.saved_tensors
            return 2 * y * z_grad, 3 * x * z_grad

    class MyAdd(autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return 2 * x + y

        @staticmethod
        def backward(ctx, z_grad):
            return z_grad, 2 * z_grad

    model = flow.nn.Linear(5, 4, bias=False)
    a0, a1, a2 = _rand(4, 5, seed=11), _rand(4, 5, seed=12), _rand(4, 5, seed=13)
    with flow.no_grad():
        model.weight.copy_(flow.tensor(a2))

    class MyGraph(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(flow.optim.SGD(self.model.parameters(), lr=1.0))

        def build(self, x, y):
            z = MyAdd().apply(MyMul().apply(x, y), self.model.weight)
            z.sum().backward()
            return z

    c = MyGraph()(flow.tensor(a0), flow.tensor(a1))
    np.testing.assert_allclose(c.numpy(), 2 * a0 * a1 + a2, rtol=1e-5)
    np.testing.assert_allclose(model.weight.numpy(), a2 - 2.0, rtol=1e-5)


def test_a_training_graph_with_custom_functions_steps_as_eager():
    """Gradients through a custom backward reach the layers before it; an output no gradient reached gets zeros."""
    a = _rand(6, 3, seed=14)
    state = {k: v.numpy() for k, v in flow.nn.Linear(3, 4).state_dict().items()}

    def fresh():
        lin = flow.nn.Linear(3, 4)
        lin.load_state_dict({k: flow.tensor(v) for k, v in state.items()})
        return lin, flow.optim.SGD(lin.parameters(), lr=0.1)

    def step(lin, x):
        h = Scaled.apply(lin(x))  # backward: 3 x the gradient
        m, _ = MulAdd.apply(h, h)  # its second output unused: zeros reach the backward
        return (m * 0.5).sum()

    eager_lin, eager_opt = fresh()
    for _ in range(2):
        loss = step(eager_lin, flow.tensor(a))
        loss.backward()
        eager_opt.step()
        eager_opt.zero_grad()

    graph_lin, graph_opt = fresh()

    class Train(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.lin = graph_lin
            self.add_optimizer(graph_opt)

        def build(self, x):
            loss = step(self.lin, x)
            loss.backward()
            return loss

    g = Train()
    for _ in range(2):
        g(flow.tensor(a))
    np.testing.assert_allclose(graph_lin.weight.numpy(), eager_lin.weight.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(graph_lin.bias.numpy(), eager_lin.bias.numpy(), rtol=1e-5, atol=1e-6)
    # and the eager numbers are the formula's: s = 2h, m = s * s through MulAdd's backward (each input gets
    # 0.5 s), so d loss/ds = s = 2h, times 3 through Scaled's backward
    lin0, _ = fresh()
    h = a @ lin0.weight.numpy().T + lin0.bias.numpy()
    grad_w = (3 * 2 * h).T @ a
    want1 = lin0.weight.numpy() - 0.1 * grad_w
    lin1, opt1 = fresh()
    step(lin1, flow.tensor(a)).backward()
    opt1.step()
    np.testing.assert_allclose(lin1.weight.numpy(), want1, rtol=1e-4, atol=1e-5)


# --- autograd.grad ------------------------------------------------------------------------------------------------
def test_grad_returns_gradients_without_accumulating(lay):
    a = _rand(3, seed=5)
    x = lay(a, requires_grad=True)
    z = x * 3
    w = (z * z).sum()
    gz, gx = autograd.grad(w, [z, x])
    np.testing.assert_allclose(gz.numpy(), 2 * 3 * a, rtol=1e-5)
    np.testing.assert_allclose(gx.numpy(), 18 * a, rtol=1e-5)
    assert x.grad is None  # nothing accumulated
    assert gx.is_global == x.is_global


def test_grad_with_grad_outputs_and_retain_graph_against_torch():
    torch = pytest.importorskip("torch")
    a, v = _rand(2, 3, seed=6), _rand(2, 3, seed=7)
    x = flow.tensor(a, requires_grad=True)
    y = flow.sin(x) * x
    (g1,) = autograd.grad(y, x, flow.tensor(v), retain_graph=True)
    (g2,) = autograd.grad([y], [x], [flow.tensor(v)])
    tx = torch.tensor(a, requires_grad=True)
    (tg,) = torch.autograd.grad(torch.sin(tx) * tx, tx, torch.tensor(v))
    np.testing.assert_allclose(g1.numpy(), tg.numpy(), rtol=1e-5)
    np.testing.assert_allclose(g2.numpy(), tg.numpy(), rtol=1e-5)
    with pytest.raises(RuntimeError, match="has been released"):
        autograd.grad(y, x, flow.tensor(v))


def test_grad_through_a_custom_function():
    a = _rand(4, seed=8)
    x = flow.tensor(a, requires_grad=True)
    (g,) = autograd.grad(MyExp.apply(x).sum(), x)
    np.testing.assert_allclose(g.numpy(), np.exp(a), rtol=1e-6)


def test_grad_refusals():
    x = flow.tensor(_rand(3), requires_grad=True)
    y = (x * 2).sum()
    # (gelu, conv2d and lgamma differentiate twice now: tests/test_limits_higher_order.py,
    # tests/test_limits2_digamma.py; the CTC loss's gradient does not)
    lp = flow.tensor(np.log(np.full((3, 1, 4), 0.25)), requires_grad=True)
    with pytest.raises(NotImplementedError, match=re.escape(
            "create_graph=True: the gradient of op 'ctc_loss' uses op 'ctc_loss_grad', which has no gradient rule "
            "here, so the gradient cannot be differentiated again")):
        autograd.grad(flow.nn.CTCLoss()(lp, flow.tensor([[1, 2]]), flow.tensor([3]), flow.tensor([2])), lp,
                      create_graph=True)
    with pytest.raises(RuntimeError, match=re.escape("All input tensors `.requires_grad` should be true")):
        autograd.grad(y, flow.tensor(_rand(3)))
    with pytest.raises(RuntimeError, match="Grad can be implicitly created only for scalar outputs"):
        autograd.grad(x * 2, x)
    with pytest.raises(RuntimeError, match=re.escape("out_grad's shape must be same as output's ((3) vs (2))")):
        autograd.grad(x * 2, x, flow.ones(2))
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        autograd.grad(flow.ones(1), x)


# --- higher-order gradients (create_graph=True) -------------------------------------------------------------------
def test_second_derivatives_against_torch():
    torch = pytest.importorskip("torch")
    a, b = _rand(3, 2, seed=20), _rand(4, 3, seed=21)
    w, inp = flow.tensor(a, requires_grad=True), flow.tensor(b)
    (g,) = autograd.grad((flow.sin(flow.matmul(inp, w)) ** 2).sum(), w, create_graph=True)
    assert g.requires_grad and not g.is_leaf
    (g * g).sum().backward()  # a gradient penalty
    tw = torch.tensor(a, requires_grad=True)
    (tg,) = torch.autograd.grad((torch.sin(torch.tensor(b) @ tw) ** 2).sum(), tw, create_graph=True)
    (tg * tg).sum().backward()
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_a_gradient_penalty_through_tanh_sigmoid_and_relu_against_torch():
    torch = pytest.importorskip("torch")
    a, w1, w2 = _rand(5, 4, seed=22), _rand(4, 6, seed=23), _rand(6, 1, seed=24)

    def net(lib, x, p, q):
        h = lib.tanh(x @ p)
        return (lib.sigmoid(h @ q) + lib.relu(h).sum(1, keepdim=True)).sum()

    x, p, q = (flow.tensor(v, requires_grad=True) for v in (a, w1, w2))
    (gx,) = autograd.grad(net(flow, x, p, q), x, create_graph=True)
    ((gx * gx).sum()).backward()
    tx, tp, tq = (torch.tensor(v, requires_grad=True) for v in (a, w1, w2))
    (tgx,) = torch.autograd.grad(net(torch, tx, tp, tq), tx, create_graph=True)
    ((tgx * tgx).sum()).backward()
    np.testing.assert_allclose(gx.detach().numpy(), tgx.detach().numpy(), rtol=1e-5, atol=1e-6)
    for mine, theirs in ((x, tx), (p, tp), (q, tq)):
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", ["cross_entropy", "softmax", "leaky_relu"])
def test_second_derivatives_of_losses_and_activations_against_torch(case):
    torch = pytest.importorskip("torch")
    a, w = _rand(4, 3, seed=25), _rand(3, 5, seed=26)
    labels = np.array([0, 4, 2, 1])

    def f(lib, x, p):
        z = x @ p
        if case == "cross_entropy":
            return lib.nn.functional.cross_entropy(z, lib.tensor(labels))
        if case == "softmax":
            return (lib.softmax(z, dim=1) ** 2 * lib.tensor(np.arange(5, dtype=np.float32))).sum()
        return (lib.nn.functional.leaky_relu(z, 0.2) ** 2).sum()

    x, p = flow.tensor(a, requires_grad=True), flow.tensor(w, requires_grad=True)
    (gx,) = autograd.grad(f(flow, x, p), x, create_graph=True)
    (gx * gx).sum().backward()
    tx, tp = torch.tensor(a, requires_grad=True), torch.tensor(w, requires_grad=True)
    (tgx,) = torch.autograd.grad(f(torch, tx, tp), tx, create_graph=True)
    (tgx * tgx).sum().backward()
    np.testing.assert_allclose(gx.detach().numpy(), tgx.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_third_derivative_and_backward_create_graph(lay):
    a = np.array([0.5, -1.0, 2.0], np.float32)
    x = lay(a, requires_grad=True)
    (g1,) = autograd.grad((x ** 4).sum(), x, create_graph=True)
    (g2,) = autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = autograd.grad(g2.sum(), x)
    np.testing.assert_allclose(g1.numpy(), 4 * a ** 3, rtol=1e-5)
    np.testing.assert_allclose(g2.numpy(), 12 * a ** 2, rtol=1e-5)
    np.testing.assert_allclose(g3.numpy(), 24 * a, rtol=1e-5)
    y = lay(a, requires_grad=True)
    (flow.exp(y) * y).sum().backward(create_graph=True)  # Tensor.backward
    gy = y.grad
    assert gy.requires_grad
    np.testing.assert_allclose(gy.numpy(), np.exp(a) * (1 + a), rtol=1e-5)
    y.grad = None
    gy.sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), np.exp(a) * (2 + a), rtol=1e-5)


def test_a_custom_backward_is_recorded_under_create_graph():
    class Cube(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x

    a = np.array([1.0, -2.0], np.float32)
    x = flow.tensor(a, requires_grad=True)
    (g,) = autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    (h,) = autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), 6 * a, rtol=1e-6)


# --- two simulated ranks ------------------------------------------------------------------------------------------
def test_a_custom_function_on_two_ranks_split_data_broadcast_weight():
    a, w = _rand(4, 3, seed=9), _rand(4, 3, seed=10)

    def body():
        p = flow.placement("cpu", [0, 1])
        x = flow.tensor(a, placement=p, sbp=flow.sbp.split(0), requires_grad=True)
        wt = flow.tensor(w, placement=p, sbp=flow.sbp.broadcast, requires_grad=True)
        m, s = MulAdd.apply(x, wt)
        assert m.sbp == (flow.sbp.split(0),)
        (m.sum() + (s * s).sum()).backward()
        (gx,) = autograd.grad((MyExp.apply(x) * 2).sum(), x)
        (g1,) = autograd.grad((wt ** 3).sum(), wt, create_graph=True)  # B: its gradient made whole
        (g2,) = autograd.grad(g1.sum(), wt)
        return (m.numpy(), x.grad.numpy(), wt.grad.numpy(), wt.grad.sbp, gx.numpy(), gx.sbp, g2.numpy(), g2.sbp)

    results = on_ranks(2, body)
    s_ = a + w
    for m, gx_acc, gw, gw_sbp, gx, gx_sbp, g2, g2_sbp in results:
        np.testing.assert_allclose(g2, 6 * w, rtol=1e-5)
        assert g2_sbp == (flow.sbp.broadcast,)
        np.testing.assert_allclose(m, a * w, rtol=1e-6)
        np.testing.assert_allclose(gx_acc, w + 2 * s_, rtol=1e-5)
        np.testing.assert_allclose(gw, a + 2 * s_, rtol=1e-5)
        assert gw_sbp == (flow.sbp.broadcast,)
        np.testing.assert_allclose(gx, 2 * np.exp(a), rtol=1e-5)
        assert gx_sbp == (flow.sbp.split(0),)


def test_the_names_are_oneflows():
    assert flow.autograd.Function is autograd.Function
    assert flow.autograd.grad is autograd.grad
    assert autograd.Function.FunctionCtx.save_for_backward
    assert autograd.Function.FunctionCtx.mark_non_differentiable
    assert isinstance(autograd.Function.FunctionCtx.saved_tensors, property)


def test_a_custom_function_in_a_training_graph_on_two_ranks_steps_as_one_rank():
    a = _rand(4, 3, seed=15)
    w0 = _rand(2, 3, seed=16)

    def run(p, sbp):
        lin = flow.nn.Linear(3, 2, bias=False)
        with flow.no_grad():
            lin.weight.copy_(flow.tensor(w0))
        lin = lin.to_global(p, flow.sbp.broadcast)
        opt = flow.optim.SGD(lin.parameters(), lr=0.1)

        class Train(flow.nn.Graph):
            def __init__(self):
                super().__init__()
                self.lin = lin
                self.add_optimizer(opt)

            def build(self, x):
                loss = MyExp.apply(Scaled.apply(self.lin(x))).sum()
                loss.backward()
                return loss

        Train()(flow.tensor(a, placement=p, sbp=sbp))
        return lin.weight.numpy()

    def body():
        return run(flow.placement("cpu", [0, 1]), flow.sbp.split(0)), run(flow.placement("cpu", [0]),
                                                                          flow.sbp.broadcast)

    # the formula: h = x w^T, loss = sum(exp(2h)); custom backwards give 3 * exp(2h) per element of h
    want = w0 - 0.1 * (3 * np.exp(2 * (a @ w0.T))).T @ a
    for two, one in on_ranks(2, body):
        np.testing.assert_allclose(two, one, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(two, want, rtol=1e-4, atol=1e-5)


def test_a_forward_returning_its_input_leaves_the_input_a_leaf():
    class Same(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    x = flow.tensor(_rand(3, seed=30), requires_grad=True)
    y = Same.apply(x)
    assert y is not x and x.is_leaf and not y.is_leaf
    (y * 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 10.0, np.float32))
