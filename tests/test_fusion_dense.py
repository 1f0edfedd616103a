"""The dense network's fusions (passes/fusion.py) in whole train jobs: the MLP compiles to matmul_bias_act, the
loss with its gradient in one op, matmul_relu_grad, and SGD folded into the gradients' own GEMMs and sums — on one
device and on several in-process devices, where the data-parallel all-reduce disappears — and computes what a
hand-written numpy step and the unfused job compute. Chains that must not fuse (other optimizers, weight decay,
gradient accumulation, a layout the fused op does not declare) stay as they were."""
import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp
from oneflow_compat.framework import session as sess
from oneflow_compat.ir import sbp as S
from oneflow_compat.ops import system_ops
from oneflow_compat.passes import fusion

B, IN, HID, OUT, LR = 12, 10, 9, 5, 0.3


def _data(step):
    r = np.random.default_rng(step)
    return r.standard_normal((B, IN)).astype(np.float32), r.integers(0, OUT, B).astype(np.int32)


def _weights():
    r = np.random.default_rng(7)
    return {"d1-weight": (r.standard_normal((HID, IN)) * 0.4).astype(np.float32),
            "d1-bias": (r.standard_normal(HID) * 0.1).astype(np.float32),
            "d2-weight": (r.standard_normal((OUT, HID)) * 0.4).astype(np.float32),
            "d2-bias": (r.standard_normal(OUT) * 0.1).astype(np.float32)}


def _mlp_job(devices, optimizer, accumulate=1):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    cfg = flow.function_config()
    if accumulate > 1:
        cfg.train.num_gradient_accumulation_steps(accumulate)

    @flow.global_function(type="train", function_config=cfg)
    def train_job(x: tp.Numpy.Placeholder((B, IN)), y: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        h = flow.layers.dense(x, HID, activation=flow.nn.relu, name="d1")
        logits = flow.layers.dense(h, OUT, name="d2")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
        optimizer().minimize(loss)
        return loss

    flow.load_variables(_weights())
    return train_job


def _sgd(momentum):
    return lambda: flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [LR]), momentum=momentum)


def _train(job, steps=3):
    losses = [job(*_data(s)) for s in range(steps)]
    return np.array(losses), {k: v.numpy() for k, v in flow.get_all_variables().items()}


def _compiled_ops(name="train_job"):
    return sess.default_session().compiled[name].job.ops


def _types(name="train_job"):
    return [op.type for op in _compiled_ops(name)]


def _numpy_steps(momentum, steps=3):
    """The same SGD steps in float64 numpy: mean loss gradient, TF-style momentum (m = beta m - lr g; w += m)."""
    w = {k: v.astype(np.float64) for k, v in _weights().items()}
    m = {k: np.zeros_like(v) for k, v in w.items()}
    losses = []
    for s in range(steps):
        x, y = _data(s)
        x = x.astype(np.float64)
        h = np.maximum(x @ w["d1-weight"].T + w["d1-bias"], 0)
        z = h @ w["d2-weight"].T + w["d2-bias"]
        e = np.exp(z - z.max(1, keepdims=True))
        p = e / e.sum(1, keepdims=True)
        losses.append(-np.log(p[np.arange(B), y]))
        dz = p.copy()
        dz[np.arange(B), y] -= 1
        dz /= B
        dh = (dz @ w["d2-weight"]) * (h > 0)
        grads = {"d2-weight": dz.T @ h, "d2-bias": dz.sum(0), "d1-weight": dh.T @ x, "d1-bias": dh.sum(0)}
        for k, g in grads.items():
            m[k] = momentum * m[k] - LR * g
            w[k] = w[k] + m[k]
    return np.array(losses), w


def _assert_close(got, want, rtol=2e-5, atol=2e-6):
    np.testing.assert_allclose(got[0], want[0], rtol=rtol, atol=atol)
    for k, v in want[1].items():
        np.testing.assert_allclose(got[1][k], v, rtol=rtol, atol=atol, err_msg=k)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
@pytest.mark.parametrize("devices", [1] + [pytest.param(n, marks=pytest.mark.cpu_only(
    "data-parallel updates fuse where the variable's replicas are one array: CPU devices of one process"))
    for n in (2, 3)])
def test_mlp_train_job_fuses_and_trains_as_numpy_and_unfused(monkeypatch, devices, momentum):
    fused = _train(_mlp_job(devices, _sgd(momentum)))
    types = _types()
    assert types.count("matmul_bias_act") == 2 and types.count("sparse_softmax_cross_entropy_and_grad") == 1
    assert types.count("matmul_relu_grad") == 1
    assert types.count("matmul_sgd_update") == 2 and types.count("reduce_sum_sgd_update") == 2
    # nothing else computes: the unfused ops, the learning rate and (on several devices) every boxing are gone
    assert set(types) <= {"input", "variable", "increment", "matmul_bias_act", "sparse_softmax_cross_entropy_and_grad",
                          "matmul_relu_grad", "matmul_sgd_update", "reduce_sum_sgd_update"}
    if devices > 1:
        for op in _compiled_ops():
            if op.type == "matmul_sgd_update":  # the partial products of the batch-split operands add up in place
                assert op.sbp_in[:3] == [S.B, S.S(0), S.S(0)]
    _assert_close(fused, _numpy_steps(momentum))

    monkeypatch.setattr(fusion, "fuse", lambda job: job)
    unfused = _train(_mlp_job(devices, _sgd(momentum)))
    assert "optimizer_update" in _types() and ("boxing" in _types()) == (devices > 1)
    _assert_close(fused, unfused, rtol=1e-5, atol=1e-6)


@pytest.mark.cpu_only("data-parallel updates fuse where the variable's replicas are one array: CPU devices of "
                      "one process")
def test_each_fused_update_runs_after_every_other_reader_of_its_variable():
    _train(_mlp_job(2, _sgd(0.9)), steps=1)
    ops = _compiled_ops()
    for i, op in enumerate(ops):
        if op.type in ("matmul_sgd_update", "reduce_sum_sgd_update"):
            written = {op.inputs[0].key(), op.inputs[-1].key()}  # the variable and its momentum
            later = [o.name for o in ops[i + 1:] if any(x.key() in written for x in o.inputs)]
            assert later == [], (op.name, later)
            made_before = {y.key() for o in ops[:i] for y in o.outputs}
            assert all(x.key() in made_before for x in op.inputs), op.name
    # an update runs right after its last operand: the output layer's bias first, the big weight last
    updates = [op.attrs["var"] for op in ops if op.type.endswith("sgd_update")]
    assert updates == ["d2-bias", "d2-weight", "d1-bias", "d1-weight"]


@pytest.mark.parametrize("make, accumulate", [
    (lambda: flow.optimizer.Adam(flow.optimizer.PiecewiseConstantScheduler([], [0.01])), 1),
    (lambda: flow.optimizer.SGDW(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9,
                                 weight_decay=0.01), 1),
    (_sgd(0.0), 3),
], ids=["adam", "weight_decay", "gradient_accumulation"])
def test_updates_that_are_not_sgd_of_the_raw_gradient_stay_unfused(make, accumulate):
    got = _train(_mlp_job(2, make, accumulate), steps=2)
    types = _types()
    assert "matmul_sgd_update" not in types and "reduce_sum_sgd_update" not in types
    assert types.count("optimizer_update") == 4
    assert "matmul_bias_act" in types  # the forward still fuses
    assert np.all(np.isfinite(got[0]))


@pytest.mark.cpu_only("data-parallel updates fuse where the variable's replicas are one array: CPU devices of "
                      "one process")
def test_a_data_parallel_gradient_from_the_all_reduce_is_updated_in_place_and_equals_one_device():
    adam = lambda: flow.optimizer.Adam(flow.optimizer.PiecewiseConstantScheduler([], [0.01]))  # noqa: E731
    one = _train(_mlp_job(1, adam))
    two = _train(_mlp_job(2, adam))
    updates = [op for op in _compiled_ops() if op.type == "optimizer_update"]
    assert len(updates) == 4
    for op in updates:  # each gradient comes out of an in-process all-reduce, one array the update may overwrite
        assert op.inputs[1].op.type == "boxing" and op.inputs[1].op.attrs["collective"] == "all-reduce"
        assert system_ops.input_owned(op, 1)
    _assert_close(two, one, rtol=1e-5, atol=1e-6)


def test_a_layout_the_fused_op_does_not_declare_stays_unfused():
    # x split on its columns and the weight on its rows: the product is a partial sum, which bias_add keeps
    # (the bias read as partial sums too) and relu cannot take; matmul_bias_act declares no partial sums
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 6))) -> tp.Numpy:
        w = flow.get_variable("w", (6, 3), initializer=flow.constant_initializer(0.0),
                              distribute=flow.distribute.split(0))
        b = flow.get_variable("b", (3,), initializer=flow.constant_initializer(0.0))
        xs = flow.parallel_cast(x, distribute=flow.distribute.split(1))
        return flow.math.relu(flow.nn.bias_add(flow.matmul(xs, w), flow.parallel_cast(b, distribute=S.P)))

    r = np.random.default_rng(0)
    w, b = r.standard_normal((6, 3)).astype(np.float32), r.standard_normal(3).astype(np.float32)
    flow.load_variables({"w": w, "b": b})
    x = r.standard_normal((4, 6)).astype(np.float32)
    got = job(x)
    types = _types("job")
    assert "matmul_bias_act" not in types and {"matmul", "bias_add", "relu"} <= set(types)
    np.testing.assert_allclose(got, np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-6)


def test_pieces_that_are_not_row_blocks_of_one_array_are_computed_device_by_device(monkeypatch):
    from oneflow_compat.ops import transitions
    from oneflow_compat.runtime import plan

    monkeypatch.setattr(transitions, "rows_of_one", lambda pieces: None)
    monkeypatch.setattr(plan, "rows_of_one", lambda pieces: None)
    _assert_close(_train(_mlp_job(3, _sgd(0.9))), _numpy_steps(0.9))
