"""`flow.nn.Module` and its layers, losses, `flow.optim` and `flow.save/load` of state dicts (global-tensor API).

In-process tests run in a world of 1 (global tensors on placement [0]); the MPI test trains seed 004's pipeline
model and a data-parallel model eagerly on 2 ranks and compares every number with the same program on 1 rank.
"""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.nn.functional as F
from oneflow_compat import nn
from oneflow_compat.comm import mpiexec_command

MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")
P0 = flow.placement("cpu", [0])
B, S0 = flow.sbp.broadcast, flow.sbp.split(0)


def _mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 5))


def _values(module):
    return [p.numpy().copy() for p in module.parameters()]


# --- layers -------------------------------------------------------------------------------------------------------
def test_linear_init_bounds_forward_and_repr():
    flow.manual_seed(1)
    m = nn.Linear(20, 6)
    w, b = m.weight.numpy(), m.bias.numpy()
    assert w.shape == (6, 20) and b.shape == (6,) and w.dtype == np.float32
    bound = 1 / math.sqrt(20)  # kaiming_uniform(a=√5) and the bias rule both give 1/√fan_in
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.8 * bound and w.std() == pytest.approx(bound / math.sqrt(3), rel=0.2)
    x = np.random.default_rng(0).standard_normal((4, 3, 20)).astype(np.float32)
    np.testing.assert_allclose(m(flow.tensor(x)).numpy(), x @ w.T + b, rtol=1e-5, atol=1e-6)
    assert repr(m) == "Linear(in_features=20, out_features=6, bias=True)"
    nobias = nn.Linear(3, 2, bias=False)
    assert nobias.bias is None and [n for n, _ in nobias.named_parameters()] == ["weight"]
    flow.manual_seed(1)
    again = nn.Linear(20, 6)  # the local generator, reseeded, gives the same initial values
    np.testing.assert_array_equal(again.weight.numpy(), w)


def test_relu_flatten_sequential():
    x = flow.tensor(np.arange(-12, 12, dtype=np.float32).reshape(2, 3, 4))
    assert tuple(nn.Flatten()(x).shape) == (2, 12)
    assert tuple(nn.Flatten(0, 1)(x).shape) == (6, 4)
    np.testing.assert_array_equal(nn.ReLU()(x).numpy(), np.maximum(x.numpy(), 0))
    seq = nn.Sequential(nn.Flatten(), nn.ReLU())
    assert len(seq) == 2 and isinstance(seq[1], nn.ReLU) and isinstance(seq[-1], nn.ReLU)
    assert tuple(seq(x).shape) == (2, 12)
    assert repr(_mlp()) == ("Sequential(\n  (0): Flatten(start_dim=1, end_dim=-1)\n"
                            "  (1): Linear(in_features=12, out_features=8, bias=True)\n  (2): ReLU()\n"
                            "  (3): Linear(in_features=8, out_features=5, bias=True)\n)")


def test_module_registration_walks_and_state_dict():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)
            self.register_buffer("count", flow.zeros(1))
            self.register_buffer("scratch", flow.zeros(2), persistent=False)
            self.scale = nn.Parameter(flow.ones(3))
            self.note = "plain attribute"

        def forward(self, x):
            return self.fc(x) * self.scale

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = Block()
            self.b = Block()
            self.b.fc = self.a.fc  # tied: one parameter, listed once

        def forward(self, x):
            return self.b(self.a(x))

    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["a.scale", "a.fc.weight", "a.fc.bias", "b.scale"]
    assert len(list(net.parameters())) == 4
    assert [n for n, _ in net.named_modules()] == ["", "a", "a.fc", "b"]
    assert [type(c).__name__ for c in net.children()] == ["Block", "Block"]
    assert list(net.state_dict()) == ["a.scale", "a.count", "a.fc.weight", "a.fc.bias", "b.scale", "b.count",
                                      "b.fc.weight", "b.fc.bias"]
    assert net.a.note == "plain attribute" and isinstance(net.a.count, flow.Tensor)
    with pytest.raises(TypeError, match="cannot assign 'oneflow.Tensor' as parameter 'scale'"):
        net.a.scale = flow.ones(3)
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'missing'"):
        net.missing
    assert net.training and not net.eval().a.fc.training and net.train().b.training
    visited = []
    net.apply(lambda m: visited.append(type(m).__name__))
    assert visited == ["Linear", "Block", "Linear", "Block", "Net"]  # as PyTorch: per parent

    class Forgot(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(2, 2)

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Forgot()
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(1)


def test_parameter_keeps_storage_and_layout():
    t = flow.randn(3, 4, placement=P0, sbp=S0)
    p = nn.Parameter(t)
    assert p.is_leaf and p.requires_grad and p.is_global and p.sbp == (S0,) and p.placement == P0
    assert repr(p).startswith("tensor(") and repr(p).endswith("requires_grad=True)")  # OneFlow 0.9: no "Parameter containing:"
    t.zero_()  # same storage
    assert np.all(p.numpy() == 0)
    assert not nn.Parameter(flow.ones(2), requires_grad=False).requires_grad


def test_zero_grad_and_requires_grad():
    m = _mlp()
    m(flow.randn(2, 3, 4)).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad()
    assert all(np.all(p.grad.numpy() == 0) for p in m.parameters())
    m.zero_grad(set_to_none=True)
    assert all(p.grad is None for p in m.parameters())
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


# --- losses -------------------------------------------------------------------------------------------------------
def _log_softmax(x):
    z = x - x.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def test_cross_entropy_and_mse_numbers():
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((7, 5)).astype(np.float32)
    labels = rng.integers(0, 5, 7)
    per = -_log_softmax(logits.astype(np.float64))[np.arange(7), labels]
    x, y = flow.tensor(logits, requires_grad=True), flow.tensor(labels)
    loss = nn.CrossEntropyLoss()(x, y)
    assert tuple(loss.shape) == ()
    assert loss.item() == pytest.approx(per.mean(), rel=1e-5)
    assert nn.CrossEntropyLoss(reduction="sum")(x, y).item() == pytest.approx(per.sum(), rel=1e-5)
    np.testing.assert_allclose(nn.CrossEntropyLoss(reduction="none")(x, y).numpy(), per, rtol=1e-5)
    loss.backward()
    soft = np.exp(_log_softmax(logits.astype(np.float64)))
    soft[np.arange(7), labels] -= 1
    np.testing.assert_allclose(x.grad.numpy(), soft / 7, rtol=1e-4, atol=1e-7)

    a, b = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
    ta = flow.tensor(a, requires_grad=True)
    mse = nn.MSELoss()(ta, flow.tensor(b))
    assert mse.item() == pytest.approx(((a - b) ** 2).mean(), rel=1e-5)
    assert nn.MSELoss(reduction="sum")(ta, flow.tensor(b)).item() == pytest.approx(((a - b) ** 2).sum(), rel=1e-5)
    np.testing.assert_allclose(nn.MSELoss(reduction="none")(ta, flow.tensor(b)).numpy(), (a - b) ** 2, rtol=1e-6)
    mse.backward()
    np.testing.assert_allclose(ta.grad.numpy(), 2 * (a - b) / a.size, rtol=1e-5)
    with pytest.raises(ValueError, match="reduction must be one of"):
        nn.MSELoss(reduction="avg")


# --- dropout ------------------------------------------------------------------------------------------------------
def test_dropout_train_and_eval():
    flow.manual_seed(7)
    x = flow.tensor(np.full((200, 50), 3.0, np.float32), requires_grad=True)
    drop = nn.Dropout(p=0.4)
    y = drop(x)
    out = y.numpy()
    kept = out != 0
    assert kept.mean() == pytest.approx(0.6, abs=0.03)
    np.testing.assert_allclose(out[kept], 3.0 / 0.6, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), kept / 0.6, rtol=1e-6)
    assert not np.array_equal(drop(x).numpy() != 0, kept)  # a fresh mask per call
    drop.eval()
    assert drop(x) is x
    assert F.dropout(x, 0.0) is x and F.dropout(x, 0.5, training=False) is x
    assert np.all(F.dropout(x, 1.0).numpy() == 0)
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)
    # a global tensor's mask comes from the global generator: the same values for every SBP
    flow.manual_seed(11)
    a = F.dropout(flow.ones(6, 4, placement=P0, sbp=B), 0.5).numpy()
    flow.manual_seed(11)
    b = F.dropout(flow.ones(6, 4, placement=P0, sbp=S0), 0.5).numpy()
    np.testing.assert_array_equal(a, b)


# --- training against references ----------------------------------------------------------------------------------
def _batches(steps):
    rng = np.random.default_rng(0)
    return [(rng.standard_normal((6, 3, 4)).astype(np.float32), rng.integers(0, 5, 6)) for _ in range(steps)]


OPTIMIZERS = {
    "sgd": (lambda p: flow.optim.SGD(p, lr=0.1), "SGD", dict(lr=0.1)),
    "sgd_wd": (lambda p: flow.optim.SGD(p, lr=0.1, weight_decay=0.05), "SGD", dict(lr=0.1, weight_decay=0.05)),
    "momentum_wd": (lambda p: flow.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01), "SGD",
                    dict(lr=0.1, momentum=0.9, weight_decay=0.01)),
    "nesterov": (lambda p: flow.optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True), "SGD",
                 dict(lr=0.05, momentum=0.8, nesterov=True)),
    "adam": (lambda p: flow.optim.Adam(p, lr=0.01), "Adam", dict(lr=0.01)),
    "adam_wd": (lambda p: flow.optim.Adam(p, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.02), "Adam",
                dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.02)),
    "amsgrad": (lambda p: flow.optim.Adam(p, lr=0.02, amsgrad=True), "Adam", dict(lr=0.02, amsgrad=True)),
}


@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
def test_mlp_training_matches_torch(kind):
    torch = pytest.importorskip("torch")
    make, torch_name, torch_kwargs = OPTIMIZERS[kind]
    flow.manual_seed(0)
    m = _mlp()
    tm = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 8), torch.nn.ReLU(), torch.nn.Linear(8, 5))
    with torch.no_grad():
        for (name, p), (tname, tp) in zip(m.named_parameters(), tm.named_parameters()):
            assert name == tname
            tp.copy_(torch.from_numpy(p.numpy().copy()))
    opt, topt = make(m.parameters()), getattr(torch.optim, torch_name)(tm.parameters(), **torch_kwargs)
    loss_fn, tloss_fn = nn.CrossEntropyLoss(), torch.nn.CrossEntropyLoss()
    for x, y in _batches(5):
        loss = loss_fn(m(flow.tensor(x)), flow.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        tloss = tloss_fn(tm(torch.from_numpy(x)), torch.from_numpy(y))
        topt.zero_grad()
        tloss.backward()
        topt.step()
        assert loss.item() == pytest.approx(tloss.item(), rel=1e-5)
    for p, tp in zip(m.parameters(), tm.parameters()):
        np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_linear_sgd_momentum_matches_hand_numpy():
    """One Linear layer, MSE loss, SGD with momentum and weight decay, written out in numpy (no torch needed)."""
    flow.manual_seed(2)
    m = nn.Linear(4, 3)
    w, b = m.weight.numpy().astype(np.float64), m.bias.numpy().astype(np.float64)
    opt = flow.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, weight_decay=0.1)
    bw, bb = np.zeros_like(w), np.zeros_like(b)
    rng = np.random.default_rng(5)
    for _ in range(4):
        x, t = rng.standard_normal((8, 4)).astype(np.float32), rng.standard_normal((8, 3)).astype(np.float32)
        loss = nn.MSELoss()(m(flow.tensor(x)), flow.tensor(t))
        opt.zero_grad()
        loss.backward()
        opt.step()
        y = x @ w.T + b
        assert loss.item() == pytest.approx(((y - t) ** 2).mean(), rel=1e-5)
        dy = 2 * (y - t) / y.size
        gw, gb = dy.T @ x + 0.1 * w, dy.sum(0) + 0.1 * b  # weight decay is an L2 term of the gradient
        bw, bb = 0.9 * bw + gw, 0.9 * bb + gb
        w, b = w - 0.05 * bw, b - 0.05 * bb
    np.testing.assert_allclose(m.weight.numpy(), w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m.bias.numpy(), b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(opt.state[m.weight]["momentum_buf"].numpy(), bw, rtol=1e-5, atol=1e-6)


def test_adam_bias_correction_matches_hand_numpy():
    p = nn.Parameter(flow.tensor([1.0, -2.0, 0.5]))
    opt = flow.optim.Adam([p], lr=0.1, betas=(0.9, 0.99), eps=1e-3)
    w, m, v = np.array([1.0, -2.0, 0.5]), np.zeros(3), np.zeros(3)
    for t in range(1, 4):
        (p * p).sum().backward()
        opt.step()
        opt.zero_grad()
        g = 2 * w
        m, v = 0.9 * m + 0.1 * g, 0.99 * v + 0.01 * g * g
        w = w - 0.1 / (1 - 0.9 ** t) * m / (np.sqrt(v) / np.sqrt(1 - 0.99 ** t) + 1e-3)
    np.testing.assert_allclose(p.numpy(), w, rtol=1e-5)
    plain = nn.Parameter(flow.tensor([1.0]))
    opt = flow.optim.Adam([plain], lr=0.1, do_bias_correction=False)
    (plain * 3).sum().backward()
    opt.step()  # m = 0.3, v = 0.009: w - 0.1·0.3/(√0.009 + 1e-8)
    assert plain.item() == pytest.approx(1 - 0.1 * 0.3 / (math.sqrt(0.009) + 1e-8), rel=1e-5)


def test_param_groups_state_dict_and_errors():
    a, b = nn.Linear(2, 2), nn.Linear(2, 1)
    opt = flow.optim.SGD([{"params": a.parameters()}, {"params": b.parameters(), "lr": 0.5}], lr=0.1,
                         momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[1].parameters == list(b.parameters())
    b(a(flow.randn(3, 2))).sum().backward()
    opt.step()
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2, 3]]
    assert sorted(sd["state"], key=str) == [0, 1, 2, 3, "step"] and list(sd["state"][0]) == ["momentum_buf"]
    assert sd["state"]["step"] == 1  # OneFlow 0.9 keeps the step count in the state
    opt2 = flow.optim.SGD([{"params": a.parameters()}, {"params": b.parameters()}], lr=1.0, momentum=0.9)
    opt2.load_state_dict(sd)
    assert [g["lr"] for g in opt2.param_groups] == [0.1, 0.5]
    np.testing.assert_array_equal(opt2.state[b.weight]["momentum_buf"].numpy(),
                                  opt.state[b.weight]["momentum_buf"].numpy())
    with pytest.raises(ValueError, match="empty parameter list"):
        flow.optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        flow.optim.SGD([{"params": a.parameters()}, {"params": [a.weight]}], lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        flow.optim.Adam(a.parameters(), lr=-1)


def test_lr_schedulers():
    p = nn.Parameter(flow.ones(1))
    opt = flow.optim.SGD([p], lr=1.0)
    step = flow.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    seen = [opt.param_groups[0]["lr"]]
    for _ in range(5):
        opt.step()
        step.step()
        seen.append(opt.param_groups[0]["lr"])
    assert seen == [1.0, 1.0, 0.5, 0.5, 0.25, 0.25] and step.get_last_lr() == [0.25]
    opt = flow.optim.SGD([p], lr=0.1)
    cos = flow.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=0.01)
    got = [opt.param_groups[0]["lr"]]
    for _ in range(4):
        cos.step()
        got.append(opt.param_groups[0]["lr"])
    want = [0.01 + 0.09 * (1 + math.cos(math.pi * t / 4)) / 2 for t in range(5)]
    assert got == pytest.approx(want)
    state = cos.state_dict()
    assert state["last_step"] == 4 and "optimizer" not in state


# --- to_global of a module ----------------------------------------------------------------------------------------
def test_to_global_replaces_local_parameters_and_keeps_global_ones():
    flow.manual_seed(4)
    m = _mlp()
    before = [p for p in m.parameters()]
    values = _values(m)
    m(flow.randn(2, 3, 4)).sum().backward()
    grads = [p.grad.numpy().copy() for p in m.parameters()]
    assert m.to_consistent(placement=P0, sbp=[B]) is m
    after = list(m.parameters())
    assert all(a is not b for a, b in zip(after, before))  # local -> global: new Parameter objects (OneFlow)
    assert all(p.is_global and p.placement == P0 and p.sbp == (B,) and isinstance(p, nn.Parameter) for p in after)
    assert all(p.requires_grad and p.grad.is_global for p in after)
    for v, g, p in zip(values, grads, after):
        np.testing.assert_array_equal(p.numpy(), v)
        np.testing.assert_array_equal(p.grad.numpy(), g)
    m.to_global(sbp=S0)  # global -> global: the same objects, new layout
    assert list(m.parameters()) == after and all(p.sbp == (S0,) for p in after)
    for v, p in zip(values, m.parameters()):
        np.testing.assert_array_equal(p.numpy(), v)
    # an optimizer built after the conversion trains the global parameters
    opt = flow.optim.SGD(m.parameters(), lr=0.1)
    x = flow.randn(4, 3, 4, placement=P0, sbp=S0)
    loss = nn.CrossEntropyLoss()(m(x), flow.randint(0, 5, (4,), placement=P0, sbp=S0))
    loss.backward()
    opt.step()
    assert any(not np.array_equal(p.numpy(), v) for v, p in zip(values, m.parameters()))


def test_to_global_keeps_tied_parameters_tied():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(3, 3)
            self.dec = nn.Linear(3, 3)
            self.dec.weight = self.enc.weight

    t = Tied().to_global(P0, B)
    assert t.dec.weight is t.enc.weight and t.enc.weight.is_global


# --- save / load ---------------------------------------------------------------------------------------------------
def test_state_dict_round_trip_through_save_and_load(tmp_path):
    flow.manual_seed(5)
    m = _mlp()
    path = tmp_path / "model"
    flow.save(m.state_dict(), str(path))
    assert sorted(os.listdir(path)) == ["1.bias", "1.weight", "3.bias", "3.weight", "snapshot_done"]
    assert (path / "1.weight" / "meta").read_text() == "shape {\n  dim: 8\n  dim: 12\n}\ndata_type: kFloat\n"
    assert (path / "1.weight" / "out").stat().st_size == 8 * 12 * 4
    loaded = flow.load(str(path))
    assert sorted(loaded) == ["1.bias", "1.weight", "3.bias", "3.weight"]
    assert all(isinstance(t, flow.Tensor) and t.is_local for t in loaded.values())
    fresh = _mlp()
    assert repr(fresh.load_state_dict(loaded)) == "<All keys matched successfully>"
    for a, b in zip(_values(m), _values(fresh)):
        np.testing.assert_array_equal(a, b)
    # into a global module, on its own layout
    g = _mlp().to_global(P0, B).to_global(P0, S0)
    g.load_state_dict(flow.load(str(path)))
    for a, p in zip(_values(m), g.parameters()):
        assert p.sbp == (S0,)
        np.testing.assert_array_equal(p.numpy(), a)
    # a global state dict saves its logical values; saving again replaces the earlier save
    flow.save(g.state_dict(), str(path))
    expected = m.state_dict()
    for name, t in flow.load(str(path)).items():
        np.testing.assert_array_equal(t.numpy(), expected[name].numpy())


def test_load_state_dict_checks_everything_before_copying():
    m = nn.Linear(3, 2)
    before = _values(m)
    bad = {"weight": flow.zeros(2, 3), "bias": flow.zeros(5), "extra": flow.zeros(1)}
    with pytest.raises(RuntimeError) as info:
        m.load_state_dict(bad)
    assert str(info.value) == (
        "Error(s) in loading state_dict for Linear:\n"
        '\tUnexpected key(s) in state_dict: "extra". \n'
        "\tsize mismatch for bias: copying a param with shape oneflow.Size([5]) from checkpoint, the shape in "
        "current model is oneflow.Size([2]).")
    for a, b in zip(before, _values(m)):
        np.testing.assert_array_equal(a, b)  # nothing copied
    result = m.load_state_dict({"weight": np.ones((2, 3), np.float32)}, strict=False)
    assert result.missing_keys == ["bias"] and result.unexpected_keys == []
    assert np.all(m.weight.numpy() == 1)


def test_save_nested_objects_and_refusals(tmp_path):
    p = nn.Parameter(flow.tensor([[1.0, 2.0]]))
    opt = flow.optim.Adam([p], lr=0.1)
    (p * p).sum().backward()
    opt.step()
    obj = {"epoch": 3, "optimizer": opt.state_dict(), "note": ("a", 1.5, None)}
    flow.save(obj, str(tmp_path / "ckpt"))
    assert {"structure.pickle", "snapshot_done", "optimizer.state.0.exp_avg"} <= set(os.listdir(tmp_path / "ckpt"))
    back = flow.load(str(tmp_path / "ckpt"))
    assert back["epoch"] == 3 and back["note"] == ("a", 1.5, None)
    assert back["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.999)
    assert back["optimizer"]["state"]["step"] == 1
    restored = flow.optim.Adam([nn.Parameter(flow.tensor([[1.0, 2.0]]))], lr=0.1)
    restored.load_state_dict(back["optimizer"])
    assert restored._step_count == 1  # the next step's bias correction is that of step 2
    np.testing.assert_array_equal(back["optimizer"]["state"][0]["exp_avg_sq"].numpy(),
                                  opt.state[p]["exp_avg_sq"].numpy())
    # one tensor
    flow.save(flow.arange(4), str(tmp_path / "one"))
    np.testing.assert_array_equal(flow.load(str(tmp_path / "one")).numpy(), np.arange(4))
    # a folder of other things is never overwritten, a failed save leaves nothing behind
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(AssertionError, match="is a file or non-empty directory"):
        flow.save({"w": flow.ones(2)}, str(other))
    assert os.listdir(other) == ["notes.txt"]
    with pytest.raises(TypeError, match="cannot save"):
        flow.save({"f": lambda: 0}, str(tmp_path / "bad"))
    assert not (tmp_path / "bad").exists()
    # a structure file that would run code is refused
    (tmp_path / "evil").mkdir()
    import pickle

    (tmp_path / "evil" / "structure.pickle").write_bytes(pickle.dumps(os.getcwd))
    with pytest.raises(pickle.UnpicklingError, match="is not allowed"):
        flow.load(str(tmp_path / "evil"))


def test_legacy_save_and_load_keep_working(tmp_path):
    import oneflow_compat.typing as tp

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(3,), initializer=flow.constant_initializer(2.0))
        return x * w

    flow.save(str(tmp_path / "legacy"))  # legacy: flow.save(path, var_dict=None) = flow.checkpoint.save
    assert sorted(os.listdir(tmp_path / "legacy")) == ["snapshot_done", "w"]
    loaded = flow.load(str(tmp_path / "legacy"))  # legacy API in use: checkpoint entries
    assert type(loaded["w"]).__name__ == "FileBackendVariableBlob"
    np.testing.assert_array_equal(loaded["w"].numpy(), np.full(3, 2.0, np.float32))


# --- MPI: seed 004's model and a data-parallel model, 2 ranks == 1 rank ----------------------------------------------
TRAINING_PROGRAM = r'''
import os
import sys

import numpy as np
import oneflow as flow

OUT, SAVE_DIR = sys.argv[1], sys.argv[2]
WORLD = flow.env.get_world_size()
BATCH_SIZE = 16
BROADCAST = [flow.sbp.broadcast]
flow.manual_seed(0)
# seed 004's placements (two ranks); on one rank both stages live on rank 0
P0 = flow.placement("cuda", {0: [0]})
P1 = flow.placement("cuda", {0: [1]}) if WORLD > 1 else P0


class Stage0Module(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = flow.nn.Flatten()
        self.linear0 = flow.nn.Linear(28*28, 512)
        self.relu0 = flow.nn.ReLU()

    def forward(self, x):
        out = self.flatten(x)
        out = self.linear0(out)
        out = self.relu0(out)
        return out


class Stage1Module(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1 = flow.nn.Linear(512, 512)
        self.relu1 = flow.nn.ReLU()
        self.linear2 = flow.nn.Linear(512, 10)
        self.relu2 = flow.nn.ReLU()

    def forward(self, x):
        out = self.linear1(x)
        out = self.relu1(out)
        out = self.linear2(out)
        out = self.relu2(out)
        return out


class PipelineModule(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.m_stage0 = Stage0Module()
        self.m_stage1 = Stage1Module()

        self.m_stage0.to_consistent(placement=P0, sbp=BROADCAST)
        self.m_stage1.to_consistent(placement=P1, sbp=BROADCAST)

    def forward(self, x):
        out_stage0 = self.m_stage0(x)
        in_stage1 = out_stage0.to_consistent(placement=P1, sbp=BROADCAST)
        out_stage1 = self.m_stage1(in_stage1)
        return out_stage1


module_pipeline = PipelineModule()
sgd = flow.optim.SGD(module_pipeline.parameters(), lr=0.001)
loss_fn = flow.nn.CrossEntropyLoss()
x = flow.randn(BATCH_SIZE, 1, 28, 28)
x = x.to_consistent(P0, BROADCAST)
y = flow.randint(0, 10, (BATCH_SIZE,))
y = y.to_consistent(P1, BROADCAST)
result = {}
pipeline_losses = []
for i in range(5):
    loss = loss_fn(module_pipeline(x), y)
    loss.backward()
    sgd.step()
    sgd.zero_grad()
    pipeline_losses.append(loss.numpy())
result["pipeline/loss"] = np.array(pipeline_losses)
for name, t in module_pipeline.state_dict().items():
    result["pipeline/" + name] = t.numpy()

# data parallel: B parameters, split(0) batches of 9 rows (5 + 4 on two ranks), dropout, Adam and momentum SGD
PALL = flow.placement("cpu", list(range(WORLD)))
net = flow.nn.Sequential(flow.nn.Linear(6, 16), flow.nn.ReLU(), flow.nn.Dropout(0.25), flow.nn.Linear(16, 3))
net.to_global(PALL, flow.sbp.broadcast)
head = flow.nn.Linear(3, 2).to_global(PALL, flow.sbp.broadcast)
adam = flow.optim.Adam(net.parameters(), lr=0.01, weight_decay=0.01)
momentum = flow.optim.SGD(head.parameters(), lr=0.05, momentum=0.9)
ce, mse = flow.nn.CrossEntropyLoss(), flow.nn.MSELoss(reduction="sum")
losses = []
for step in range(4):
    X = flow.randn(9, 6, placement=PALL, sbp=flow.sbp.split(0))
    Y = flow.randint(0, 3, (9,), placement=PALL, sbp=flow.sbp.split(0))
    T = flow.randn(9, 2, placement=PALL, sbp=flow.sbp.split(0))
    out = net(X)
    loss = ce(out, Y) + mse(head(out), T)
    adam.zero_grad()
    momentum.zero_grad()
    loss.backward()
    adam.step()
    momentum.step()
    losses.append(loss.numpy())
net.eval()
result["dp/eval"] = net(flow.ones(2, 6, placement=PALL, sbp=flow.sbp.broadcast)).numpy()
result["dp/loss"] = np.array(losses)
for name, t in net.state_dict().items():
    result["dp/" + name] = t.numpy()
    assert t.sbp == (flow.sbp.broadcast,)

# a global state dict saved by rank 0, loaded into a model-parallel copy (weights split(0))
flow.save(net.state_dict(), SAVE_DIR)
copy = flow.nn.Sequential(flow.nn.Linear(6, 16), flow.nn.ReLU(), flow.nn.Dropout(0.25), flow.nn.Linear(16, 3))
copy.to_global(PALL, flow.sbp.broadcast)  # local -> global takes the first rank's values (a split would
copy.to_global(PALL, flow.sbp.split(0))  # concatenate the ranks' local tensors); then global -> global
copy.load_state_dict(flow.load(SAVE_DIR))
for name, t in copy.state_dict().items():
    assert t.sbp == (flow.sbp.split(0),)
    result["loaded/" + name] = t.numpy()
np.savez(OUT + ".%d.npz" % os.getpid(), **result)
print("done rank", flow.env.get_rank())
'''


@pytest.mark.skipif(not os.path.exists(MPIEXEC), reason="no mpiexec in the virtual environment")
def test_eager_training_on_two_ranks_equals_one_rank(tmp_path):
    program = tmp_path / "train.py"
    program.write_text(TRAINING_PROGRAM)
    env = dict(os.environ, ONEFLOW_COMPAT_OUTPUT="all")

    def run(cmd, name):
        p = subprocess.run(cmd + [str(program), str(tmp_path / name), str(tmp_path / (name + "_saved"))],
                           capture_output=True, text=True, timeout=120,
                           env=mpiexec_command.environment(MPIEXEC, env), cwd=str(tmp_path))
        assert p.returncode == 0, p.stdout + p.stderr
        files = sorted(f for f in os.listdir(tmp_path) if f.startswith(name + ".") and f.endswith(".npz"))
        return [dict(np.load(tmp_path / f)) for f in files]

    (ref,) = run([sys.executable], "one")
    got = run(["timeout", "100", MPIEXEC, "-n", "2", sys.executable, "-m", "mpi4py"], "two")
    assert len(got) == 2  # every rank gathered every logical value
    for rank_result in got:
        assert set(rank_result) == set(ref)
        for key in ref:
            np.testing.assert_allclose(rank_result[key], ref[key], rtol=1e-5, atol=1e-6, err_msg=key)
    for key in ref:
        if key.startswith("dp/") and key not in ("dp/loss", "dp/eval"):
            np.testing.assert_array_equal(ref["loaded/" + key[3:]], ref[key])
    assert ref["pipeline/loss"][-1] < ref["pipeline/loss"][0]


# --- the examples: 1 rank and 2 ranks under the launcher print the same numbers ---------------------------------------
EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


@pytest.mark.skipif(not os.path.exists(MPIEXEC), reason="no mpiexec in the virtual environment")
@pytest.mark.parametrize("name", ["data", "model", "pipeline", "mixed"])
def test_global_examples_on_one_and_two_ranks(name, mnist_path, tmp_path):
    script = os.path.join(EXAMPLES, "global_%s_parallel.py" % name)
    args = [script, "--data-dir", os.path.dirname(mnist_path), "--steps", "2", "--eval-batches", "3"]

    def lines(cmd):
        p = subprocess.run(cmd + args, capture_output=True, text=True, timeout=200, cwd=str(tmp_path),
                           env=mpiexec_command.environment(MPIEXEC))
        assert p.returncode == 0, p.stdout + p.stderr
        return [line for line in p.stdout.splitlines() if line.startswith(("step", "test accuracy"))]

    one = lines([sys.executable])
    two = lines(["timeout", "180", sys.executable, "-m", "oneflow_compat.distributed.launch", "--nproc_per_node",
                 "2"])
    assert [line.split()[0] for line in one] == ["step", "test"] and one[0].startswith("step 0 loss ")
    assert two == one
