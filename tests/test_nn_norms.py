"""The nn ops family's normalizations on both surfaces: legacy `flow.nn.batch_normalization`, `moments`,
`layer_norm`, `GroupNorm`, `InstanceNorm1d/2d/3d`, `flow.layers.layer_norm(_grad, _param_grad)`,
`batch_normalization(_relu, _add_relu)` in jobs on 1 and 2 devices (created variables included), and OneFlow 0.9's
`BatchNorm1d/2d/3d` (running statistics in train and eval, in `nn.Graph` too), `LayerNorm`, `GroupNorm`,
`InstanceNorm*` and their functional forms eagerly; each forward and backward against PyTorch."""
import os
import sys

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nn_reference as ref  # noqa: E402

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _x(dtype, shape=(6, 4, 3, 2), seed=0, scale=1.5, shift=0.5):
    return (np.random.default_rng(seed).standard_normal(shape) * scale + shift).astype(dtype)


def _pos(dtype, shape, seed):
    return np.random.default_rng(seed).uniform(0.5, 1.5, shape).astype(dtype)


def _torch_bn(x, m, v, b, g, eps=1e-5, axis=1):
    shape = [1] * x.dim()
    shape[axis] = -1
    out = (x - m.reshape(shape)) / torch.sqrt(v.reshape(shape) + eps)
    out = out * g.reshape(shape) if g is not None else out
    return out + b.reshape(shape) if b is not None else out


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("axis", [1, 3])
def test_legacy_batch_normalization_with_given_statistics(axis, dtype):
    x = _x(dtype)
    c = x.shape[axis]
    m, v, b, g = _x(dtype, (c,), 1, 0.3, 0), _pos(dtype, (c,), 2), _x(dtype, (c,), 3), _x(dtype, (c,), 4)

    def body(x, m, v, b, g):
        return flow.nn.batch_normalization(x, m, v, offset=b, scale=g, variance_epsilon=1e-3, axis=axis)

    outs, grads, rs = ref.legacy(body, [x, m, v, b, g])
    t_outs, t_grads = ref.torch_ref(lambda *a: _torch_bn(*a, eps=1e-3, axis=axis), [x, m, v, b, g], rs)
    ref.assert_close(outs, t_outs, dtype, "batch_normalization")
    ref.assert_close(grads, t_grads, dtype, "batch_normalization grads")
    # batch split (statistics broadcast), and channels split with the statistics split alike
    for splits in ([0, None, None, None, None], [axis, 0, 0, 0, 0]):
        outs2, grads2, _ = ref.legacy(body, [x, m, v, b, g], devices=2, splits=splits)
        ref.assert_close(outs2 + grads2, outs + grads, dtype, "on 2 devices %s" % splits)


def test_legacy_batch_normalization_with_full_rank_statistics_and_moments():
    x = _x(np.float64)

    def body(x):
        mean, var = flow.nn.moments(x, [0, 2, 3], keepdims=True)
        return [flow.nn.batch_normalization(x, mean, var, variance_epsilon=1e-5, axis=1), mean, var]

    outs, grads, rs = ref.legacy(body, [x], n_outputs=3)
    t_outs, t_grads = ref.torch_ref(lambda t: [TF.batch_norm(t, None, None, training=True, eps=1e-5),
                                               t.mean((0, 2, 3), keepdim=True),
                                               t.var((0, 2, 3), unbiased=False, keepdim=True)], [x], rs)
    ref.assert_close(outs + grads, t_outs + t_grads, np.float64, "moments + batch_normalization")
    with pytest.raises(AssertionError):  # OneFlow: a bare `assert isinstance(axes, list)`
        ref.predict(lambda x: flow.nn.moments(x, (0, 1))[0], [x])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_legacy_layer_norm_with_given_parameters(dtype):
    x = _x(dtype, (5, 4, 6))
    g, b = _x(dtype, (6,), 1), _x(dtype, (6,), 2)

    def body(x, g, b):
        return flow.nn.layer_norm(x, g, b, begin_norm_axis=-1, begin_params_axis=-1, epsilon=1e-4)

    outs, grads, rs = ref.legacy(body, [x, g, b])
    t_outs, t_grads = ref.torch_ref(lambda x, g, b: TF.layer_norm(x, (6,), g, b, eps=1e-4), [x, g, b], rs)
    ref.assert_close(outs + grads, t_outs + t_grads, dtype, "layer_norm")
    for splits in ([0, None, None], [1, None, None]):
        outs2, grads2, _ = ref.legacy(body, [x, g, b], devices=2, splits=splits)
        ref.assert_close(outs2 + grads2, outs + grads, dtype, "layer_norm on 2 devices %s" % splits)


def _train_job(shape, body, dtype=np.float64, devices=1, lr=1.0, split=0):
    """A train job of `body(x)` whose loss is Σ body(x) · r; returns (run(x, r) -> output, variables after)."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    fdt = flow.double if dtype == np.float64 else flow.float

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder(shape, dtype=fdt, batch_axis=split),
              r: tp.Numpy.Placeholder(shape, dtype=fdt, batch_axis=split)) -> tp.Numpy:
        y = body(x)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [lr]), momentum=0).minimize(
            flow.math.reduce_sum(flow.math.multiply(y, r)))
        return y

    def run(x, r):
        return train(x, r), {k: v.numpy() for k, v in flow.get_all_variables().items() if not k.startswith("System-")}

    return run


def test_layers_layer_norm_creates_beta_and_gamma_and_trains_as_torch():
    x, r = _x(np.float64, (5, 4, 6)), _x(np.float64, (5, 4, 6), 9)
    run = _train_job(x.shape, lambda x: flow.layers.layer_norm(x, begin_norm_axis=1, begin_params_axis=-1,
                                                              name="ln"))
    y, variables = run(x, r)
    assert sorted(variables) == ["ln-beta", "ln-gamma"]
    tg, tb = torch.ones(6, dtype=torch.float64, requires_grad=True), torch.zeros(6, dtype=torch.float64,
                                                                               requires_grad=True)
    tx = torch.tensor(x)
    ty = TF.layer_norm(tx, (4, 6), eps=1e-5) * tg + tb
    (ty * torch.tensor(r)).sum().backward()
    ref.assert_close([y, variables["ln-gamma"], variables["ln-beta"]],
                     [ty.detach().numpy(), 1 - tg.grad.numpy(), -tb.grad.numpy()], np.float64, "layers.layer_norm")


def test_layers_layer_norm_grad_and_param_grad_are_the_layer_norm_gradient():
    x, dy = _x(np.float64, (5, 4, 6)), _x(np.float64, (5, 4, 6), 5)
    gamma = _x(np.float64, (6,), 6)

    def body(x, dy, gamma):
        nd = flow.nn.layer_norm(x, begin_norm_axis=1, begin_params_axis=-1)
        mean, var = flow.nn.moments(x, [1, 2], keepdims=False)
        inv = flow.math.rsqrt(var + 1e-5)
        norm = flow.math.multiply(flow.math.subtract(x, flow.reshape(mean, (5, 1, 1))),
                                  flow.reshape(inv, (5, 1, 1)))
        ndiff, beta_diff, gamma_diff = flow.layers.layer_norm_param_grad(dy, norm, gamma, begin_params_axis=-1)
        dx = flow.layers.layer_norm_grad(ndiff, x, mean, inv, begin_norm_axis=1)
        return [nd, dx, beta_diff, gamma_diff]

    nd, dx, beta_diff, gamma_diff = ref.predict(body, [x, dy, gamma], n_outputs=4)
    tx, tg = torch.tensor(x, requires_grad=True), torch.tensor(gamma, requires_grad=True)
    tb = torch.zeros(6, dtype=torch.float64, requires_grad=True)
    ty = TF.layer_norm(tx, (4, 6), eps=1e-5) * tg + tb
    ty.backward(torch.tensor(dy))
    ref.assert_close([nd, dx, beta_diff, gamma_diff],
                     [TF.layer_norm(tx, (4, 6), eps=1e-5).detach().numpy(), tx.grad.numpy(), tb.grad.numpy(),
                      tg.grad.numpy()], np.float64, "layer_norm_grad / param_grad")


@pytest.mark.parametrize("name,shape,torch_fn", [
    ("GroupNorm", (4, 6, 5), lambda t: TF.group_norm(t, 3, eps=1e-5)),
    ("InstanceNorm1d", (4, 3, 5), lambda t: TF.instance_norm(t, eps=1e-5)),
    ("InstanceNorm2d", (4, 3, 5, 2), lambda t: TF.instance_norm(t, eps=1e-5)),
    ("InstanceNorm3d", (3, 2, 3, 2, 2), lambda t: TF.instance_norm(t, eps=1e-5)),
])
def test_legacy_group_and_instance_norms(name, shape, torch_fn):
    x, r = _x(np.float64, shape), _x(np.float64, shape, 9)
    layer = getattr(flow.nn, name)

    def body(x):
        return layer(x, num_groups=3, name="gn") if name == "GroupNorm" else layer(x, name="gn")

    c = shape[1]
    run = _train_job(shape, body)
    y, variables = run(x, r)
    assert {k: v.shape for k, v in variables.items()} == {"gn_gamma": (1, c, 1), "gn_beta": (1, c, 1)}
    tg = torch.ones((1, c, 1), dtype=torch.float64, requires_grad=True)
    tb = torch.zeros((1, c, 1), dtype=torch.float64, requires_grad=True)
    tx = torch.tensor(x)
    ty = (torch_fn(tx).reshape(shape[0], c, -1) * tg + tb).reshape(shape)
    (ty * torch.tensor(r)).sum().backward()
    ref.assert_close([y, variables["gn_gamma"], variables["gn_beta"]],
                     [ty.detach().numpy(), 1 - tg.grad.numpy(), -tb.grad.numpy()], np.float64, name)
    # 2 devices, batch split: the same numbers
    y2, variables2 = _train_job(shape, body, devices=2)(x, r)
    ref.assert_close([y2, variables2["gn_gamma"], variables2["gn_beta"]],
                     [y, variables["gn_gamma"], variables["gn_beta"]], np.float64, name + " on 2 devices")
    kw = {"num_groups": 3} if name == "GroupNorm" else {}
    no_affine = ref.predict(lambda x: layer(x, affine=False, **kw), [x])[0]
    ref.assert_close([no_affine], [torch_fn(tx).detach().numpy()], np.float64, name + " affine=False")


def _bn_layer(kind):
    def body(x):
        kw = dict(axis=1, momentum=0.9, epsilon=1e-3, name="bn")
        if kind == "plain":
            return flow.layers.batch_normalization(x, **kw)
        if kind == "relu":
            return flow.layers.batch_normalization_relu(x, **kw)
        return flow.layers.batch_normalization_add_relu(x, addend=x * 0.5, **kw)
    return body


@pytest.mark.parametrize("kind", ["plain", "relu", "add_relu"])
def test_layers_batch_normalization_family_trains_as_torch_on_one_and_two_devices(kind):
    x, r = _x(np.float64), _x(np.float64, seed=9)
    y, variables = _train_job(x.shape, _bn_layer(kind))(x, r)
    assert sorted(variables) == ["bn-beta", "bn-gamma", "bn-moving_mean", "bn-moving_variance"]
    tx = torch.tensor(x)
    tg = torch.ones(4, dtype=torch.float64, requires_grad=True)
    tb = torch.zeros(4, dtype=torch.float64, requires_grad=True)
    rm, rv = torch.zeros(4, dtype=torch.float64), torch.ones(4, dtype=torch.float64)
    ty = TF.batch_norm(tx, rm, rv, tg, tb, training=True, momentum=0.1, eps=1e-3)
    if kind != "plain":
        ty = torch.relu(ty + (0.5 * tx if kind == "add_relu" else 0))
    (ty * torch.tensor(r)).sum().backward()
    # no device named: the machine's rule (tests/test_faithfulness.py): population variance on CPU, cuDNN's
    # unbiased one where CUDA is usable
    from oneflow_compat.backend import devices

    n = x.size // 4
    moving_var = 0.9 + 0.1 * x.var(axis=(0, 2, 3)) * (n / (n - 1) if devices.cuda_usable() else 1.0)
    ref.assert_close([y, variables["bn-gamma"], variables["bn-beta"], variables["bn-moving_mean"],
                      variables["bn-moving_variance"]],
                     [ty.detach().numpy(), 1 - tg.grad.numpy(), -tb.grad.numpy(), rm.numpy(), moving_var],
                     np.float64, kind)
    y2, variables2 = _train_job(x.shape, _bn_layer(kind), devices=2)(x, r)
    ref.assert_close([y2] + [variables2[k] for k in sorted(variables)], [y] + [variables[k] for k in sorted(variables)],
                     np.float64, kind + " on 2 devices")


def test_layers_batch_normalization_in_a_predict_job_uses_the_moving_statistics():
    x = _x(np.float32)

    @flow.global_function()
    def predict(a: tp.Numpy.Placeholder(x.shape)) -> tp.Numpy:
        return flow.layers.batch_normalization_relu(a, axis=1, name="bn", training=True)

    flow.load_variables({"bn-moving_mean": np.full(4, 0.5, np.float32), "bn-moving_variance": np.full(4, 4.0,
                                                                                                    np.float32)})
    np.testing.assert_allclose(predict(x), np.maximum((x - 0.5) / np.sqrt(4.001), 0), rtol=1e-5, atol=1e-6)


# --- OneFlow 0.9's modules --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dims,shape", [(1, (6, 4)), (1, (6, 4, 3)), (2, (6, 4, 3, 2)), (3, (4, 4, 3, 2, 2))])
def test_batchnorm_modules_train_and_eval_as_torch(dims, shape):
    m = getattr(flow.nn, "BatchNorm%dd" % dims)(4, momentum=0.2)
    tm = getattr(torch.nn, "BatchNorm%dd" % dims)(4, momentum=0.2)
    assert repr(m) == "BatchNorm%dd(4, eps=1e-05, momentum=0.2, affine=True, track_running_stats=True)" % dims
    with flow.no_grad():
        m.weight.copy_(flow.tensor(_pos(np.float32, (4,), 3)))
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(_pos(np.float32, (4,), 3)))
    for step in range(2):
        x = _x(np.float32, shape, seed=step)
        outs, grads, rs = ref.eager(m, [x])
        t_outs, t_grads = ref.torch_ref(tm, [x], rs)
        ref.assert_close(outs + grads, t_outs + t_grads, np.float32, "train step %d" % step)
    ref.assert_close([m.weight.grad.numpy(), m.bias.grad.numpy(), m.running_mean.numpy(), m.running_var.numpy()],
                     [tm.weight.grad.numpy(), tm.bias.grad.numpy(), tm.running_mean.numpy(),
                      tm.running_var.numpy()], np.float32, "parameters and running statistics")
    assert int(m.num_batches_tracked.numpy()) == 2
    m.eval()
    tm.eval()
    x = _x(np.float32, shape, seed=5)
    outs, grads, rs = ref.eager(m, [x])
    t_outs, t_grads = ref.torch_ref(tm, [x], rs)
    ref.assert_close(outs + grads, t_outs + t_grads, np.float32, "eval")


@pytest.mark.parametrize("kw", [dict(affine=False), dict(track_running_stats=False), dict(momentum=None)])
def test_batchnorm_options_as_torch(kw):
    m, tm = flow.nn.BatchNorm2d(4, **kw), torch.nn.BatchNorm2d(4, **kw)
    for step in range(3):
        x = _x(np.float32, seed=step)
        outs, grads, rs = ref.eager(m, [x])
        t_outs, t_grads = ref.torch_ref(tm, [x], rs)
        ref.assert_close(outs + grads, t_outs + t_grads, np.float32, str(kw))
    if tm.running_mean is not None:
        ref.assert_close([m.running_mean.numpy(), m.running_var.numpy()],
                         [tm.running_mean.numpy(), tm.running_var.numpy()], np.float32, "running stats")
    else:
        assert m.running_mean is None and "running_mean" not in m.state_dict()


@pytest.mark.parametrize("make,tmake,shape,text", [
    (lambda: flow.nn.LayerNorm((3, 2)), lambda: torch.nn.LayerNorm((3, 2)), (5, 4, 3, 2),
     "LayerNorm((3, 2), eps=1e-05, elementwise_affine=True)"),
    (lambda: flow.nn.LayerNorm(6, elementwise_affine=False), lambda: torch.nn.LayerNorm(6,
                                                                                        elementwise_affine=False),
     (5, 6), "LayerNorm((6,), eps=1e-05, elementwise_affine=False)"),
    (lambda: flow.nn.GroupNorm(2, 4), lambda: torch.nn.GroupNorm(2, 4), (5, 4, 3, 2),
     "GroupNorm(2, 4, eps=1e-05, affine=True)"),
    (lambda: flow.nn.InstanceNorm1d(4, affine=True), lambda: torch.nn.InstanceNorm1d(4, affine=True), (5, 4, 6),
     "InstanceNorm1d(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=False)"),
    (lambda: flow.nn.InstanceNorm2d(4), lambda: torch.nn.InstanceNorm2d(4), (5, 4, 3, 2),
     "InstanceNorm2d(4, eps=1e-05, momentum=0.1, affine=False, track_running_stats=False)"),
    (lambda: flow.nn.InstanceNorm3d(4, affine=True), lambda: torch.nn.InstanceNorm3d(4, affine=True),
     (3, 4, 3, 2, 2), "InstanceNorm3d(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=False)"),
])
def test_norm_modules_match_torch_with_parameter_gradients(make, tmake, shape, text):
    m, tm = make(), tmake()
    assert repr(m) == text
    params = [p for _, p in m.named_parameters()]
    rng = np.random.default_rng(4)
    for p, tp_ in zip(params, tm.parameters()):
        v = rng.uniform(0.5, 1.5, tuple(p.shape)).astype(np.float32)
        with flow.no_grad():
            p.copy_(flow.tensor(v))
        with torch.no_grad():
            tp_.copy_(torch.tensor(v))
    x = _x(np.float32, shape)
    outs, grads, rs = ref.eager(m, [x])
    t_outs, t_grads = ref.torch_ref(tm, [x], rs)
    ref.assert_close(outs + grads, t_outs + t_grads, np.float32, text)
    ref.assert_close([p.grad.numpy() for p in params], [p.grad.numpy() for p in tm.parameters()], np.float32,
                     text + " parameter grads")


def test_functional_norms_match_torch():
    F = flow.nn.functional
    x = _x(np.float64, (5, 4, 3))
    m, v, w, b = _x(np.float64, (4,), 1), _pos(np.float64, (4,), 2), _x(np.float64, (4,), 3), _x(np.float64, (4,), 4)
    for fn, tfn in [
        (lambda x: F.batch_norm(x, flow.tensor(m), flow.tensor(v), flow.tensor(w), flow.tensor(b)),
         lambda x: TF.batch_norm(x, torch.tensor(m), torch.tensor(v), torch.tensor(w), torch.tensor(b))),
        (lambda x: F.batch_norm(x, None, None, training=True), lambda x: TF.batch_norm(x, None, None, training=True)),
        (lambda x: F.layer_norm(x, (4, 3)), lambda x: TF.layer_norm(x, (4, 3))),
        (lambda x: F.group_norm(x, 2, flow.tensor(w), flow.tensor(b)),
         lambda x: TF.group_norm(x, 2, torch.tensor(w), torch.tensor(b))),
        (lambda x: F.instance_norm(x), lambda x: TF.instance_norm(x)),
    ]:
        outs, grads, rs = ref.eager(fn, [x])
        t_outs, t_grads = ref.torch_ref(tfn, [x], rs)
        ref.assert_close(outs + grads, t_outs + t_grads, np.float64, "functional")


def test_batchnorm_in_a_graph_updates_the_running_statistics_as_eager():
    def make():
        flow.manual_seed(3)
        return flow.nn.Sequential(flow.nn.Linear(3, 3), flow.nn.BatchNorm2d(2), flow.nn.ReLU())

    eager_net, graph_net = make(), make()
    graph_net.load_state_dict(eager_net.state_dict())
    opt_e = flow.optim.SGD(eager_net.parameters(), lr=0.1)
    opt_g = flow.optim.SGD(graph_net.parameters(), lr=0.1)

    class Train(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.net = graph_net
            self.add_optimizer(opt_g)

        def build(self, x):
            loss = self.net(x).sum()
            loss.backward()
            return loss

    train = Train()
    for step in range(3):
        x = flow.tensor(_x(np.float32, (4, 2, 3, 3), seed=step))
        loss = eager_net(x).sum()
        loss.backward()
        opt_e.step()
        opt_e.zero_grad()
        np.testing.assert_allclose(train(x).numpy(), loss.numpy(), rtol=1e-5)
    for (name, a), (_, b) in zip(eager_net.state_dict().items(), graph_net.state_dict().items()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    assert int(graph_net[1].num_batches_tracked.numpy()) == 3
