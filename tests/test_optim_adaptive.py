"""OneFlow 0.9's AdamW, RMSprop, Adagrad, Adadelta, LAMB and its other lr schedulers (issue 21, global-tensor API).

Each optimizer against torch.optim on the same float64 weights and gradients (skipped without torch), or against a
numpy reference written here where OneFlow's formula differs from PyTorch's (RMSprop's ε inside the root, LAMB's
trust ratio); state-dict round trips; nn.Graph's compiled step == the eager step; under MPI, 2 ranks with split and
broadcast parameters == 1 rank (LAMB's norms on a split parameter summed over its pieces). Schedulers against
torch's where the formulas agree, else against the closed forms of OneFlow's files
(python/oneflow/nn/optimizer/*.py@v0.9.0).
"""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import nn
from oneflow_compat.comm import mpiexec_command

MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")
RNG = np.random.RandomState(0)
W0, A, B = RNG.randn(4, 3), RNG.randn(4, 3), RNG.rand(4, 3) + 0.5
V0, C = RNG.randn(5), RNG.randn(5)


def _grads(w, v):
    """The gradients of loss = Σ(A·w + B·w²/2) + Σ(C·v²) (what `_loss` computes)."""
    return A + B * w, 2 * C * v


def _run_flow(cls, kw, steps=6, opt_out=None):
    w = nn.Parameter(flow.tensor(W0.copy(), dtype=flow.float64))
    v = nn.Parameter(flow.tensor(V0.copy(), dtype=flow.float64))
    opt = cls([{"params": [w]}, {"params": [v], "lr": kw.get("lr", 0.01) / 2}], **kw)
    a, b, c = (flow.tensor(x, dtype=flow.float64) for x in (A, B, C))
    for _ in range(steps):
        opt.zero_grad()
        ((a * w + 0.5 * b * w * w).sum() + (c * v * v).sum()).backward()
        opt.step()
    if opt_out is not None:
        opt_out.append(opt)
    return w.numpy(), v.numpy()


def _run_torch(name, kw, steps=6):
    torch = pytest.importorskip("torch")
    w = torch.nn.Parameter(torch.tensor(W0.copy()))
    v = torch.nn.Parameter(torch.tensor(V0.copy()))
    opt = getattr(torch.optim, name)([{"params": [w]}, {"params": [v], "lr": kw.get("lr", 0.01) / 2}], **kw)
    a, b, c = (torch.tensor(x) for x in (A, B, C))
    for _ in range(steps):
        opt.zero_grad()
        ((a * w + 0.5 * b * w * w).sum() + (c * v * v).sum()).backward()
        opt.step()
    return w.detach().numpy(), v.detach().numpy()


TORCH_CASES = [
    ("AdamW", dict(lr=0.1, weight_decay=0.0)),  # OneFlow's default weight_decay is 0, PyTorch's 0.01
    ("AdamW", dict(lr=0.1, betas=(0.8, 0.9), weight_decay=0.1, eps=1e-3)),
    ("AdamW", dict(lr=0.1, weight_decay=0.05, amsgrad=True)),
    # PyTorch adds ε after the root, OneFlow inside it: with ε = 0 both are g/√(denominator)
    ("RMSprop", dict(lr=0.01, eps=0.0)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, eps=0.0, weight_decay=0.1, centered=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1, weight_decay=0.1, initial_accumulator_value=0.5, eps=1e-6)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1)),
    ("Adadelta", dict(lr=0.5, weight_decay=0.1, maximize=True)),
]


@pytest.mark.parametrize("name,kw", TORCH_CASES)
def test_optimizers_match_torch_in_float64(name, kw):
    want = _run_torch(name, kw)
    got = _run_flow(getattr(flow.optim, name), kw)
    for g, t in zip(got, want):
        np.testing.assert_allclose(g, t, rtol=1e-6, atol=1e-12)
    assert not np.allclose(got[0], W0)


def _numpy_reference(name, kw, steps=6):
    """OneFlow 0.9's formulas (model_update_kernel_util.{h,cpp}@v0.9.0), written independently of the package."""
    out = []
    for x0, lr, grad in ((W0, kw["lr"], lambda x: A + B * x), (V0, kw["lr"] / 2, lambda x: 2 * C * x)):
        x, s1, s2 = x0.copy(), np.zeros_like(x0), np.zeros_like(x0)
        for t in range(1, steps + 1):
            g = grad(x)
            if name == "RMSprop":
                alpha, eps, wd = kw.get("alpha", 0.99), kw["eps"], kw.get("weight_decay", 0.0)
                g = g + wd * x
                s1 = alpha * s1 + (1 - alpha) * g * g
                s2 = alpha * s2 + (1 - alpha) * g
                denom = s1 - s2 * s2 if kw.get("centered") else s1
                x = x - lr * g / np.sqrt(denom + eps)
            else:  # LAMB
                b1, b2 = kw.get("betas", (0.9, 0.999))
                eps, wd, adam_w = kw.get("eps", 1e-8), kw.get("weight_decay", 0.0), kw.get("adam_w_mode", True)
                if not adam_w:
                    g = g + wd * x
                s1 = b1 * s1 + (1 - b1) * g
                s2 = b2 * s2 + (1 - b2) * g * g
                bc1, bc2 = (1 - b1 ** t, 1 - b2 ** t) if kw.get("do_bias_correction", True) else (1.0, 1.0)
                d = (s1 / bc1) / (np.sqrt(s2) / np.sqrt(bc2) + eps)
                wn, dn = np.linalg.norm(x), np.linalg.norm(d)
                trust = wn / dn if wn > 0 and dn > 0 else 1.0
                x = x - lr * trust * (d + (wd if adam_w else 0.0) * x)
        out.append(x)
    return out


@pytest.mark.parametrize("name,kw", [
    ("RMSprop", dict(lr=0.01, eps=0.5)),  # ε inside the root (OneFlow), far from PyTorch's √v + ε
    ("RMSprop", dict(lr=0.01, eps=0.1, weight_decay=0.1, centered=True)),
    ("LAMB", dict(lr=0.1)),
    ("LAMB", dict(lr=0.1, weight_decay=0.1, betas=(0.8, 0.9))),
    ("LAMB", dict(lr=0.1, weight_decay=0.1, adam_w_mode=False, do_bias_correction=False)),
])
def test_oneflow_specific_formulas_match_numpy(name, kw):
    got = _run_flow(getattr(flow.optim, name), kw)
    for g, want in zip(got, _numpy_reference(name, kw)):
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-12)


def test_lamb_trust_ratio_is_one_for_zero_weights():
    p = nn.Parameter(flow.zeros(3, dtype=flow.float64))
    opt = flow.optim.LAMB([p], lr=0.1)
    (p * flow.tensor([1.0, -2.0, 3.0], dtype=flow.float64)).sum().backward()
    opt.step()  # ‖w‖ = 0: trust 1, and the bias-corrected Adam direction of one step is sign(g)·|g|/(|g| + ε)
    np.testing.assert_allclose(p.numpy(), -0.1 * np.array([1.0, -1.0, 1.0]), rtol=1e-6)


@pytest.mark.parametrize("name,kw,states", [
    ("AdamW", dict(lr=0.1, weight_decay=0.1, amsgrad=True), ["exp_avg", "exp_avg_sq", "max_exp_avg_sq"]),
    ("RMSprop", dict(lr=0.01, centered=True), ["square_avg", "grad_avg"]),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.3), ["sum"]),
    ("Adadelta", dict(lr=0.5), ["square_avgs", "acc_deltas"]),
    ("LAMB", dict(lr=0.1, weight_decay=0.1), ["exp_avg", "exp_avg_sq"]),
])
def test_state_dict_round_trip_continues_the_same_run(name, kw, states):
    cls = getattr(flow.optim, name)
    straight = _run_flow(cls, kw, steps=6)
    first = []
    w_half, v_half = _run_flow(cls, kw, steps=3, opt_out=first)
    sd = first[0].state_dict()
    assert sorted(sd["state"], key=str) == [0, 1, "step"] and list(sd["state"][0]) == states
    assert sd["state"]["step"] == 3  # the step count travels (bias correction, lr decay), as OneFlow 0.9's does
    w = nn.Parameter(flow.tensor(w_half, dtype=flow.float64))
    v = nn.Parameter(flow.tensor(v_half, dtype=flow.float64))
    opt = cls([{"params": [w]}, {"params": [v]}], lr=123.0)  # options come back from the state dict
    opt.load_state_dict(sd)
    assert opt.param_groups[1]["lr"] == kw["lr"] / 2
    a, b, c = (flow.tensor(x, dtype=flow.float64) for x in (A, B, C))
    for _ in range(3):
        opt.zero_grad()
        ((a * w + 0.5 * b * w * w).sum() + (c * v * v).sum()).backward()
        opt.step()
    np.testing.assert_allclose(w.numpy(), straight[0], rtol=1e-12)
    np.testing.assert_allclose(v.numpy(), straight[1], rtol=1e-12)


def test_adagrad_accumulator_starts_at_its_initial_value():
    p = nn.Parameter(flow.tensor([1.0, 2.0]))
    opt = flow.optim.Adagrad([p], initial_accumulator_value=0.25)
    np.testing.assert_array_equal(opt.state[p]["sum"].numpy(), [0.25, 0.25])  # filled when built (OneFlow)
    (p * flow.tensor([2.0, -4.0])).sum().backward()
    opt.step()
    np.testing.assert_allclose(p.numpy(), [1.0 - 0.001 * 2 / (math.sqrt(4.25) + 1e-10),
                                           2.0 + 0.001 * 4 / (math.sqrt(16.25) + 1e-10)], rtol=1e-6)


def test_bad_options_are_refused_with_oneflow_messages():
    p = nn.Parameter(flow.ones(2))
    with pytest.raises(ValueError, match="Not support momentum greater than zeros now"):
        flow.optim.RMSprop([p], momentum=0.9)
    with pytest.raises(RuntimeError, match="LAMB does not support AMSGrad variant"):
        flow.optim.LAMB([p], amsgrad=True)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.0"):
        flow.optim.AdamW([p], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Invalid initial_accumulator_value value: -1"):
        flow.optim.Adagrad([p], initial_accumulator_value=-1)
    with pytest.raises(ValueError, match="Invalid rho value: 1.5"):
        flow.optim.Adadelta([p], rho=1.5)
    with pytest.raises(ValueError, match="Invalid weight_decay value: -0.1"):
        flow.optim.LAMB([p], weight_decay=-0.1)


# --- nn.Graph: the compiled step runs the same update ------------------------------------------------------------
class _TrainGraph(nn.Graph):
    def __init__(self, model, opt, lr_sch=None):
        super().__init__()
        self.model = model
        self.add_optimizer(opt, lr_sch=lr_sch)

    def build(self, x, y):
        loss = nn.MSELoss()(self.model(x), y)
        loss.backward()
        return loss


def _mlp():
    flow.manual_seed(3)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))


@pytest.mark.parametrize("name,kw", [
    ("AdamW", dict(lr=0.05, weight_decay=0.1, amsgrad=True)),
    ("RMSprop", dict(lr=0.01, centered=True, weight_decay=0.01)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1, initial_accumulator_value=0.1)),
    ("Adadelta", dict(lr=1.0, weight_decay=0.01)),
    ("LAMB", dict(lr=0.05, weight_decay=0.1)),
])
def test_graph_training_equals_eager_training(name, kw):
    rng = np.random.RandomState(1)
    x, y = flow.tensor(rng.randn(8, 3).astype(np.float32)), flow.tensor(rng.randn(8, 2).astype(np.float32))
    cls = getattr(flow.optim, name)
    model = _mlp()
    opt = cls(model.parameters(), **kw)
    sch = flow.optim.lr_scheduler.WarmupLR(flow.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9), warmup_iters=2)
    eager = []
    for _ in range(5):
        loss = nn.MSELoss()(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        sch.step()
        eager.append(loss.item())
    params = [p.numpy().copy() for p in model.parameters()]
    model = _mlp()
    opt = cls(model.parameters(), **kw)
    sch = flow.optim.lr_scheduler.WarmupLR(flow.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9), warmup_iters=2)
    graph = _TrainGraph(model, opt, sch)
    losses = [graph(x, y).item() for _ in range(5)]
    np.testing.assert_allclose(losses, eager, rtol=1e-5)
    for p, q in zip(model.parameters(), params):
        np.testing.assert_allclose(p.numpy(), q, rtol=1e-5, atol=1e-7)
    assert eager[-1] < eager[0]
    # the graph's state variables are the eager optimizer's state
    assert set(opt.state[model[0].weight]) == set(opt.state_names(opt.param_groups[0]))


# --- MPI: 2 ranks == 1 rank, split and broadcast parameters --------------------------------------------------------
GLOBAL_PROGRAM = r'''
import os
import sys

import numpy as np
import oneflow_compat as flow

OUT = sys.argv[1]
WORLD = flow.env.get_world_size()
PALL = flow.placement("cpu", list(range(WORLD)))
rng = np.random.RandomState(0)
W0, A, BB = rng.randn(6, 3), rng.randn(6, 3), rng.rand(6, 3) + 0.5
result = {}
CASES = [("AdamW", dict(lr=0.1, weight_decay=0.1, amsgrad=True)), ("RMSprop", dict(lr=0.01, centered=True)),
         ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.2)), ("Adadelta", dict(lr=0.5, weight_decay=0.1)),
         ("LAMB", dict(lr=0.1, weight_decay=0.1))]
for name, kw in CASES:
    for sbp in (flow.sbp.split(0), flow.sbp.broadcast):
        tag = "%s/%s" % (name, "split" if sbp == flow.sbp.split(0) else "broadcast")
        g = lambda x: flow.tensor(x, dtype=flow.float64, placement=PALL, sbp=flow.sbp.broadcast).to_global(
            PALL, sbp)
        w = flow.nn.Parameter(g(W0))
        a, b = g(A), g(BB)
        opt = getattr(flow.optim, name)([w], **kw)
        try:
            for _ in range(4):
                opt.zero_grad()
                (a * w + 0.5 * b * w * w).sum().backward()
                opt.step()
            result[tag] = w.to_global(PALL, flow.sbp.broadcast).numpy()
        except ValueError as e:
            result[tag + "/error"] = np.array(str(e))
        # the same steps compiled: nn.Graph's update runs on the same pieces
        holder = flow.nn.Module()
        holder.w = flow.nn.Parameter(g(W0))
        opt = getattr(flow.optim, name)(holder.parameters(), **kw)

        class Train(flow.nn.Graph):
            def __init__(self):
                super().__init__()
                self.holder = holder
                self.add_optimizer(opt)

            def build(self, a, b):
                w = self.holder.w
                loss = (a * w + 0.5 * b * w * w).sum()
                loss.backward()
                return loss

        graph = Train()
        try:
            for _ in range(4):
                graph(a, b)
        except ValueError as e:
            result[tag + "/graph_error"] = np.array(str(e))
            continue
        result[tag + "/graph"] = holder.w.to_global(PALL, flow.sbp.broadcast).numpy()
# clip_grad_norm_ over a split and a broadcast parameter: the joint norm of the whole gradients
for layout, sbp in (("split0", flow.sbp.split(0)), ("split1", flow.sbp.split(1)), ("broadcast", flow.sbp.broadcast)):
    tag = "clip/" + layout
    g = lambda x: flow.tensor(x, dtype=flow.float64, placement=PALL, sbp=flow.sbp.broadcast).to_global(PALL, sbp)
    w, v = flow.nn.Parameter(g(W0)), flow.nn.Parameter(g(BB))
    (g(A) * w * w + v * w).sum().backward()
    total = flow.nn.utils.clip_grad_norm_([w, v], 1.5)
    result[tag] = np.concatenate([[float(total.numpy())], w.grad.to_global(PALL, flow.sbp.broadcast).numpy().ravel(),
                                  v.grad.to_global(PALL, flow.sbp.broadcast).numpy().ravel()])
    # the same clipping in nn.Graph (the group's clip options): the compiled step's joint norm over split pieces
    holder = flow.nn.Module()
    holder.w, holder.v = flow.nn.Parameter(g(W0)), flow.nn.Parameter(g(BB))
    opt = flow.optim.SGD([{"params": holder.parameters(), "clip_grad_max_norm": 1.5, "clip_grad_norm_type": 2.0}],
                         lr=0.5)
    a_in = g(A)

    class Clipped(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.holder = holder
            self.add_optimizer(opt)

        def build(self, a):
            loss = (a * self.holder.w * self.holder.w + self.holder.v * self.holder.w).sum()
            loss.backward()
            return loss

    Clipped()(a_in)
    result[tag + "/graph"] = np.concatenate([holder.w.to_global(PALL, flow.sbp.broadcast).numpy().ravel(),
                                             holder.v.to_global(PALL, flow.sbp.broadcast).numpy().ravel()])
np.savez(OUT + ".%d.npz" % os.getpid(), **result)
'''


@pytest.mark.skipif(not os.path.exists(MPIEXEC), reason="no mpiexec in the virtual environment")
def test_global_two_ranks_equal_one_rank_lamb_on_split_parameters_too(tmp_path):
    program = tmp_path / "opt.py"
    program.write_text(GLOBAL_PROGRAM)

    def run(cmd, name):
        p = subprocess.run(cmd + [str(program), str(tmp_path / name)], capture_output=True, text=True,
                           timeout=150, cwd=str(tmp_path), env=mpiexec_command.environment(MPIEXEC))
        assert p.returncode == 0, p.stdout + p.stderr
        files = sorted(f for f in os.listdir(tmp_path) if f.startswith(name + ".") and f.endswith(".npz"))
        return [dict(np.load(tmp_path / f)) for f in files]

    (one,) = run([sys.executable], "one")
    two = run(["timeout", "120", MPIEXEC, "-n", "2", sys.executable, "-m", "mpi4py"], "two")
    assert len(two) == 2
    assert len(one) == 26 and not any(k.endswith("error") for k in one)
    # clip_grad_norm_: the joint norm of the whole gradients (numpy here), split or not
    rng = np.random.RandomState(0)  # the program's values
    w0, a, bb = rng.randn(6, 3), rng.randn(6, 3), rng.rand(6, 3) + 0.5
    gw, gv = 2 * a * w0 + bb, w0
    norm = np.sqrt((gw ** 2).sum() + (gv ** 2).sum())
    want = np.concatenate([[norm], (gw * 1.5 / (norm + 1e-6)).ravel(), (gv * 1.5 / (norm + 1e-6)).ravel()])
    for layout in ("split0", "split1", "broadcast"):
        np.testing.assert_allclose(one["clip/" + layout], want, rtol=1e-12, err_msg=layout)
        # one SGD step (lr 0.5, a float32 value in the graph) with the clipped gradients
        stepped = np.concatenate([w0.ravel(), bb.ravel()]) - np.float32(0.5) * want[1:]
        np.testing.assert_allclose(one["clip/%s/graph" % layout], stepped, rtol=1e-12, err_msg=layout)
    for result in two:
        # LAMB on a parameter split over 2 ranks: its trust ratio reads the whole parameter's norms, summed over the
        # pieces (ops/split_norms.py), eagerly and in the graph, so 2 ranks == 1 rank
        assert not any(k.endswith("error") for k in result), {k: str(v) for k, v in result.items() if "error" in k}
        for key, value in result.items():
            np.testing.assert_allclose(value, one[key], rtol=1e-12, atol=1e-14, err_msg=key)
        assert len(result) == 26
    for name in ("AdamW", "RMSprop", "Adagrad", "Adadelta", "LAMB"):
        for layout in ("split", "broadcast"):
            # the compiled step == the eager step; the job's learning rate is a float32 value (OneFlow's
            # learning_rate blob is float), so the float64 numbers agree to float32's rounding of lr
            np.testing.assert_allclose(one["%s/%s/graph" % (name, layout)], one["%s/%s" % (name, layout)],
                                       rtol=1e-6, err_msg=name)
        np.testing.assert_allclose(one[name + "/split"], one[name + "/broadcast"], rtol=1e-12)


# --- gradient clipping from the param group's options (OneFlow 0.9's Optimizer.clip_grad) -----------------------
def test_clip_grad_uses_the_group_options_eagerly_and_in_graph():
    rng = np.random.RandomState(2)
    x, y = flow.tensor(rng.randn(8, 3).astype(np.float32)), flow.tensor(10 * rng.randn(8, 2).astype(np.float32))

    def make():
        model = _mlp()
        return model, flow.optim.AdamW([{"params": model.parameters(), "clip_grad_max_norm": 0.5,
                                         "clip_grad_norm_type": 2.0}], lr=0.05)

    model, opt = make()
    eager, norms = [], []
    for _ in range(4):
        loss = nn.MSELoss()(model(x), y)
        loss.backward()
        total = math.sqrt(sum(float((p.grad.numpy().astype(np.float64) ** 2).sum()) for p in model.parameters()))
        opt.clip_grad()
        norms.append((total, math.sqrt(sum(float((p.grad.numpy().astype(np.float64) ** 2).sum())
                                           for p in model.parameters()))))
        opt.step()
        opt.zero_grad()
        eager.append(loss.item())
    assert all(before > 0.5 and after == pytest.approx(0.5, rel=1e-4) for before, after in norms)
    params = [p.numpy().copy() for p in model.parameters()]
    model, opt = make()
    graph = _TrainGraph(model, opt)  # the graph clips by itself
    np.testing.assert_allclose([graph(x, y).item() for _ in range(4)], eager, rtol=1e-5)
    for p, q in zip(model.parameters(), params):
        np.testing.assert_allclose(p.numpy(), q, rtol=1e-4, atol=1e-6)
    plain = flow.optim.SGD(_mlp().parameters(), lr=0.1)
    with pytest.warns(UserWarning, match="To enable clip_grad, passing the `clip_grad_max_norm`"):
        plain.clip_grad()
    # (other norm types clip in a graph too: tests/test_limits_graph_optim.py)
