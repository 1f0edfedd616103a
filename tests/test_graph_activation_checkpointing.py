"""nn.Graph activation checkpointing (`module.to(nn.graph.GraphModule).activation_checkpointing = True`,
passes/checkpointing.py, OneFlow 0.9's CheckpointingPass): the checkpointed modules' forward ops run again in the
backward from the modules' inputs, so the losses and updated parameters are those without checkpointing bit for
bit (dropout replays its mask; batch norm is not recomputed, its running statistics move once per step), and the
plan holds fewer tensors and bytes between the forward and the backward pass (measured on the running plan by
runtime/plan_memory.py)."""

import numpy as np
import pytest

import oneflow as flow
import oneflow.nn as nn
from oneflow_compat.passes.checkpointing import FAKE_PREFIX
from oneflow_compat.runtime import context, plan_memory
from simulated_ranks import on_ranks


def _block(norm=False):
    layers = [nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.25), nn.Linear(32, 16), nn.Tanh()]
    if norm:
        layers.insert(1, nn.BatchNorm1d(32))
    return nn.Sequential(*layers)


def _load(module, seed):
    # initial values from numpy: the simulated ranks are threads of one process, whose draws would interleave
    rng = np.random.RandomState(seed)
    module.load_state_dict({k: flow.tensor((rng.randn(*v.shape) * 0.3).astype(np.float32)) if v.dtype == flow.float32
                            else v for k, v in module.state_dict().items()})


def _train(checkpointed, norm=False, placement=None, micro_batches=1, nested_off=False, steps=3):
    """Trains 3 blocks and a head; `checkpointed`: the indices of the blocks with activation checkpointing. Returns
    the losses, the parameters and buffers after the steps, what the last call held across the backward
    (registers, bytes), its peak bytes, and the compiled job."""
    flow.manual_seed(5)  # the graph's dropout streams derive from the global generator's seed and the graph's name
    blocks = nn.Sequential(*[_block(norm) for _ in range(3)])
    head = nn.Linear(16, 4)
    model = nn.Sequential(blocks, head)
    _load(model, 1)
    if placement is not None:
        model.to_global(placement=placement, sbp=flow.sbp.broadcast)
    opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    class Train(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            for i in checkpointed:
                self.model[0][i].to(nn.graph.GraphModule).activation_checkpointing = True
                if nested_off:  # a module inside a checkpointed one that turns it off keeps its activations
                    self.model[0][i][0].to(nn.graph.GraphModule).activation_checkpointing = False
            if micro_batches > 1:
                self.config.set_gradient_accumulation_steps(micro_batches)
            self.add_optimizer(opt)

        def build(self, x, y):
            loss = ((self.model(x) - y) ** 2).mean()
            loss.backward()
            return loss

    graph = Train()
    rng = np.random.RandomState(2)
    losses, track = [], None
    for step in range(steps):
        x, y = rng.randn(32, 16).astype(np.float32), rng.randn(32, 4).astype(np.float32)
        if placement is None:
            x, y = flow.tensor(x), flow.tensor(y)
        else:
            x, y = (flow.tensor(a, placement=placement, sbp=flow.sbp.split(0)) for a in (x, y))
        if step == 0:
            out = graph(x, y)
        else:
            with plan_memory.tracking(graph._compiled.plan) as track:
                out = graph(x, y)
        losses.append(out.numpy())
    state = [v.numpy() for v in model.state_dict().values()]
    return losses, state, track.across_backward(), track.peak(), graph._compiled.job


def _fresh(fn, *args, **kwargs):
    # each run in a fresh context: its graph is the first of its class (the same name, so the same dropout seeds)
    with context.bound(context.Context()) as ctx:
        try:
            return fn(*args, **kwargs)
        finally:
            ctx.reset()


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_recomputation_gives_the_same_numbers_and_holds_less_across_the_backward():
    plain = _fresh(_train, [])
    every = _fresh(_train, [0, 1, 2])
    _same(every[0], plain[0])  # losses, bit for bit (dropout included)
    _same(every[1], plain[1])  # parameters after the updates
    (plain_regs, plain_bytes), (regs, nbytes) = plain[2], every[2]
    # without checkpointing every block's activations (and dropout masks) wait for the backward; with it, each
    # block's input alone: 32x16 floats (2 KiB) where a block's activations take 32x32 floats several times
    assert regs < plain_regs and nbytes < plain_bytes * 0.6, (plain[2], every[2])
    assert every[3] < plain[3], (plain[3], every[3])  # the peak too: one block's activations at a time
    job = every[4]
    clones = [op for op in job.ops if op.name.startswith(FAKE_PREFIX)]
    originals = {job.recompute_of[c.name] for c in clones}
    assert all(c.section == "backward" for c in clones)
    # the forward ops of every block are recomputed: their matmuls, relu, dropout, tanh (the last block's ops
    # feed the head's backward, so all of them are needed)
    for i in range(3):
        for kind in ("matmul", "relu", "dropout", "tanh"):
            assert any(o.startswith("model.0.%d." % i) and kind in o for o in originals), (i, kind, originals)
    # each clone runs in the backward, before the first backward op that reads what it recomputes
    position = {op.name: k for k, op in enumerate(job.ops)}
    first_backward = min(k for k, op in enumerate(job.ops) if op.section == "backward")
    assert min(position[c.name] for c in clones) > first_backward


def test_one_checkpointed_block_and_a_nested_module_that_turns_it_off():
    plain = _fresh(_train, [])
    one = _fresh(_train, [1])
    _same(one[0], plain[0])
    _same(one[1], plain[1])
    assert one[2][1] < plain[2][1]
    originals = set(one[4].recompute_of.values())
    assert originals and all(o.startswith("model.0.1.") for o in originals)
    off = _fresh(_train, [0, 1, 2], nested_off=True)
    _same(off[0], plain[0])
    _same(off[1], plain[1])
    originals = set(off[4].recompute_of.values())
    # the first Linear of each block (model.0.i.0) keeps its activations; the rest of the block is recomputed
    assert originals and not any(".0-" in o.split("model.0.")[1][:4] for o in originals), originals
    assert any(o.startswith("model.0.0.1-") for o in originals)


def test_batch_norm_is_not_recomputed_and_gradient_accumulation_replays_each_micro_batch():
    plain = _fresh(_train, [], norm=True, micro_batches=2)
    every = _fresh(_train, [0, 1, 2], norm=True, micro_batches=2)
    _same(every[0], plain[0])
    _same(every[1], plain[1])  # the running statistics included: batch norm ran once per micro-batch
    assert every[2][1] < plain[2][1]
    job = every[4]
    norms = [op.name for op in job.ops if op.section == "forward" and not op.defn.recomputable]
    assert len(norms) == 3, norms  # one batch normalization per block, none of them cloned
    clones = set(job.recompute_of)
    assert not any(n in job.recompute_of.values() for n in norms)
    assert not any("moving_average" in c for c in clones), clones
    # what comes after the batch norm of each block is recomputed from its output
    assert any(o.startswith("model.0.2.2-relu") for o in job.recompute_of.values()), sorted(job.recompute_of.values())


def test_on_two_ranks_data_parallel():
    def body(ckpt):
        return _train([0, 1, 2] if ckpt else [], placement=flow.placement("cpu", ranks=[0, 1]), steps=2)[:4]

    plain = on_ranks(2, lambda: body(False), timeout=120)
    every = on_ranks(2, lambda: body(True), timeout=120)
    for p, e in zip(plain, every):
        _same(e[0], p[0])
        _same(e[1], p[1])
        assert e[2][1] < p[2][1]


def test_an_eval_graph_and_the_config_repr():
    block = _block()
    _load(block, 3)
    block.eval()

    class Eval(nn.Graph):
        def __init__(self):
            super().__init__()
            self.block = block
            self.block.to(nn.graph.GraphModule).activation_checkpointing = True

        def build(self, x):
            return self.block(x)

    g = Eval()
    assert g.block.to(nn.graph.GraphModule).activation_checkpointing is True
    assert "activation_checkpointing=True" in repr(g.block.to(nn.graph.GraphModule))
    x = flow.tensor(np.random.RandomState(0).randn(4, 16).astype(np.float32))
    np.testing.assert_allclose(g(x).numpy(), block(x).numpy(), rtol=1e-6)
    assert not getattr(g._compiled.job, "recompute_of", None)


def test_tracking_needs_a_forward_then_a_backward():
    track = plan_memory.Track()
    track.after = [("forward", 3, 10), ("forward", 2, 8)]
    with pytest.raises(ValueError, match="no forward step followed by a backward one"):
        track.across_backward()
    track.after.append(("backward", 4, 30))
    assert track.across_backward() == (2, 8) and track.peak() == 30


def test_a_pipelined_graph_recomputes_each_stage_in_its_stage():
    def run(ckpt):
        flow.manual_seed(5)
        p0 = flow.placement("cpu", ranks=[0])
        model = nn.Sequential(_block(), _block())
        _load(model, 4)
        model.to_global(placement=p0, sbp=flow.sbp.broadcast)
        opt = flow.optim.SGD(model.parameters(), lr=0.1)

        class Staged(nn.Graph):
            def __init__(self):
                super().__init__()
                self.model = model
                for i in range(2):
                    self.model[i].to(nn.graph.GraphModule).set_stage(stage_id=i, placement=p0)
                    self.model[i].to(nn.graph.GraphModule).activation_checkpointing = ckpt
                self.config.set_gradient_accumulation_steps(2)
                self.add_optimizer(opt)

            def build(self, x):
                loss = self.model(x).square().mean()
                loss.backward()
                return loss

        graph = Staged()
        x = flow.tensor(np.random.RandomState(6).randn(8, 16).astype(np.float32), placement=p0,
                        sbp=flow.sbp.broadcast)
        losses = [graph(x).numpy() for _ in range(2)]
        compiled = graph._compiled
        assert compiled.schedule == "gpipe"
        stages = {compiled.stage_of.get(c) for c in getattr(compiled.job, "recompute_of", {})}
        return losses, [p.numpy() for p in model.parameters()], stages

    plain, every = _fresh(run, False), _fresh(run, True)
    _same(every[0], plain[0])
    _same(every[1], plain[1])
    assert plain[2] == set() and every[2] == {0, 1}


def test_with_zero_on_two_ranks():
    # ZeRO's gathered parameters (System-ZeRO-ParallelCast, outside the module) are read by the recomputation
    def body(ckpt, zero):
        pl = flow.placement("cpu", ranks=[0, 1])
        model = nn.Sequential(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8)), nn.Linear(8, 4))
        _load(model, 0)
        model.to_global(placement=pl, sbp=flow.sbp.broadcast)
        opt = flow.optim.Adam(model.parameters(), lr=0.01)

        class G(nn.Graph):
            def __init__(self):
                super().__init__()
                self.model = model
                self.add_optimizer(opt)
                self.model[0].to(nn.graph.GraphModule).activation_checkpointing = ckpt
                if zero:
                    self.config.enable_zero(True, stage=zero, shard_min_size=1)

            def build(self, x, y):
                loss = ((self.model(x) - y) ** 2).mean()
                loss.backward()
                return loss

        graph, rng, losses = G(), np.random.RandomState(1), []
        for _ in range(3):
            x, y = (flow.tensor(rng.randn(8, n).astype(np.float32), placement=pl, sbp=flow.sbp.split(0))
                    for n in (8, 4))
            losses.append(graph(x, y).numpy())
        return losses, [p.numpy() for p in model.parameters()], len(getattr(graph._compiled.job, "recompute_of", {}))

    def run(ckpt, zero):
        return on_ranks(2, lambda: body(ckpt, zero), timeout=120)[0]

    plain = run(False, None)
    for zero in (1, 3):
        got = run(True, zero)
        assert got[2] > 0
        _same(got[0], plain[0])
        _same(got[1], plain[1])
