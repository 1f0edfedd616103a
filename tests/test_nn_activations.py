"""The nn ops family's activations on both surfaces: the legacy `flow.nn.*` / `flow.math.*` / `flow.layers.prelu`
functions in jobs on 1 and 2 devices, and OneFlow 0.9's `flow.nn.functional` forms and modules eagerly and in
`nn.Graph`, each forward and backward against PyTorch (float32 and float64); the legacy compositions' op names,
prelu's variable, errors and module reprs as OneFlow prints them."""
import os
import sys

import numpy as np
import pytest

import oneflow_compat as flow

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nn_reference as ref  # noqa: E402

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _x(dtype, shape=(4, 3, 5), scale=4.0, seed=0):
    x = np.random.default_rng(seed).uniform(-scale, scale, shape)
    # keep off the kinks (0, ±1, ±3, 6): the gradient there is a convention, not a number
    for k in (0.0, 1.0, -1.0, 3.0, -3.0, 6.0):
        x = np.where(np.abs(x - k) < 0.05, x + 0.2, x)
    return x.astype(dtype)


# legacy function of blobs, torch function of tensors
LEGACY = {
    "elu": (lambda x: flow.nn.elu(x, alpha=0.7), lambda x: TF.elu(x, 0.7)),
    "hardsigmoid": (flow.nn.hardsigmoid, TF.hardsigmoid),
    "hardswish": (flow.nn.hardswish, TF.hardswish),
    "hardtanh": (lambda x: flow.nn.hardtanh(x, -2.0, 1.5), lambda x: TF.hardtanh(x, -2.0, 1.5)),
    "relu6": (lambda x: flow.nn.relu6(x * 2.0), lambda x: TF.relu6(x * 2.0)),
    "mish": (flow.nn.mish, TF.mish),
    "swish": (lambda x: flow.nn.swish(x, beta=1.5), lambda x: x * torch.sigmoid(1.5 * x)),
    "logsoftmax": (lambda x: flow.nn.logsoftmax(x, axis=1), lambda x: TF.log_softmax(x, 1)),
    "math.log_sigmoid": (flow.math.log_sigmoid, TF.logsigmoid),
    "math.softplus": (flow.math.softplus, lambda x: TF.softplus(x, threshold=1e9)),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(LEGACY))
def test_legacy_activation_matches_torch_on_one_and_two_devices(name, dtype):
    fn, tfn = LEGACY[name]
    x = _x(dtype)
    outs, grads, rs = ref.legacy(fn, [x])
    t_outs, t_grads = ref.torch_ref(tfn, [x], rs)
    ref.assert_close(outs, t_outs, dtype, name + " forward")
    ref.assert_close(grads, t_grads, dtype, name + " backward")
    for axis in (0, 2):  # batch split, and a split of the last axis
        outs2, grads2, _ = ref.legacy(fn, [x], devices=2, splits=[axis])
        ref.assert_close(outs2, outs, dtype, "%s on 2 devices split %d" % (name, axis))
        ref.assert_close(grads2, grads, dtype, "%s gradient on 2 devices split %d" % (name, axis))


def test_legacy_hardtanh_checks_its_bounds():
    with pytest.raises(AssertionError, match="max_val should be larger than min_val"):
        ref.predict(lambda x: flow.nn.hardtanh(x, 1.0, 1.0), [_x(np.float32)])


def test_legacy_compositions_use_oneflows_op_names():
    names = []

    def body(x):
        y = flow.nn.mish(x, name="m")
        z = flow.nn.logsoftmax(y, name="ls")
        names.extend(op.name for op in z.op.job.ops)
        return z

    ref.predict(body, [_x(np.float32)])
    assert {"msoftplus", "mtanh", "ls_softmax", "ls_log"} <= set(names)


@pytest.mark.parametrize("shared_axes,alpha_shape", [(None, (3, 5)), ([2], (3, 1)), ([1, 2], (1, 1))])
def test_layers_prelu_creates_its_alpha_variable_and_matches_torch(shared_axes, alpha_shape):
    x = _x(np.float64)
    init = np.random.default_rng(3).uniform(0.05, 0.5, alpha_shape)

    def body(x):
        return flow.layers.prelu(x, alpha_initializer=flow.constant_initializer(0.0), shared_axes=shared_axes,
                                 name="act")

    outs = ref.predict(body, [x])
    alpha = flow.get_all_variables()["act-alpha"]
    assert alpha.numpy().shape == alpha_shape and not alpha.numpy().any()
    np.testing.assert_array_equal(outs[0], np.where(x > 0, x, 0.0))

    def body_init(x):
        return flow.layers.prelu(x, alpha_initializer=flow.constant_initializer(0.0), shared_axes=shared_axes,
                                 name="act")

    flow.clear_default_session()

    @flow.global_function(type="train")
    def train(images: flow.typing.Numpy.Placeholder(x.shape, dtype=flow.double),
              r: flow.typing.Numpy.Placeholder(x.shape, dtype=flow.double)) -> flow.typing.Numpy:
        y = body_init(images)
        loss = flow.math.reduce_sum(y * r)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1.0]), momentum=0).minimize(loss)
        return y

    flow.load_variables({"act-alpha": init})
    r = ref.weights([x])[0]
    y = train(x, r)
    ta = torch.tensor(init, requires_grad=True)
    ty = torch.where(torch.tensor(x) > 0, torch.tensor(x), ta[None] * torch.tensor(x))
    (ty * torch.tensor(r)).sum().backward()
    ref.assert_close([y], [ty.detach().numpy()], np.float64, "prelu forward")
    stepped = flow.get_all_variables()["act-alpha"].numpy()
    ref.assert_close([init - stepped], [ta.grad.numpy()], np.float64, "prelu alpha gradient")


# --- OneFlow 0.9's functional forms and modules ------------------------------------------------------------------
F = flow.nn.functional

GLOBAL = {
    "relu6": (F.relu6, TF.relu6, 2.0),
    "elu": (lambda x: F.elu(x, 0.5), lambda x: TF.elu(x, 0.5), 1.0),
    "hardsigmoid": (F.hardsigmoid, TF.hardsigmoid, 1.0),
    "hardswish": (F.hardswish, TF.hardswish, 1.0),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 2.0), lambda x: TF.hardtanh(x, -0.5, 2.0), 1.0),
    "mish": (F.mish, TF.mish, 1.0),
    "silu": (F.silu, TF.silu, 1.0),
    "softplus": (lambda x: F.softplus(x, beta=2, threshold=5), lambda x: TF.softplus(x, beta=2, threshold=5), 1.0),
    "logsigmoid": (F.logsigmoid, TF.logsigmoid, 1.0),
    "gelu": (F.gelu, TF.gelu, 1.0),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), lambda x: TF.gelu(x, approximate="tanh"), 1.0),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.1), lambda x: TF.leaky_relu(x, 0.1), 1.0),
    "softmax": (lambda x: F.softmax(x, dim=1), lambda x: TF.softmax(x, 1), 1.0),
    "log_softmax": (lambda x: F.log_softmax(x, dim=2), lambda x: TF.log_softmax(x, 2), 1.0),
    "sigmoid": (F.sigmoid, torch.sigmoid, 1.0),
    "tanh": (F.tanh, torch.tanh, 1.0),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(GLOBAL))
def test_functional_matches_torch(name, dtype):
    fn, tfn, scale = GLOBAL[name]
    x = _x(dtype) * dtype(scale)
    outs, grads, rs = ref.eager(fn, [x])
    t_outs, t_grads = ref.torch_ref(tfn, [x], rs)
    ref.assert_close(outs, t_outs, dtype, name)
    ref.assert_close(grads, t_grads, dtype, name + " grad")


MODULES = [
    (lambda: flow.nn.ReLU6(), lambda: torch.nn.ReLU6(), "ReLU6()"),
    (lambda: flow.nn.ELU(alpha=0.5), lambda: torch.nn.ELU(alpha=0.5), "ELU(alpha=0.5)"),
    (lambda: flow.nn.Hardsigmoid(), lambda: torch.nn.Hardsigmoid(), "Hardsigmoid()"),
    (lambda: flow.nn.Hardswish(), lambda: torch.nn.Hardswish(), "Hardswish()"),
    (lambda: flow.nn.Hardtanh(), lambda: torch.nn.Hardtanh(), "Hardtanh(min_val=-1, max_val=1)"),
    (lambda: flow.nn.Mish(), lambda: torch.nn.Mish(), "Mish()"),
    (lambda: flow.nn.SiLU(), lambda: torch.nn.SiLU(), "SiLU()"),
    (lambda: flow.nn.Softplus(), lambda: torch.nn.Softplus(), "Softplus(beta=1, threshold=20)"),
    (lambda: flow.nn.LogSigmoid(), lambda: torch.nn.LogSigmoid(), "LogSigmoid()"),
    (lambda: flow.nn.GELU(), lambda: torch.nn.GELU(), "GELU()"),
    (lambda: flow.nn.Sigmoid(), lambda: torch.nn.Sigmoid(), "Sigmoid()"),
    (lambda: flow.nn.Tanh(), lambda: torch.nn.Tanh(), "Tanh()"),
    (lambda: flow.nn.LeakyReLU(0.2), lambda: torch.nn.LeakyReLU(0.2), "LeakyReLU(negative_slope=0.2)"),
    (lambda: flow.nn.Softmax(dim=-1), lambda: torch.nn.Softmax(dim=-1), "Softmax(dim=-1)"),
    (lambda: flow.nn.LogSoftmax(dim=1), lambda: torch.nn.LogSoftmax(dim=1), "LogSoftmax(dim=1)"),
]


@pytest.mark.parametrize("k", range(len(MODULES)))
def test_modules_match_torch_and_print_as_oneflow(k):
    make, tmake, text = MODULES[k]
    m, tm = make(), tmake()
    assert repr(m) == text
    x = _x(np.float32)
    outs, grads, rs = ref.eager(m, [x])
    t_outs, t_grads = ref.torch_ref(tm, [x], rs)
    ref.assert_close(outs, t_outs, np.float32, text)
    ref.assert_close(grads, t_grads, np.float32, text + " grad")


@pytest.mark.parametrize("num_parameters", [1, 3])
def test_prelu_module_weight_gradient_matches_torch(num_parameters):
    m = flow.nn.PReLU(num_parameters)
    assert repr(m) == "PReLU(num_parameters=%d)" % num_parameters
    np.testing.assert_array_equal(m.weight.numpy(), np.full(num_parameters, 0.25, np.float32))
    w = np.random.default_rng(2).uniform(0.05, 0.6, num_parameters).astype(np.float32)
    with flow.no_grad():
        m.weight.copy_(flow.tensor(w))
    x = _x(np.float32, (2, 3, 4, 5))
    outs, grads, rs = ref.eager(m, [x])
    tm = torch.nn.PReLU(num_parameters)
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(w))
    t_outs, t_grads = ref.torch_ref(tm, [x], rs)
    ref.assert_close(outs, t_outs, np.float32, "PReLU")
    ref.assert_close(grads, t_grads, np.float32, "PReLU dx")
    ref.assert_close([m.weight.grad.numpy()], [tm.weight.grad.numpy()], np.float32, "PReLU dweight")


def test_inplace_forms_write_the_input():
    x = flow.tensor(np.array([-2.0, 0.5, 7.0], np.float32))
    y = F.relu6(x, inplace=True)
    assert y is x
    np.testing.assert_array_equal(x.numpy(), [0.0, 0.5, 6.0])


def test_activations_in_a_graph_equal_eager():
    class Net(flow.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = flow.nn.Linear(5, 6)
            self.acts = flow.nn.Sequential(flow.nn.Hardswish(), flow.nn.ELU(), flow.nn.Mish(), flow.nn.PReLU(),
                                           flow.nn.Softplus(), flow.nn.LogSoftmax(dim=1))

        def forward(self, x):
            return self.acts(self.lin(x))

    net = Net()
    opt = flow.optim.SGD(net.parameters(), lr=0.1)

    class Train(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.net = net
            self.add_optimizer(opt)

        def build(self, x):
            y = self.net(x)
            y.sum().backward()
            return y

    x = flow.tensor(_x(np.float32, (4, 5)))
    eager_y = net(x).numpy()
    graph_y = Train()(x).numpy()
    np.testing.assert_allclose(graph_y, eager_y, rtol=1e-6, atol=1e-6)


def test_v040_fused_layers_compute_what_they_fuse():
    x, b = _x(np.float64, (4, 6, 5)), _x(np.float64, (6,), seed=1)
    outs, grads, rs = ref.legacy(lambda x, b: flow.nn.fused_bias_add_gelu(x, b), [x, b])
    t_outs, t_grads = ref.torch_ref(lambda x, b: TF.gelu(x + b[None, :, None]), [x, b], rs)
    ref.assert_close(outs + grads, t_outs + t_grads, np.float64, "fused_bias_add_gelu")
    # dropout with bias: every element is 0 or (x + b) / (1 - rate)
    y = ref.legacy(lambda x, b: flow.nn.fused_bias_add_dropout(x, b, data_format="NCW", rate=0.25), [x, b])[0][0]
    full = (x + b[None, :, None]) / 0.75
    assert np.all(np.isclose(y, 0) | np.isclose(y, full)) and 0 < (y == 0).mean() < 0.6
    # hidden (seq 5, batch 2, 2 heads x 3 x head 4): q k^T · alpha and v, per (batch, head)
    h = _x(np.float64, (5, 2, 24), seed=2)
    qmk, v = ref.predict(lambda h: flow.nn.fused_self_attention_query_mul_key_and_value(h, 4, alpha=0.5), [h],
                         n_outputs=2)
    heads = h.reshape(5, 2, 2, 12)
    q, k, val = (heads[..., i * 4:(i + 1) * 4].transpose(1, 2, 0, 3) for i in range(3))
    np.testing.assert_allclose(qmk, 0.5 * q @ k.transpose(0, 1, 3, 2), rtol=1e-12)
    np.testing.assert_allclose(v, val, rtol=1e-12)
