"""nn.Graph's `_compile(*args)` (OneFlow 0.9: build and compile without running; the documentation's
cookies/oneflow2onnnx.md calls it before exporting) and `flow.save(graph, path)` (0.9 exports the job as MLIR, which a
build without MLIR refuses: `SaveJobToIR is only supported WITH_MLIR`, oneflow/core/job/job_ir.cpp @ v0.9.0).
Numbers are checked against numpy written here."""
import os

import numpy as np
import pytest

import oneflow as flow
import oneflow.nn as nn


class _Eval(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x)


class _Train(nn.Graph):
    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)

    def build(self, x):
        loss = self.model(x).sum()
        loss.backward()
        return loss


def _linear(seed):
    flow.manual_seed(seed)
    return nn.Linear(3, 2)


def test_compile_builds_without_running_and_the_first_call_runs_that_plan():
    model = _linear(0)
    w0, b0 = model.weight.numpy().copy(), model.bias.numpy().copy()
    graph = _Train(model, flow.optim.SGD(model.parameters(), lr=0.1))
    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    assert not graph._is_compiled
    assert graph._compile(flow.tensor(x)) is None
    assert graph._is_compiled and graph.is_compiled
    # compiling ran no step: the parameters are the initial ones
    np.testing.assert_array_equal(model.weight.numpy(), w0)
    np.testing.assert_array_equal(model.bias.numpy(), b0)
    loss = graph(flow.tensor(x))
    np.testing.assert_allclose(loss.numpy(), (x @ w0.T + b0).sum(), rtol=1e-6)
    # d(sum(x W^T + b))/dW = column sums of x for every output row; /db = the batch size
    np.testing.assert_allclose(model.weight.numpy(), w0 - 0.1 * np.tile(x.sum(0), (2, 1)), rtol=1e-6)
    np.testing.assert_allclose(model.bias.numpy(), b0 - 0.1 * 4, rtol=1e-6)


def test_compile_is_once_and_fixes_the_input_layout():
    model = _linear(1)
    graph = _Eval(model)
    graph._compile(flow.ones(4, 3))
    with pytest.raises(AssertionError, match=r"^nn.Graph %s has already been compiled.$" % graph.name):
        graph._compile(flow.ones(4, 3))
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    out = graph(flow.tensor(x))
    np.testing.assert_allclose(out.numpy(), x @ model.weight.numpy().T + model.bias.numpy(), rtol=1e-6)
    with pytest.raises(Exception, match=r"compiled for"):
        graph(flow.ones(5, 3))


def test_save_of_a_graph_is_refused_as_a_build_without_mlir_and_writes_nothing(tmp_path):
    model = _linear(2)
    graph = _Eval(model)
    target = tmp_path / "exported"
    with pytest.raises(RuntimeError, match=r"^graph must be compiled first.$"):
        flow.save(graph, str(target))
    graph._compile(flow.ones(2, 3))
    with pytest.raises(NotImplementedError) as e:
        flow.save(graph, str(target))
    assert "SaveJobToIR is only supported WITH_MLIR" in str(e.value)
    assert graph.name in str(e.value) and str(target) in str(e.value)
    assert not target.exists()
    # what the message offers instead works, and loads back the same values
    flow.save(graph.state_dict(), str(target))
    loaded = flow.load(str(target))
    np.testing.assert_array_equal(loaded["model"]["weight"].numpy(), model.weight.numpy())

