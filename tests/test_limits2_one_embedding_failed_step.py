"""A failed or interrupted nn.Graph step leaves nothing of one_embedding's row gradients for the next step: the
gradient op's sums are the call's until the optimizer phase's update takes them, dropped at the end of a call that
did not get there (runtime/executable.py `Executable.finish`), as the dense gradients in its registers are.

A failure (an error, or a KeyboardInterrupt) is injected into the step that follows the embedding's gradient op
(the optimizer phase's first), or, with two micro-batches, into the second micro-batch's backward pass (after the
first micro-batch's gradient op ran); the steps that follow must give the numbers of a run without the
failure: the table's rows, its optimizer states (Adam) and a dense head trained with it."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import nn

oe = flow.one_embedding
KEYS = np.array([5, 2 ** 40 + 3, 77, -9, 123456789], dtype=np.int64)
DIM = 3
_names = iter(range(10 ** 6))
TARGET = np.linspace(-1, 1, 8 * 2, dtype=np.float32).reshape(8, 2)
WEIGHT = np.random.default_rng(4).standard_normal((2, DIM)).astype(np.float32)


def _embedding(tmp_path, size_factor):
    name = "fail%d" % next(_names)
    store = oe.make_device_mem_store_options(persistent_path=str(tmp_path / name), capacity=1000,
                                             size_factor=size_factor)
    return oe.MultiTableEmbedding(name, DIM, flow.float, flow.int64,
                                  [oe.make_table_options(oe.make_uniform_initializer(-0.5, 0.5))], store)


def _batches(n, seed=0):
    rng = np.random.RandomState(seed)
    return [flow.tensor(KEYS[rng.randint(0, len(KEYS), 8)]) for _ in range(n)]


class _Boom(RuntimeError):
    pass


def _graph(e, accumulation, kind):
    head = nn.Linear(DIM, 2, bias=False)
    head.weight.data = flow.tensor(WEIGHT.copy())
    params = list(e.parameters()) + list(head.parameters())
    opt = flow.optim.Adam(params, lr=0.05) if kind == "adam" else flow.optim.SGD(params, lr=0.1, momentum=0.9)

    class Train(nn.Graph):
        def __init__(self):
            super().__init__()
            self.e, self.head = e, head
            self.add_optimizer(opt)
            if accumulation > 1:
                self.config.set_gradient_accumulation_steps(accumulation)

        def build(self, ids):
            loss = ((self.head(self.e(ids)) - flow.tensor(TARGET[:8 // accumulation])) ** 2).sum()
            loss.backward()
            return loss
    return Train(), head


def _inject(graph, error, offset, at_call):
    """The step `offset` steps after the embedding's gradient op raises `error` the `at_call`-th time it runs
    (once); returns a function telling whether it did."""
    plan = graph._compiled.exe.plan
    k = next(i for i, op in enumerate(plan.step_ops) if op.type == "one_embedding_fused_lookup_grad") + offset
    assert (k >= plan.optimizer_start) == (offset > 0)
    original, seen = plan.steps[k], {"runs": 0, "raised": False}

    def step():
        seen["runs"] += 1
        if seen["runs"] == at_call and not seen["raised"]:
            seen["raised"] = True
            raise error
        return original()
    plan.steps[k] = step
    return lambda: seen["raised"]


def _train(tmp_path, accumulation, kind, fail=None):
    e = _embedding(tmp_path, 2 if kind == "sgd" else 3)
    g, head = _graph(e, accumulation, kind)
    batches = _batches(3)
    with flow.no_grad():
        initial = e(flow.tensor(KEYS)).numpy()
    losses = [float(g(batches[0]).numpy().sum())]
    if fail is not None:
        error, offset, at_call = fail
        raised = _inject(g, error, offset, at_call)
        with pytest.raises(type(error)):
            g(_batches(1, seed=7)[0])  # (another batch than the next step's: a retry of the same batch would
            # hide leftover gradients behind the norm-carrying factor, 2g * N / 2N = g)
        assert raised()
    for b in batches[1:]:
        losses.append(float(g(b).numpy().sum()))
    with flow.no_grad():
        rows = e(flow.tensor(KEYS)).numpy()
    assert not np.allclose(rows, initial, atol=1e-3) and len(set(losses)) == len(losses)  # (it did train)
    return rows, head.weight.numpy(), losses


@pytest.mark.parametrize("kind", ["sgd", "adam"])
@pytest.mark.parametrize("accumulation,offset,at_call", [(1, 1, 1), (2, 1, 1), (2, -1, 2)],
                         ids=["after-gradient", "accumulated-after-gradient", "second-micro-batch"])
@pytest.mark.parametrize("error", [_Boom("injected"), KeyboardInterrupt()], ids=["error", "interrupt"])
def test_a_failed_step_adds_nothing_to_the_next_step(tmp_path, kind, accumulation, offset, at_call, error):
    clean = _train(tmp_path, accumulation, kind)
    failed = _train(tmp_path, accumulation, kind, fail=(error, offset, at_call))
    for want, got in zip(clean, failed):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
