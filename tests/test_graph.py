"""`flow.nn.Graph`: build traced once into a Job, the legacy passes, the compiled plan on every call.

In one process: graph training equals eager training (SGD, momentum + weight decay, Adam, AMSGrad, gradient
accumulation, a learning-rate scheduler), parameters and optimizer state shared with eager code both ways,
accumulation's unpack/pack, state dicts, printing, debug, explain, and the errors. Under MPI
(`tests/mpi_scripts/graph_training.py`, 2 ranks): seed 004's two-stage pipeline in its three stage spellings and
accumulation 1/2 equals the eager full-batch run, data parallelism fed from each rank's own pieces. The seeds'
programs (read from ../shared/seeds at test time, never stored here) run unchanged: seed 004 under the launcher on
2 ranks, seed 003's mixed graph on 4.
"""
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import nn
from oneflow_compat.comm import mpiexec_command
from oneflow_compat.comm.environment import is_job_variable

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "mpi_scripts"
MPIEXEC = Path(sys.executable).parent / "mpiexec"
SEEDS = ROOT.parent / "shared" / "seeds"
_MPI_PREFIXES = ("PMI_", "OMPI_", "MV2_", "PMIX_", "MPI_LOCAL", "HYDRA_", "ONEFLOW_COMPAT_")
_LAUNCH_VARIABLES = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK")


# --- one process ------------------------------------------------------------------------------------------------
def _mlp(seed=0):
    flow.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))


def _optimizer(kind, params, **kw):
    return (flow.optim.SGD if kind == "sgd" else flow.optim.Adam)(params, **kw)


class TrainGraph(nn.Graph):
    def __init__(self, model, opt, acc=1, lr_sch=None):
        super().__init__()
        self.model = model
        self.loss_fn = nn.MSELoss()
        self.config.set_gradient_accumulation_steps(acc)
        self.add_optimizer(opt, lr_sch=lr_sch)

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss


def _data():
    rng = np.random.RandomState(5)
    return flow.tensor(rng.randn(8, 3).astype(np.float32)), flow.tensor(rng.randn(8, 2).astype(np.float32))


def _eager(model, opt, x, y, steps, sch=None):
    losses = []
    for _ in range(steps):
        loss = nn.MSELoss()(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        if sch is not None:
            sch.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("kind,kw,acc", [
    ("sgd", dict(lr=0.1), 1),
    ("sgd", dict(lr=0.1, momentum=0.9, weight_decay=0.01), 2),
    ("sgd", dict(lr=0.05, momentum=0.8, nesterov=True), 1),
    ("adam", dict(lr=0.01, weight_decay=0.1), 4),
    ("adam", dict(lr=0.01, amsgrad=True), 2),
])
def test_graph_training_equals_eager_training(kind, kw, acc):
    x, y = _data()
    model = _mlp()
    eager_losses = _eager(model, _optimizer(kind, model.parameters(), **kw), x, y, 5)
    eager_params = [p.numpy().copy() for p in model.parameters()]
    model = _mlp()
    graph = TrainGraph(model, _optimizer(kind, model.parameters(), **kw), acc)
    graph_losses = []
    for _ in range(5):
        loss = graph(x, y)
        assert tuple(loss.shape) == ((acc,) if acc > 1 else ())  # one loss per micro-batch
        graph_losses.append(float(loss.numpy().mean()))
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-5)
    for p, q in zip(model.parameters(), eager_params):
        np.testing.assert_allclose(p.numpy(), q, rtol=1e-5, atol=1e-7)


def test_learning_rate_scheduler_steps_inside_each_call():
    x, y = _data()
    model = _mlp()
    opt = flow.optim.SGD(model.parameters(), lr=0.2, momentum=0.5)
    eager = _eager(model, opt, x, y, 6, flow.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5))
    params = [p.numpy().copy() for p in model.parameters()]
    model = _mlp()
    opt = flow.optim.SGD(model.parameters(), lr=0.2, momentum=0.5)
    sch = flow.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    graph = TrainGraph(model, opt, lr_sch=sch)
    losses = [graph(x, y).item() for _ in range(6)]
    np.testing.assert_allclose(losses, eager, rtol=1e-5)
    for p, q in zip(model.parameters(), params):
        np.testing.assert_allclose(p.numpy(), q, rtol=1e-5, atol=1e-7)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.2 * 0.5 ** 3)
    with pytest.raises(AssertionError, match="lr_scheduler's optimizer must be the same optimizer"):
        TrainGraph(_mlp(), flow.optim.SGD(model.parameters(), lr=0.1), lr_sch=sch)


def test_parameters_and_optimizer_state_are_shared_with_eager_code():
    x, y = _data()
    model = _mlp()
    opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    reference = _eager(model, opt, x, y, 4)
    final = [p.numpy().copy() for p in model.parameters()]
    # two compiled steps, then two eager steps on the same module and optimizer: the momentum carries over
    model = _mlp()
    opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    graph = TrainGraph(model, opt)
    weight = model[0].weight
    before = weight.numpy().copy()
    losses = [graph(x, y).item() for _ in range(2)]
    assert not np.allclose(weight.numpy(), before)  # the graph updated the eager parameter in place
    assert model[0].weight is weight
    losses += _eager(model, opt, x, y, 2)
    np.testing.assert_allclose(losses, reference, rtol=1e-5)
    for p, q in zip(model.parameters(), final):
        np.testing.assert_allclose(p.numpy(), q, rtol=1e-5, atol=1e-7)
    # and eager changes are what the next call reads
    with flow.no_grad():
        for p in model.parameters():
            p.zero_()
    np.testing.assert_allclose(graph(x, y).item(), float(np.mean(y.numpy() ** 2)), rtol=1e-6)


def test_evaluation_graph_on_global_tensors_keeps_layouts():
    p0 = flow.placement("cpu", ranks=[0])
    model = _mlp().to_global(p0, flow.sbp.broadcast)

    class Eval(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x):
            out = self.model(x)
            return {"out": out, "sum": out.sum(), "note": "kept"}

    x = flow.randn(5, 3, placement=p0, sbp=flow.sbp.split(0))
    graph = Eval()
    got = graph(x)
    assert got["note"] == "kept"
    assert got["out"].is_global and got["out"].placement == p0
    expected = model(x).numpy()
    np.testing.assert_allclose(got["out"].numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(got["sum"].numpy(), expected.sum(), rtol=1e-5)
    assert not graph.training and graph.is_compiled


def test_in_place_ops_and_python_numbers_inside_build():
    class InPlace(nn.Graph):
        def build(self, x):
            y = x * 2
            y += 1
            y *= x
            return y, 3 - y

    x = flow.randn(5)
    y, z = InPlace()(x)
    expected = (x.numpy() * 2 + 1) * x.numpy()
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(z.numpy(), 3 - expected, rtol=1e-6)


def test_accumulation_cuts_inputs_and_packs_outputs():
    class Pack(nn.Graph):
        def __init__(self, n):
            super().__init__()
            self.config.set_gradient_accumulation_steps(n)

        def build(self, x):
            return x * 2, x.sum(), x.shape[0]

    x = flow.tensor(np.arange(12, dtype=np.float32).reshape(6, 2))
    doubled, sums, rows = Pack(3)(x)
    assert rows == 2  # build sees one micro-batch
    np.testing.assert_array_equal(doubled.numpy(), x.numpy() * 2)  # packed back in order
    np.testing.assert_array_equal(sums.numpy(), x.numpy().reshape(3, 4).sum(axis=1))  # a scalar per micro-batch
    with pytest.raises(ValueError, match=r"dim 0 of shape \(6, 2\) is not divisible by the gradient accumulation "
                                         r"steps \(4\)"):
        Pack(4)(x)
    with pytest.raises(ValueError, match="value must be an int >= 1"):
        Pack(0)


def test_pipelined_schedule_gives_the_sequential_numbers_bit_for_bit():
    x, y = _data()
    x, y = flow.tensor(np.concatenate([x.numpy()] * 3)[:12]), flow.tensor(np.concatenate([y.numpy()] * 3)[:12])
    results = []
    for staged in (True, False):
        model = _mlp()
        graph = TrainGraph(model, flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), acc=3)
        if staged:
            graph.model[0].config.stage_id = 0
            graph.model[2].config.stage_id = 1
        losses = [graph(x, y).numpy() for _ in range(3)]
        assert graph._compiled.schedule == ("gpipe" if staged else "sequential")
        results.append((losses, [p.numpy() for p in model.parameters()]))
    (l0, p0), (l1, p1) = results
    assert all(np.array_equal(a, b) for a, b in zip(l0, l1))
    assert all(np.array_equal(a, b) for a, b in zip(p0, p1))


def test_dropout_in_a_graph_draws_a_fresh_mask_every_call_and_micro_batch():
    class Drop(nn.Graph):
        def __init__(self, module):
            super().__init__()
            self.drop = module
            self.config.set_gradient_accumulation_steps(2)

        def build(self, x):
            return self.drop(x)

    flow.manual_seed(0)
    graph = Drop(nn.Dropout(0.5))
    x = flow.ones(8, 16)
    first, second = graph(x).numpy(), graph(x).numpy()
    assert set(np.unique(first)) == {0.0, 2.0} and not np.array_equal(first, second)
    assert not np.array_equal(first[:4], first[4:])  # each micro-batch its own mask
    evaluation = Drop(nn.Dropout(0.5).eval())  # modes are read when the graph is traced
    np.testing.assert_array_equal(evaluation(x).numpy(), x.numpy())


def _one_linear():
    flow.manual_seed(1)
    return nn.Linear(3, 2)


class FnGraph(nn.Graph):
    def __init__(self, fn, train=False):
        super().__init__()
        self.lin = _one_linear()
        self.fn = fn
        if train:
            self.add_optimizer(flow.optim.SGD(self.lin.parameters(), lr=0.1))

    def build(self, *args):
        return self.fn(self, *args)


def test_errors_inside_build_are_clear():
    x = flow.randn(4, 3)
    p0 = flow.placement("cpu", ranks=[0])
    xg = x.to_global(p0, flow.sbp.broadcast)
    with pytest.raises(RuntimeError, match=r"numpy\(\) of a lazy tensor is not supported within nn.Graph"):
        FnGraph(lambda g, x: g.lin(x).numpy())(x)
    with pytest.raises(RuntimeError, match=r"numpy\(\) of a lazy tensor"):
        FnGraph(lambda g, x: g.lin(x).sum().item())(x)
    with pytest.raises(RuntimeError, match=r"^global_tensor.to_local\(\) is not supported within nn.Graph for now$"):
        FnGraph(lambda g, x: x.to_local())(xg)
    with pytest.raises(RuntimeError, match=r"^local_tensor.to_global\(\) is not supported within nn.Graph for now$"):
        FnGraph(lambda g, x: x.to_global(p0, flow.sbp.broadcast))(x)
    with pytest.raises(AssertionError) as e:
        FnGraph(lambda g, x: g.lin(x).backward(), train=True)(x)
    assert str(e.value) == (" loss_tensor.backward(), loss_tensor must be a scalar in nn.Graph, please use "
                            "loss_tensor.sum() or loss_tensor.mean() to make it a scalar tensor.")
    with pytest.raises(AssertionError, match="donot accept 'gradient' argument"):
        FnGraph(lambda g, x: g.lin(x).sum().backward(flow.ones(())), train=True)(x)
    with pytest.raises(RuntimeError, match="needs an optimizer: call self.add_optimizer"):
        FnGraph(lambda g, x: g.lin(x).sum().backward())(x)
    with pytest.raises(RuntimeError, match="has an optimizer but build\\(\\) called no loss.backward\\(\\)"):
        FnGraph(lambda g, x: g.lin(x), train=True)(x)
    # a lazy tensor prints as one (no values)
    shown = []
    FnGraph(lambda g, x: shown.append(repr(g.lin(x))))(x)
    assert shown == ["tensor(..., is_lazy='True', size=(4, 2), dtype=oneflow.float32)"]


@pytest.mark.cpu_only("asserts the text of a CPU placement")
def test_inputs_keep_the_layout_of_the_first_call():
    p0 = flow.placement("cpu", ranks=[0])
    graph = FnGraph(lambda g, x: g.lin(x))
    x = flow.randn(4, 3)
    graph(x)
    graph(flow.randn(4, 3))  # new values, same layout: fine
    with pytest.raises(ValueError, match=r"input 0 is a local tensor \(5, 3\) float32 but the graph was compiled "
                                         r"for a local tensor \(4, 3\) float32"):
        graph(flow.randn(5, 3))
    with pytest.raises(ValueError, match=r"input 0 is a global tensor \(4, 3\) float32 on cpu ranks \[0\] "
                                         r"oneflow.sbp.broadcast but the graph was compiled for a local tensor"):
        graph(x.to_global(p0, flow.sbp.broadcast))
    with pytest.raises(ValueError, match="compiled for arguments shaped as"):
        graph(x, x)
    scaled = FnGraph(lambda g, x, k: g.lin(x) * k)
    np.testing.assert_allclose(scaled(x, 3.0).numpy(), scaled.lin(x).numpy() * 3, rtol=1e-6)
    scaled(x, 3.0)
    with pytest.raises(ValueError, match=r"the non-tensor arguments \[2.0\] differ from the first call's \[3.0\]"):
        scaled(x, 2.0)
    ghost = FnGraph(lambda g, x: x * 2)
    ghost(x.to_global(p0, flow.sbp.broadcast))
    with pytest.raises(ValueError, match=r"on cpu ranks \[0\] oneflow.sbp.split\(dim=0\) but the graph was "
                                         r"compiled for a global tensor \(4, 3\) float32 on cpu ranks \[0\] "
                                         r"oneflow.sbp.broadcast"):
        # (on one rank S(0) and B hold the same piece; the SBP the tensor carries still counts)
        ghost(x.to_global(p0, flow.sbp.split(0)))


def test_state_dict_round_trip_continues_training_identically():
    x, y = _data()
    model = _mlp()
    graph = TrainGraph(model, flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    before = graph.state_dict()
    assert list(before) == ["model", "loss_fn"]  # not compiled: module states only
    for _ in range(3):
        graph(x, y)
    state = graph.state_dict()
    names = list(state)
    assert names[:2] == ["model", "loss_fn"]
    assert sorted(state["model"]) == ["0.bias", "0.weight", "2.bias", "2.weight"]
    assert "model.0.weight-momentum" in names and "System-Train-TrainStep" in names  # (OneFlow 0.9's name)
    assert int(state["System-Train-TrainStep"].numpy()[0]) == 3
    saved = {k: ({kk: vv.numpy().copy() for kk, vv in v.items()} if isinstance(v, dict) else v.numpy().copy())
             for k, v in state.items()}
    following = [graph(x, y).item() for _ in range(2)]
    with pytest.raises(AssertionError, match="can only be loaded before the first call"):
        graph.load_state_dict(state)
    # a new graph over a new model and optimizer, loaded from the saved state, continues identically
    model2 = _mlp(seed=9)
    graph2 = TrainGraph(model2, flow.optim.SGD(model2.parameters(), lr=0.1, momentum=0.9))
    restored = {k: ({kk: flow.tensor(vv) for kk, vv in v.items()} if isinstance(v, dict) else flow.tensor(v))
                for k, v in saved.items()}
    graph2.load_state_dict(restored)  # (the names are the graph's own: no graph name in them)
    np.testing.assert_allclose([graph2(x, y).item() for _ in range(2)], following, rtol=1e-6)


def test_print_debug_and_explain_show_modules_stages_and_plan(capsys):
    p0 = flow.placement("cpu", ranks=[0])
    model = _mlp().to_global(p0, flow.sbp.broadcast)

    class Staged(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.model[0].config.stage_id = 0
            self.model[2].to(nn.graph.GraphModule).set_stage(stage_id=1, placement=p0)
            self.add_optimizer(flow.optim.SGD(model.parameters(), lr=0.1))

        def build(self, x):
            loss = self.model(x).sum()
            loss.backward()
            return loss

    graph = Staged()
    graph.debug(0)
    text = repr(graph)
    assert text.startswith("(GRAPH:%s:Staged): (\n  (CONFIG:config:GraphConfig(training=True, ))" % graph.name)
    assert "(MODULE:model.0:Linear(in_features=3, out_features=4, bias=True)): (" in text  # OneFlow 0.9 proxy.py
    assert "  (GraphModule:model.0(stage_id=0, )): ()" in text
    assert "(MODULE:model.2:Linear(in_features=4, out_features=2, bias=True)): (" in text
    assert "  (GraphModule:model.2(stage_id=1, )): ()" in text  # (0.9 prints no stage placement)
    assert ('(PARAMETER:model.0.weight:tensor(..., placement=oneflow.placement(type="cpu", ranks=[0]), '
            'sbp=(oneflow.sbp.broadcast,), size=(4, 3), dtype=oneflow.float32, requires_grad=True)): ()') in text
    assert graph.model[2].to(nn.graph.GraphModule).stage_id == 1
    assert graph.model[0].to(nn.Module) is model[0]
    graph(flow.randn(6, 3, placement=p0, sbp=flow.sbp.broadcast))
    out = capsys.readouterr().out
    assert "(GRAPH:%s:Staged) start building graph." % graph.name in out
    assert "(GRAPH:%s:Staged) building graph Done! Cost time: " % graph.name in out
    assert "(GRAPH:%s:Staged) start building plan." % graph.name in out
    assert "(INPUT:_%s_input.0.0_2:tensor(..., placement=" % graph.name in repr(graph)
    report = flow.explain(graph)
    assert str(report).startswith("nn.Graph '%s' (train, 1 micro-batch per call): 0 boxing" % graph.name)
    stages = {s for s, _, _ in report.stages}
    assert {0, 1} <= stages
    assert nn.graph.GraphModule is flow.nn.graph.GraphModule and flow.nn.Graph is nn.graph.Graph


def test_explain_cli_lists_the_plans_of_the_graphs_a_program_called(tmp_path):
    (tmp_path / "prog.py").write_text(textwrap.dedent("""
        import oneflow as flow

        class Double(flow.nn.Graph):
            def build(self, x):
                return x * 2

        print(Double()(flow.ones(4, 2)).sum().item())
    """))
    done = _run([sys.executable, "-m", "oneflow_compat", "explain", "prog.py"], cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "16.0" in done.stdout
    assert "nn.Graph 'Double_0' (predict, 1 micro-batch per call): 0 boxing" in done.stdout


# --- several ranks: mpiexec / the launcher under a timeout -------------------------------------------------------
def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not is_job_variable(k, _MPI_PREFIXES) and k not in _LAUNCH_VARIABLES}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.update(extra)
    return env


def _run(command, timeout=120, cwd=ROOT, **extra_env):
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=mpiexec_command.environment(MPIEXEC, _env(**extra_env)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout)
    done.elapsed = time.perf_counter() - started
    return done


def _mpi(n, script, *args, **kw):
    return _run([str(MPIEXEC), "-n", str(n), sys.executable, "-m", "mpi4py", str(script)] + list(args), **kw)


needs_mpi = pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside %s" % sys.executable)


@needs_mpi
def test_pipeline_and_data_parallel_graphs_on_two_ranks_equal_eager_on_one_device():
    pytest.importorskip("mpi4py")
    done = _mpi(2, SCRIPTS / "graph_training.py")
    assert done.returncode == 0, done.stdout + done.stderr
    oks = [line for line in done.stdout.splitlines() if line.startswith("OK ")]
    assert [line.split(" steps=")[0] for line in oks] == [
        "OK data parallel acc=2 own pieces", "OK stage_id acc=2", "OK stage_id acc=1", "OK set_stage acc=2",
        "OK graph_module acc=2", "OK none acc=2", "OK gpipe == sequential bit for bit"], done.stdout
    assert all("steps=20 " in line for line in oks[1:-1])
    # the plan: activations cross from stage 0 to 1 forward and back, 8 rows (one micro-batch) each time
    rows = [line.split() for line in done.stdout.splitlines() if "8x512" in line]
    assert [(r[-3], r[-2], r[-1]) for r in rows] == [("16384", "0->1", "forward"), ("16384", "1->0", "backward")]
    assert "total: 32768 bytes per micro-batch" in done.stdout


def _seed_block(name, index):
    path = SEEDS / name
    if not path.exists():
        pytest.skip("%s is not present" % path)
    text = path.read_text()
    blocks = [textwrap.dedent(m.group(2)) for m in
              re.finditer(r"^( *)```python\n(.*?)^\1```", text, re.MULTILINE | re.DOTALL)]
    return blocks[index]


@needs_mpi
def test_seed_004_runs_unchanged_under_the_launcher(tmp_path):
    pytest.importorskip("mpi4py")
    program = _seed_block("004_1950a4db248e9d3d.txt", 0)
    assert "self.config.set_gradient_accumulation_steps(2)" in program
    (tmp_path / "pipeline.py").write_text(program)
    launch = ROOT / "oneflow_compat" / "distributed" / "launch.py"
    if launch.exists():
        command = [sys.executable, "-m", "oneflow.distributed.launch", "--nproc_per_node", "2", "pipeline.py"]
        done = _run(command, cwd=tmp_path)
    else:
        done = _mpi(2, tmp_path / "pipeline.py", cwd=tmp_path, ONEFLOW_COMPAT_OUTPUT="all")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [re.sub(r"^\[rank \d\] ", "", line) for line in done.stdout.splitlines() if "tensor(" in line]
    empty = [line for line in lines if line.startswith("tensor([]")]
    pairs = [line for line in lines if re.match(r"tensor\(\[\d\.\d{4}, \d\.\d{4}\]", line)]
    assert len(empty) == 20 and len(pairs) == 20, done.stdout  # rank 0: the empty piece; rank 1: 2 micro-batches
    assert all(line.endswith("dtype=oneflow.float32)") for line in lines)
    first = [float(v) for v in re.findall(r"\d\.\d{4}", pairs[0])]
    assert all(2.0 < v < 2.6 for v in first)  # cross entropy of 10 classes near log(10)


@needs_mpi
def test_seed_003_mixed_graph_runs_unchanged_on_four_ranks(tmp_path):
    pytest.importorskip("mpi4py")
    program = _seed_block("003_de105b6cf9825827.txt", 5)
    assert "class GraphModel(nn.Graph):" in program
    check = textwrap.dedent("""
        import numpy as np
        e0, e1 = graph.model(in_stage0)  # the same modules, eagerly
        np.testing.assert_allclose(out_stage0.numpy(), e0.numpy(), rtol=1e-5)
        np.testing.assert_allclose(out_stage1.numpy(), e1.numpy(), rtol=1e-5)
        w0, w1 = graph.model.m_stage0.w.numpy(), graph.model.m_stage1.w.numpy()
        np.testing.assert_allclose(out_stage1.numpy(), in_stage0.numpy() @ w0 @ w1, rtol=1e-5)
        assert out_stage0.sbp == (flow.sbp.split(dim=0),) and out_stage1.sbp == (flow.sbp.split(dim=1),)
        assert out_stage0.placement == P01 and out_stage1.placement == P23
        print("numbers checked")
    """)
    (tmp_path / "mixed.py").write_text(program + check)
    done = _mpi(4, tmp_path / "mixed.py", cwd=tmp_path, ONEFLOW_COMPAT_OUTPUT="all")
    assert done.returncode == 0, done.stdout + done.stderr
    for r in range(4):
        mine = [line[len("[rank %d] " % r):] if line.startswith("[rank") else line
                for line in done.stdout.splitlines() if line.startswith("[rank %d] " % r)
                or (r == 0 and not line.startswith("[rank"))]
        mine = [line for line in mine if "NOTICE" not in line]
        assert mine == ["oneflow.Size([4, 8]) oneflow.Size([4, 3])", "numbers checked"], done.stdout


def test_debug_op_repr_with_py_stack_prints_oneflow_operator_lines(tmp_path):
    """The documentation's program (cn/docs/basics/08_nn_graph.md): repr(graph) after a run shows OneFlow 0.9's
    OPERATOR line of the module's op, with the user's two innermost frames and the count of the others."""
    import subprocess
    import sys

    script = tmp_path / "test_debug.py"
    script.write_text(
        "import oneflow as flow\nimport oneflow.nn as nn\nimport numpy as np\n\n"
        "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
        "    def forward(self, input1, input2):\n        return flow.matmul(input1, input2)\n\n"
        "class GraphModel(nn.Graph):\n    def __init__(self):\n        super().__init__()\n"
        "        self.model = Model()\n\n    def build(self, input1, input2):\n"
        "        return self.model(input1, input2)\n\n"
        "graph = GraphModel()\ngraph.debug(1, op_repr_with_py_stack=True)\n"
        "input1 = flow.tensor(np.random.randn(2, 6), dtype=flow.float32)\n"
        "input2 = flow.tensor(np.random.randn(6, 5), dtype=flow.float32)\n"
        "of_out = graph(input1, input2)\nprint(repr(graph))\n")
    out = subprocess.run([sys.executable, "-m", "oneflow_compat", str(script)], capture_output=True, text=True,
                         timeout=120, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    want = ('(OPERATOR: model-matmul-0(_GraphModel_0_input.0.0_2/out:(sbp=(B), size=(2, 6), '
            'dtype=(oneflow.float32)), _GraphModel_0_input.0.1_3/out:(sbp=(B), size=(6, 5), dtype=(oneflow.float32)))'
            ' -> (model-matmul-0/out_0:(sbp=(B), size=(2, 5), dtype=(oneflow.float32))), '
            'placement=(oneflow.placement(type="cpu", ranks=[0])), location=(File "%s", line 10, in forward, '
            'source < return flow.matmul(input1, input2) >; File "%s", line 18, in build, source < return '
            'self.model(input1, input2) >; ... 1 more))' % (script, script))
    assert want in out.stdout, out.stdout
    assert "(GRAPH:GraphModel_0:GraphModel) start building graph." in out.stdout
    assert "(INPUT:_model_input.0.1_3:tensor(..., is_lazy='True', size=(6, 5), dtype=oneflow.float32))" in out.stdout
    assert "    (GraphModule:model()): (\n      (OPERATOR: model-matmul-0(" in out.stdout


def test_operator_lines_name_scopes_counters_and_sbp_without_locations():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU())

    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = model

        def build(self, x):
            return self.m(x) * 2

    g = G()
    g.debug(0, max_py_stack_depth=1)
    g(flow.ones(2, 3))
    text = repr(g)
    assert "location=" not in text  # op_repr_with_py_stack defaults to False
    assert "(OPERATOR: m.0-matmul-" in text and "(OPERATOR: m.1-relu-" in text
    # the graph's own op (outside any module), named without a scope, reads the module's output blob
    assert "(OPERATOR: scalar_mul-" in text and "m.1-relu-" in text.split("(OPERATOR: scalar_mul-")[1]
    from oneflow_compat._global import graph_debug

    loc = graph_debug.python_location(1, True)
    assert loc.startswith('File "%s"' % __file__) and "source < loc = graph_debug.python_location(1, True) >" in loc
    assert loc.endswith("more")


def test_enable_zero_takes_oneflows_arguments_and_trains_as_without_it():
    def train(zero):
        flow.manual_seed(3)
        model = flow.nn.Linear(4, 3)
        opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        class Step(flow.nn.Graph):
            def __init__(self):
                super().__init__()
                self.model = model
                self.add_optimizer(opt)
                if zero:
                    self.config.enable_zero(**zero)

            def build(self, x, y):
                loss = flow.nn.functional.cross_entropy(self.model(x), y)
                loss.backward()
                return loss

        step = Step()
        x = flow.tensor(np.linspace(-1, 1, 24, dtype=np.float32).reshape(6, 4))
        y = flow.tensor(np.array([0, 1, 2, 0, 1, 2]))
        return [float(step(x, y).numpy()) for _ in range(3)] + [model.weight.numpy()]

    plain = train(None)
    for zero in ({}, {"stage": 1}, {"stage": 3, "shard_min_size": 1}, {"mode": False}):
        got = train(zero)
        assert got[:3] == plain[:3] and np.array_equal(got[3], plain[3]), zero
    config = flow.nn.Graph().config
    with pytest.raises(AssertionError, match="^ZeRO stage must range from 1 to 3.$"):
        config.enable_zero(stage=4)
    with pytest.raises(AssertionError, match="^ZeRO min size of a sharded optimizer state must > 0.$"):
        config.enable_zero(shard_min_size=0)


def _scaled_training(scaler=None, amp=False, bad_step=None, steps=5):
    """The weight after each step of a small graph trained with a loss scaler (and AMP switched on): input
    `bad_step` holds an inf, so that step's gradients are not finite."""
    flow.manual_seed(0)
    model = flow.nn.Linear(4, 3)
    opt = flow.optim.SGD(model.parameters(), lr=0.1)

    class Step(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)
            if amp:
                self.config.enable_amp(True)
            if scaler is not None:
                self.set_grad_scaler(scaler)

        def build(self, x):
            loss = self.model(x).square().mean()
            loss.backward()
            return loss

    step = Step()
    weights = []
    for k in range(steps):
        x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
        if k == bad_step:
            x[0, 0] = np.inf
        with np.errstate(invalid="ignore"):
            step(flow.tensor(x))
        weights.append(model.weight.numpy().copy())
    states = {k: v.numpy() for k, v in step.state_dict().items() if not isinstance(v, dict)}
    return weights, states, step.name


def test_amp_on_the_cpu_and_loss_scalers_train_as_oneflows_graph():
    plain, _, _ = _scaled_training()
    # OneFlow's AMP pass casts CUDA ops alone: on the CPU the graph computes as without it; power-of-two scales are
    # exact in float32
    for kw in ({"amp": True}, {"scaler": flow.amp.StaticGradScaler(1024.0)},
               {"scaler": flow.amp.GradScaler(init_scale=2.0 ** 10, growth_interval=2), "amp": True}):
        got, _, _ = _scaled_training(**kw)
        assert all(np.array_equal(a, b) for a, b in zip(got, plain)), kw
    _, states, name = _scaled_training(flow.amp.GradScaler(init_scale=2.0 ** 10, growth_interval=2))
    prefix = "System-Train-DynamicLossScale-%s-" % name  # OneFlow's variable names
    assert states[prefix + "LossScale"] == 4096.0 and states[prefix + "GoodStepCounter"] == 1  # x2 after 2 and 4
    # a step with inf gradients is skipped and halves the scale; the good-step count starts again
    got, states, name = _scaled_training(flow.amp.GradScaler(init_scale=2.0 ** 10, growth_interval=2), bad_step=2)
    prefix = "System-Train-DynamicLossScale-%s-" % name
    assert np.array_equal(got[2], got[1]) and not np.array_equal(got[3], got[2])
    assert states[prefix + "LossScale"] == 2048.0 and states[prefix + "GoodStepCounter"] == 0
    with pytest.raises(ValueError, match=r"^Only support 1.0/growth_factor as backoff_factor at the moment, got 0.3$"):
        flow.amp.GradScaler(backoff_factor=0.3)
    with pytest.raises(ValueError, match="^StaticGradScaler's scale_factor must > 0.0$"):
        flow.amp.StaticGradScaler(0.0)


def test_autocast_follows_oneflows_rules():
    assert not flow.is_autocast_enabled() and flow.get_autocast_gpu_dtype() == flow.float16
    x = flow.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
    with flow.autocast("cuda"):  # x is a CPU tensor, which OneFlow's autocast leaves alone (test_autocast_cuda.py)
        assert flow.is_autocast_enabled()
        y = flow.matmul(x, x.T)
        assert y.dtype == flow.float32
    assert not flow.is_autocast_enabled()
    with pytest.warns(UserWarning, match="^CPU autocast is not supported currently. Disabling autocast.$"):
        with flow.amp.autocast("cpu"):
            assert not flow.is_autocast_enabled()

    @flow.autocast("cuda", enabled=False)
    def inner():
        return flow.is_autocast_enabled()

    assert inner() is False
    with pytest.raises(RuntimeError, match="^User specified autocast device_type must be 'cuda' or 'cpu'$"):
        flow.autocast("tpu")

    class Step(flow.nn.Graph):
        def build(self, t):
            with flow.autocast("cuda"):
                return t * 2

    with pytest.warns(UserWarning, match="^Autocast is not supported for lazy mode. Disabling autocast.$"):
        np.testing.assert_array_equal(Step()(x).numpy(), x.numpy() * 2)
