"""nn.Graph's ZeRO (`config.enable_zero(stage=..., shard_min_size=..., shard_restore_level=...)`, passes/zero.py)
on 2 and 4 ranks simulated in one process (comm/simulated.py): the numbers of every stage are those without ZeRO
(bit for bit on the same ranks) and those of one rank (to float rounding: see `_TOL`), the ranks hold 1/n of the
optimizer states and of the parameters at every stage (as OneFlow 0.9), `explain` shows the reduce-scatter and all-gather
with their bytes, and a ZeRO graph's state dict holds the full logical values (a checkpoint loads into a graph
without ZeRO, which continues identically). The MPI run and the launcher run: tests/test_graph_zero_mpi.py."""
import threading

import numpy as np
import pytest

import oneflow as flow
import oneflow.nn as nn
from oneflow_compat.comm import world
from oneflow_compat.comm.simulated import SimulatedWorld
from oneflow_compat.runtime import context
import simulated_ranks

# Data parallelism on n ranks sums each gradient's n partial sums (the mean loss's gradient of each rank's rows),
# where one rank sums all rows at once: float32 rounding of the same terms added in another order, amplified a
# little by Adam's division by sqrt(v). ZeRO itself changes nothing: its reduce-scatter adds the same addends in
# the same rank order as the all-reduce, so it is compared bit for bit with the run without ZeRO on the same ranks.
_TOL = dict(rtol=1e-5, atol=1e-6)
STEPS = 3
BATCH = 8


def on_ranks(n, body):
    """body() on n simulated ranks; the list of each rank's result."""
    return simulated_ranks.on_ranks(n, body, timeout=120)


def _data(steps=STEPS):
    rng = np.random.RandomState(1)
    return [(rng.randn(BATCH, 8).astype(np.float32), rng.randn(BATCH, 4).astype(np.float32)) for _ in range(steps)]


def _optimizer(kind, params):
    if kind == "adam":
        return flow.optim.Adam(params, lr=0.01)
    return flow.optim.SGD(params, lr=0.1, momentum=0.9)


def _setup(n, kind, zero=None, seed=0):
    """A 8-16-4 MLP broadcast on n ranks, its optimizer and a train graph (ZeRO settings `zero` or none)."""
    pl = flow.placement("cpu", list(range(n)))
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    # initial values from numpy: the simulated ranks are threads of one process, whose draws from the default
    # generator would interleave
    rng = np.random.RandomState(seed)
    model.load_state_dict({k: flow.tensor((rng.randn(*v.shape) * 0.3).astype(np.float32))
                           for k, v in model.state_dict().items()})
    model.to_global(placement=pl, sbp=flow.sbp.broadcast)
    opt = _optimizer(kind, model.parameters())

    class Train(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)
            if zero is not None:
                self.config.enable_zero(True, **zero)

        def build(self, x, y):
            loss = ((self.model(x) - y) ** 2).mean()
            loss.backward()
            return loss

    return pl, model, opt, Train()


def _train(pl, graph, data):
    losses = []
    for x, y in data:
        gx = flow.tensor(x, placement=pl, sbp=flow.sbp.split(0))
        gy = flow.tensor(y, placement=pl, sbp=flow.sbp.split(0))
        losses.append(graph(gx, gy).numpy())
    return np.array(losses)


VARIANTS = [None, dict(stage=1, shard_min_size=1), dict(stage=2, shard_min_size=1),
            dict(stage=3, shard_min_size=1), dict(stage=3, shard_min_size=1, shard_restore_level=0),
            dict(stage=3, shard_min_size=1, shard_restore_level=2)]


def _run_variants(n, kind):
    data = _data()

    def body():
        out = []
        for zero in VARIANTS:
            pl, model, opt, graph = _setup(n, kind, zero)
            losses = _train(pl, graph, data)
            params = [p.numpy() for p in model.parameters()]
            held = {name: (tuple(t.sbp), tuple(t.to_local().shape)) for name, t in graph.state_dict().items()
                    if isinstance(t, flow.Tensor) and t.is_global}
            local = [(tuple(p.sbp), tuple(p.to_local().shape)) for p in model.parameters()]
            out.append((losses, params, held, local))
        return out

    return on_ranks(n, body)


@pytest.mark.parametrize("kind", ["adam", "momentum"])
def test_every_stage_gives_the_numbers_of_one_rank_and_of_no_zero(kind):
    ref_losses, ref_params, _, _ = on_ranks(1, lambda: _run_one(kind))[0]
    for n in (2, 4):
        per_rank = _run_variants(n, kind)
        for rank, results in enumerate(per_rank):
            plain_losses, plain_params = results[0][:2]
            np.testing.assert_allclose(plain_losses, ref_losses, **_TOL)
            for zero, (losses, params, held, local) in zip(VARIANTS[1:], results[1:]):
                what = "%s on %d ranks (rank %d), ZeRO %s" % (kind, n, rank, zero)
                # restore level 0 leaves the forward consumers of a stage-3 parameter free (the compiler reads it
                # S(0): matmul -> S(1) activations), level 2 pins each consumer's input, so the backward's
                # signatures differ from the run without ZeRO and sums run in another order: equal to rounding;
                # stages 1 and 2, and stage 3 with the default level 1, are bit for bit
                same = np.testing.assert_array_equal if zero.get("shard_restore_level", 1) == 1 else _close
                same(losses, plain_losses, err_msg=what)
                for got, want, ref in zip(params, plain_params, ref_params):
                    same(got, want, err_msg=what)
                    np.testing.assert_allclose(got, ref, err_msg=what, **_TOL)
                # every optimizer state of these parameters (all >= 1 element per rank) is split: 1/n of its rows
                states = {k: v for k, v in held.items() if k != "System-Train-TrainStep"}
                assert len(states) == (8 if kind == "adam" else 4), what
                for name, (sbp, shape) in states.items():
                    rows = {"0.weight": 16, "0.bias": 16, "2.weight": 4, "2.bias": 4}[name.split("-")[0][len("model."):]]
                    assert sbp == (flow.sbp.split(0),), (what, name)
                    assert shape[0] == rows // n, (what, name, shape)
                # the parameters: 1/n of their rows at every stage (OneFlow 0.9's pass stores the variable S(0)
                # from stage 1; its user page cookies/zero.md: parameters are Split after one training step)
                stored = [(16, 8), (16,), (4, 16), (4,)]
                for (sbp, shape), whole in zip(local, stored):
                    assert sbp == (flow.sbp.split(0),) and shape == (whole[0] // n,) + whole[1:], what


def _close(got, want, err_msg):
    np.testing.assert_allclose(got, want, err_msg=err_msg, **_TOL)


def _run_one(kind):
    pl, model, opt, graph = _setup(1, kind)
    return _train(pl, graph, _data()), [p.numpy() for p in model.parameters()], None, None


def test_shard_min_size_keeps_small_tensors_whole():
    # OneFlow's IsSplitValid: a variable is sharded when its smallest S(0) piece has >= shard_min_size elements
    def body():
        pl, model, opt, graph = _setup(2, "momentum", dict(stage=2, shard_min_size=32))
        _train(pl, graph, _data(1))
        return {k: tuple(v.sbp) for k, v in graph.state_dict().items() if k.endswith("-momentum")}

    got = on_ranks(2, body)[0]
    s0, b = (flow.sbp.split(0),), (flow.sbp.broadcast,)
    # pieces on 2 ranks: 0.weight 8x8=64, 0.bias 8, 2.weight 2x16=32, 2.bias 2
    assert got == {"model.0.weight-momentum": s0, "model.0.bias-momentum": b,
                   "model.2.weight-momentum": s0, "model.2.bias-momentum": b}


def _explained(n, zero):
    def body():
        pl, model, opt, graph = _setup(n, "adam", zero)
        _train(pl, graph, _data(1))
        return graph.explain_report()

    report = on_ranks(n, body)[0]
    return [(b["blob"], b["shape"], b["src"].split()[-1], b["dst"].split()[-1], b["collective"], b["bytes"],
             b["section"]) for b in report.boxing], report


@pytest.mark.parametrize("n", [2, 4])
def test_explain_shows_the_reduce_scatter_and_all_gather_with_their_bytes(n):
    sizes = {(16, 8): 512, (16,): 64, (4, 16): 256, (4,): 16}  # float32 bytes of each parameter
    share = (n - 1) / n  # what each rank sends in a ring reduce-scatter or all-gather of an even split
    plain, plain_report = _explained(n, None)
    assert sorted((r[1], r[4], r[5]) for r in plain) == sorted((s, "all-reduce", 2 * share * b) for s, b in
                                                               sizes.items())
    # every stage (OneFlow 0.9): the gradient's partial sums reduce-scattered to the S(0) update, the S(0) parameter
    # all-gathered once by its System-ZeRO-ParallelCast for the forward pass: the all-reduce's bytes, half each
    for stage in (1, 2, 3):
        rows, report = _explained(n, dict(stage=stage, shard_min_size=1))
        forward = sorted((r[1], r[2], r[3], r[4], r[5]) for r in rows if r[6] == "forward")
        assert forward == sorted((s, "S(0)", "B", "all-gather", share * b) for s, b in sizes.items()), stage
        gathered = [r[0] for r in rows if r[4] == "all-gather"]
        assert all(g.startswith("model.") for g in gathered) and len(gathered) == len(sizes), (stage, gathered)
        optimizer = sorted((r[1], r[2], r[3], r[4], r[5]) for r in rows if r[6] == "optimizer")
        assert optimizer == sorted((s, "P", "S(0)", "reduce-scatter", share * b) for s, b in sizes.items()), stage
        assert len(rows) == len(forward) + len(optimizer), stage
        assert report.bytes_per_call() == plain_report.bytes_per_call(), stage


class _Twice(nn.Module):
    # one Linear applied twice: its weight has two forward consumers that read it whole (B)
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(flow.relu(self.lin(x)))


def test_stage_flags_and_stage_3_stops_sharing_one_gather_between_consumers():
    from oneflow_compat.passes import zero as zero_pass

    class Job:
        pass

    job = Job()
    assert zero_pass.flags(job) == {}
    want = []
    for stage in (1, 2, 3):
        job.zero = dict(stage=stage, shard_min_size=7, shard_restore_level=2)
        flags = zero_pass.flags(job)
        assert flags["optimizer_placement_optimization_mode"] == "distributed_split"
        assert flags["optimizer_placement_optimization_threshold"] == 7
        assert flags["optimizer_placement_optimization_shard_restore_level"] == 2
        want.append((flags["nccl_use_compute_stream"], flags["disable_group_boxing_by_dst_parallel"]))
    assert want == [(False, False), (True, False), (True, True)]  # OneFlow 0.9 GraphConfig.enable_zero

    data = _data(3)

    def body(zero):
        def run():
            pl = flow.placement("cpu", ranks=[0, 1])
            model = _Twice()
            rng = np.random.RandomState(3)  # numpy: the simulated ranks are threads (see _setup)
            model.load_state_dict({k: flow.tensor((rng.randn(*v.shape) * 0.3).astype(np.float32))
                                   for k, v in model.state_dict().items()})
            model.to_global(placement=pl, sbp=flow.sbp.broadcast)
            opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

            class G(nn.Graph):
                def __init__(self):
                    super().__init__()
                    self.model = model
                    self.add_optimizer(opt)
                    if zero:
                        self.config.enable_zero(True, **zero)

                def build(self, x, y):
                    loss = ((self.model(x) - y) ** 2).mean()
                    loss.backward()
                    return loss

            graph = G()
            losses = []
            for x, y in data:
                x = flow.tensor(x, placement=pl, sbp=flow.sbp.split(0))
                y = flow.tensor(np.tile(y, 2), placement=pl, sbp=flow.sbp.split(0))
                losses.append(float(graph(x, y).numpy()))
            gathers = [b for b in graph.explain_report().boxing
                       if b["collective"] == "all-gather" and b["section"] == "forward"
                       and b["blob"].startswith("model.lin.weight")]
            return losses, [p.numpy() for p in model.parameters()], len(gathers)

        return on_ranks(2, run)[0]

    plain_losses, plain_params, _ = body(None)
    results = {stage: body(dict(stage=stage, shard_min_size=1, shard_restore_level=2)) for stage in (2, 3)}
    # level 2 pins both forward consumers of the weight to B: stage 2 shares one all-gather (OneFlow's
    # GroupBoxingByDstParallel), stage 3 disables that grouping, so each consumer gathers it itself
    assert results[2][2] == 1 and results[3][2] == 2
    for losses, params, _ in results.values():
        _close(np.array(losses), np.array(plain_losses), "losses")
        for a, b in zip(params, plain_params):
            _close(a, b, "params")


@pytest.mark.parametrize("kind", ["adam", "momentum"])
def test_checkpoint_of_a_zero_graph_is_whole_and_continues_without_zero(tmp_path, kind):
    path, back = str(tmp_path / "ckpt"), str(tmp_path / "plain")
    data = _data(5)
    state_name = "model.0.weight-" + ("m" if kind == "adam" else "momentum")

    def body():
        pl, model, opt, graph = _setup(2, kind, dict(stage=3, shard_min_size=1))
        _train(pl, graph, data[:3])
        state = graph.state_dict()
        buf = state[state_name]
        held = (tuple(buf.sbp), tuple(buf.to_local().shape), buf.numpy())  # numpy(): the logical value
        flow.save(state, path, global_dst_rank=0)
        # a graph without ZeRO, other initial values, loads the checkpoint and continues
        pl, model2, opt2, graph2 = _setup(2, kind, None, seed=7)
        graph2.load_state_dict(flow.load(path, global_src_rank=0))
        continued = _train(pl, graph2, data[3:])
        # the reference: without ZeRO all along; its checkpoint loads into a ZeRO graph, which continues as it
        pl, model3, opt3, graph3 = _setup(2, kind, None)
        straight = _train(pl, graph3, data[:3])
        plain_buf = graph3.state_dict()[state_name].numpy()
        flow.save(graph3.state_dict(), back, global_dst_rank=0)
        straight = np.concatenate([straight, _train(pl, graph3, data[3:])])
        pl, model4, opt4, graph4 = _setup(2, kind, dict(stage=2, shard_min_size=1), seed=9)
        graph4.load_state_dict(flow.load(back, global_src_rank=0))
        zero_continued = _train(pl, graph4, data[3:])
        params = [[p.numpy() for p in m.parameters()] for m in (model2, model3, model4)]
        return held, plain_buf, continued, straight, zero_continued, params

    for (sbp, local_shape, whole), plain_buf, continued, straight, zero_continued, params in on_ranks(2, body):
        assert sbp == (flow.sbp.split(0),) and local_shape == (8, 8)
        np.testing.assert_array_equal(whole, plain_buf)  # the ZeRO state is the whole state without ZeRO
        np.testing.assert_array_equal(continued, straight[3:])
        np.testing.assert_array_equal(zero_continued, straight[3:])
        for a, b, c in zip(*params):
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(c, b)


def test_bad_settings_are_refused_with_oneflows_messages():
    g = nn.Graph()
    with pytest.raises(AssertionError, match="ZeRO stage must range from 1 to 3."):
        g.config.enable_zero(True, stage=4)
    with pytest.raises(AssertionError, match="ZeRO min size of a sharded optimizer state must > 0."):
        g.config.enable_zero(True, shard_min_size=0)
    with pytest.raises(ValueError, match="shard_restore_level must be 0"):
        g.config.enable_zero(True, shard_restore_level=3)


@pytest.mark.parametrize("kind", ["lamb", "sgd"])
def test_with_clipping_and_gradient_accumulation_every_stage_equals_no_zero(kind):
    # the clipping reads the whole gradients' norm and 2 micro-batches sum their gradients before the update;
    # LAMB reads the whole parameter's norms: over S(0) shards it sums the ranks' sums of squares
    # (ops/split_norms.py), another order than one sum over the whole array, so LAMB agrees to float rounding
    data = _data(2)

    def body():
        out = []
        for zero in [None, dict(stage=1, shard_min_size=1), dict(stage=2, shard_min_size=1),
                     dict(stage=3, shard_min_size=1)]:
            pl, model, _, _ = _setup(2, "momentum")
            group = {"params": model.parameters(), "clip_grad_max_norm": 0.5, "clip_grad_norm_type": 2.0}
            if kind == "lamb":
                opt = flow.optim.LAMB([group], lr=0.05)
            else:
                opt = flow.optim.SGD([group], lr=0.1, momentum=0.9)

            class Train(nn.Graph):
                def __init__(self):
                    super().__init__()
                    self.model = model
                    self.add_optimizer(opt)
                    self.config.set_gradient_accumulation_steps(2)
                    if zero is not None:
                        self.config.enable_zero(True, **zero)

                def build(self, x, y):
                    loss = ((self.model(x) - y) ** 2).mean()
                    loss.backward()
                    return loss

            losses = _train(pl, Train(), data)
            out.append((losses, [p.numpy() for p in model.parameters()]))
        return out

    same = _close if kind == "lamb" else np.testing.assert_array_equal
    for results in on_ranks(2, body):
        plain_losses, plain_params = results[0]
        for zero, (losses, params) in zip(["stage 1", "stage 2", "stage 3"], results[1:]):
            same(losses, plain_losses, err_msg=zero)
            for got, want in zip(params, plain_params):
                same(got, want, err_msg=zero)


@pytest.mark.parametrize("kind", ["adam", "momentum"])
def test_eager_steps_continue_a_zero_graph_with_its_split_states(kind, tmp_path):
    # after a ZeRO graph the eager parameter is S(0) (as OneFlow's set_data) with its split states: the eager
    # optimizer updates each rank's rows in place and its state dict saves the whole states. The eager forward and
    # backward on an S(0) weight pick their own signatures (the gradient's sum may be grouped otherwise than the
    # graph's), so the eager step equals the plain one to float rounding
    data = _data(4)

    def body():
        out = []
        for zero in (None, dict(stage=2, shard_min_size=1)):
            pl, model, opt, graph = _setup(2, kind, zero)
            _train(pl, graph, data[:3])
            x, y = (flow.tensor(a, placement=pl, sbp=flow.sbp.split(0)) for a in data[3])
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
            opt.zero_grad()
            state = opt.state[model[0].weight]
            name = "exp_avg" if kind == "adam" else "momentum_buf"
            flow.save(opt.state_dict(), str(tmp_path / str(bool(zero))), global_dst_rank=0)
            saved = flow.load(str(tmp_path / str(bool(zero))), global_src_rank=0)["state"][0][name]
            out.append(([p.numpy() for p in model.parameters()], tuple(state[name].sbp), saved.numpy(),
                        tuple(model[0].weight.sbp)))
        return out

    for (plain, plain_sbp, plain_saved, plain_w), (zero, zero_sbp, zero_saved, zero_w) in on_ranks(2, body):
        assert plain_sbp == (flow.sbp.broadcast,) and zero_sbp == (flow.sbp.split(0),)
        assert plain_w == (flow.sbp.broadcast,) and zero_w == (flow.sbp.split(0),)
        _close(zero_saved, plain_saved, "state")
        assert zero_saved.shape == (16, 8)
        for a, b in zip(zero, plain):
            _close(a, b, "params")


def test_the_bytes_explain_reports_are_the_bytes_the_ranks_send():
    # each rank's comm records what it sends (comm/recording.py); a call's collectives, other than the one the
    # plain graph makes besides its gradients' all-reduce (the call's identity check, the same in every run), are
    # exactly the report's boxing, byte for byte
    from oneflow_compat.comm.recording import RecordingComm

    data = _data(2)
    names = {"reduce-scatter": "reduce_scatter", "all-gather": "allgatherv", "all-reduce": "allreduce"}

    def run(zero):
        def rank_main(comm):
            rec = RecordingComm(comm)
            threading.current_thread().name = "MainThread"
            with world.simulated_rank(rec), context.bound(context.Context()) as ctx:
                try:
                    pl, model, opt, graph = _setup(2, "adam", zero)
                    inputs = [[flow.tensor(a, placement=pl, sbp=flow.sbp.split(0)) for a in d] for d in data]
                    graph(*inputs[0])
                    rec.calls.clear()
                    graph(*inputs[1])  # (its loss is not read: no other collective)
                    return [(c.name, c.sent) for c in rec.calls if not c.control], graph.explain_report()
                finally:
                    ctx.reset()

        return SimulatedWorld(2, timeout=60).run(rank_main)

    plain = run(None)
    for zero in (dict(stage=1, shard_min_size=1), dict(stage=2, shard_min_size=1), dict(stage=3, shard_min_size=1)):
        for (calls, report), (plain_calls, plain_report) in zip(run(zero), plain):
            extra = list(plain_calls)
            bucket = ("allreduce", plain_report.bytes_per_call())
            if bucket in extra:  # the plain run's gradients: one bucket (CPU devices)
                extra.remove(bucket)
            else:  # on GPU devices an all-reduce per gradient, each one a boxing of the report
                for b in plain_report.boxing:
                    extra.remove(("allreduce", b["bytes"]))
            for call in extra:
                calls.remove(call)
            assert sum(sent for _, sent in calls) == report.bytes_per_call(), zero
            by_kind = sorted(calls)
            explained = sorted((names[b["collective"]], b["bytes"]) for b in report.boxing
                               if b["collective"] != "local-slice" and b["collective"] != "all-reduce")
            assert [c for c in by_kind if c[0] != "allreduce"] == explained, zero


def test_auto_parallel_ignoring_user_sbp_ignores_zero_with_oneflows_warning():
    def body():
        pl = flow.placement("cpu", [0, 1])
        model = nn.Linear(8, 4)
        model.to_global(placement=pl, sbp=flow.sbp.broadcast)
        opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        class Train(nn.Graph):
            def __init__(self):
                super().__init__()
                self.model = model
                self.add_optimizer(opt)
                self.config.enable_auto_parallel(True)
                self.config.enable_auto_parallel_ignore_user_sbp_config(True)
                self.config.enable_zero(True, stage=2, shard_min_size=1)

            def build(self, x):
                loss = self.model(x).sum()
                loss.backward()
                return loss

        graph = Train()
        graph(flow.ones(4, 8, placement=pl, sbp=flow.sbp.split(0)))
        return tuple(graph.state_dict()["model.weight-momentum"].sbp)

    # (caught around the simulated ranks: the warnings module's state is the process's, shared by its threads)
    with pytest.warns(UserWarning, match="^ZeRO optimization will be ignored when enabling AutoParallel to "
                                         "ignore user sbp configuration$"):
        assert on_ranks(2, body) == [(flow.sbp.broadcast,)] * 2
