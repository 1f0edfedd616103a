"""nn.Graph auto parallelism (OneFlow 0.9 auto_parallel.rst): GraphConfig's six settings, and the SBP search of
passes/auto_parallel.py on two simulated ranks — it splits ops the user did not pin, keeps the user's to_global
unless told to ignore it, turns a training graph data-parallel when the settings price computation above
communication, never changes the numbers, and is shown by explain and graph.debug."""
import re

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat.passes.auto_parallel import AutoParallelConf
from simulated_ranks import on_ranks


def test_the_settings_are_recorded_with_oneflows_defaults():
    conf = AutoParallelConf()  # job_conf.proto (v0.9.0) fields 700-705
    assert dict(conf.items()) == {
        "enable_auto_parallel": False, "enable_auto_parallel_ignore_user_sbp_config": False,
        "auto_parallel_computation_cost_ratio": 0.05, "auto_parallel_wait_time": 1.65e4,
        "enable_auto_parallel_trunk_algo": True, "enable_auto_parallel_sbp_collector": False}

    class G(flow.nn.Graph):
        def build(self, x):
            return x

    g = G()
    assert "auto_parallel" not in repr(g.config)
    g.config.enable_auto_parallel()
    g.config.enable_auto_parallel_ignore_user_sbp_config(True)
    g.config.set_auto_parallel_computation_cost_ratio(0.5)
    g.config.set_auto_parallel_wait_time(100)
    g.config.enable_auto_parallel_trunk_algo(False)
    g.config.enable_auto_parallel_sbp_collector(True)
    got = dict(g.config._auto_parallel.items())
    assert got == {"enable_auto_parallel": True, "enable_auto_parallel_ignore_user_sbp_config": True,
                   "auto_parallel_computation_cost_ratio": 0.5, "auto_parallel_wait_time": 100.0,
                   "enable_auto_parallel_trunk_algo": False, "enable_auto_parallel_sbp_collector": True}
    assert "auto_parallel=True" in repr(g.config)
    with pytest.raises(TypeError, match="GraphConfig.enable_auto_parallel: mode must be a bool, got int"):
        g.config.enable_auto_parallel(1)
    with pytest.raises(ValueError, match=re.escape("GraphConfig.set_auto_parallel_wait_time: expected a number >= 0, "
                                                   "got -1")):
        g.config.set_auto_parallel_wait_time(-1)
    # on one rank the graph runs as without it (nothing to split)
    np.testing.assert_array_equal(g(flow.ones(2, 3)).numpy(), np.ones((2, 3), np.float32))


A = np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32)


def _eval_graph(auto, ignore=False, pin=False):
    p = flow.placement("cpu", [0, 1])

    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            if auto:
                self.config.enable_auto_parallel(True)
                self.config.enable_auto_parallel_ignore_user_sbp_config(ignore)

        def build(self, x):
            y = flow.relu(x) * 2
            if pin:
                y = y.to_global(p, flow.sbp.broadcast)
            return (flow.exp(y * 0.1) + 1).sum()

    g = G()
    out = g(flow.tensor(A, placement=p, sbp=flow.sbp.broadcast))
    return out.numpy(), out.sbp, g.explain_report()


def test_ops_nobody_pinned_are_split_and_the_numbers_stay():
    want = (np.exp(np.maximum(A, 0) * 2 * 0.1) + 1).sum()

    def body():
        return _eval_graph(False), _eval_graph(True)

    for (base, base_sbp, base_report), (got, got_sbp, report) in on_ranks(2, body):
        np.testing.assert_allclose(base, want, rtol=1e-5)
        np.testing.assert_allclose(got, want, rtol=1e-5)
        assert base_sbp == (flow.sbp.broadcast,) and base_report.auto_parallel is None
        summary = report.auto_parallel
        assert summary.final < summary.initial and len(summary.changed) >= 4 and summary.unpinned == 0
        assert got_sbp == (flow.sbp.partial_sum,)  # the sum of the pieces' sums, as the search chose
        # the input is read as a split: a local slice, no communication
        assert [(b["collective"], b["bytes"]) for b in report.boxing] == [("local-slice", 0.0)]
        text = str(report)
        assert "auto parallel: cost %.6g -> %.6g" % (summary.initial, summary.final) in text
        assert "auto_parallel_wait_time=16500.0" in text and "enable_auto_parallel_trunk_algo=True" in text


def test_the_users_to_global_is_kept_unless_the_ignore_flag_is_set():
    want = (np.exp(np.maximum(A, 0) * 2 * 0.1) + 1).sum()

    def body():
        return _eval_graph(True, pin=True), _eval_graph(True, ignore=True, pin=True)

    for (kept, kept_sbp, kept_report), (free, free_sbp, free_report) in on_ranks(2, body):
        np.testing.assert_allclose(kept, want, rtol=1e-5)
        np.testing.assert_allclose(free, want, rtol=1e-5)
        # splitting before the user's broadcast would need an all-gather: dearer than the computation saved
        assert kept_report.auto_parallel.changed == [] and kept_report.auto_parallel.unpinned == 0
        assert kept_sbp == (flow.sbp.broadcast,)
        assert free_report.auto_parallel.unpinned == 1 and len(free_report.auto_parallel.changed) >= 4
        assert free_sbp == (flow.sbp.partial_sum,)


def _train(auto, batch=64):
    p = flow.placement("cpu", [0, 1])
    rng = np.random.default_rng(1)
    a = rng.standard_normal((batch, 8)).astype(np.float32)
    labels = rng.integers(0, 4, batch)
    m = flow.nn.Sequential(flow.nn.Linear(8, 16), flow.nn.ReLU(), flow.nn.Linear(16, 4))
    with flow.no_grad():
        for prm in m.parameters():
            prm.copy_(flow.tensor(rng.standard_normal(tuple(prm.shape)).astype(np.float32) * 0.3))
    m = m.to_global(p, flow.sbp.broadcast)
    opt = flow.optim.SGD(m.parameters(), lr=0.1)

    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = m
            self.add_optimizer(opt)
            if auto:
                self.config.enable_auto_parallel(True)
                self.config.set_auto_parallel_wait_time(0)  # communication priced at its bytes alone
                self.config.set_auto_parallel_computation_cost_ratio(1.0)

        def build(self, x, y):
            loss = flow.nn.functional.cross_entropy(self.m(x), y)
            loss.backward()
            return loss

    g = G()
    x = flow.tensor(a, placement=p, sbp=flow.sbp.broadcast)
    y = flow.tensor(labels, placement=p, sbp=flow.sbp.broadcast)
    losses = [float(g(x, y).numpy()) for _ in range(3)]
    return losses, [prm.numpy() for prm in m.parameters()], g.explain_report()


def test_a_training_graph_becomes_data_parallel_with_the_same_numbers():
    def body():
        return _train(False), _train(True)

    for (base_losses, base_params, base_report), (losses, params, report) in on_ranks(2, body):
        np.testing.assert_allclose(losses, base_losses, rtol=1e-5)
        for got, want in zip(params, base_params):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        assert base_report.boxing == []
        # the batch is split, so the weights' gradients are partial sums made whole for their broadcast update
        reduced = [b for b in report.boxing if b["collective"] == "all-reduce"]
        assert len(reduced) >= 4 and report.auto_parallel.final < report.auto_parallel.initial


def test_graph_debug_prints_what_the_search_did(capsys):
    p = flow.placement("cpu", [0, 1])

    def body():
        class G(flow.nn.Graph):
            def __init__(self):
                super().__init__()
                self.config.enable_auto_parallel(True)
                self.debug(0)

            def build(self, x):
                return flow.relu(x).sum()

        G()(flow.tensor(A, placement=p, sbp=flow.sbp.broadcast))

    on_ranks(2, body)
    out = capsys.readouterr().out
    assert re.search(r"\(GRAPH:G_0:G\) auto parallel: cost [\d.e+]+ -> [\d.e+]+ \(copy bytes \+ wait time \+ 0.05 x "
                     r"computation\), \d+ op\(s\) changed", out), out
    assert out.count("auto parallel settings: enable_auto_parallel_ignore_user_sbp_config=False") == 1  # rank 0
