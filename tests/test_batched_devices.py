"""In-process CPU devices computing S(0) pieces with one kernel call (runtime/plan.py): an op that reads row pieces
and broadcast copies and produces row pieces runs once on the whole rows when the pieces are row blocks of one
array (`transitions.rows_of_one`), and hands each device its rows as views; otherwise each device runs its own
call. Either way the devices get the values of running apart."""
import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp
from oneflow_compat.framework import session as sess
from oneflow_compat.ops import registry
from oneflow_compat.ops.transitions import rows_of_one
from oneflow_compat.runtime import plan as plan_mod


def test_rows_of_one_finds_the_array_the_pieces_cut():
    a = np.arange(60.0).reshape(10, 6)
    for cuts in ([4, 7], [0, 4, 4, 10], [10]):
        pieces = np.split(a, cuts)
        whole = rows_of_one(pieces)
        np.testing.assert_array_equal(whole, a)
        assert np.shares_memory(whole, a)
    f = np.asfortranarray(a)  # column-major rows, as a batch-minor dense layer's output
    np.testing.assert_array_equal(rows_of_one([f[:3], f[3:]]), a)
    cols = np.arange(100.0).reshape(10, 10)[:, 2:8]  # rows with a gap between them
    np.testing.assert_array_equal(rows_of_one([cols[:5], cols[5:]]), cols)
    assert rows_of_one([a[:4], a[5:]]) is None  # a row missing
    assert rows_of_one([a[4:], a[:4]]) is None  # out of order
    assert rows_of_one([a[:4], a[4:].copy()]) is None  # two arrays
    assert rows_of_one([a[:4, :3], a[4:, 3:]]) is None  # different columns
    assert rows_of_one([np.arange(4.0), np.arange(4.0)]) is None  # owners, not views
    obj = np.array([[1], [2]], dtype=object)
    assert rows_of_one([obj[:1], obj[1:]]) is None  # never an object array over raw memory


def _counting(monkeypatch, op_type):
    calls = []
    defn = registry.get(op_type)
    kernel = defn.kernel

    def counted(xp, *arrays, **attrs):
        calls.append(tuple(arrays[0].shape))
        return kernel(xp, *arrays, **attrs)

    monkeypatch.setattr(defn, "kernel", counted)
    return calls


@pytest.mark.cpu_only("row pieces on the CPU devices of one process run as one call on the whole batch "
                      "(plan._rows_batchable)")
@pytest.mark.parametrize("devices", [2, 3])
def test_an_op_on_row_pieces_runs_once_on_the_whole_batch(monkeypatch, devices):
    calls = _counting(monkeypatch, "sigmoid")
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((10, 4))) -> tp.Numpy:  # 10 rows: uneven pieces on 3 devices
        w = flow.get_variable("w", (4, 5), initializer=flow.constant_initializer(0.0))
        return flow.math.sigmoid(flow.matmul(x, w))

    r = np.random.default_rng(0)
    w = r.standard_normal((4, 5)).astype(np.float32)
    flow.load_variables({"w": w})
    x = r.standard_normal((10, 4)).astype(np.float32)
    got = job(x)
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-(x @ w))), rtol=1e-6)
    assert calls == [(10, 5)]  # one call, on every row: the matmul's pieces were rows of one array
    compiled = sess.default_session().compiled["job"]
    computing = [op.type for op, call in zip(compiled.plan.step_ops, compiled.plan.kernel_calls) if call is not None]
    assert computing == ["matmul", "sigmoid"]  # one step each (the fetch aside), not one per device


def test_pieces_of_several_arrays_run_device_by_device():
    regs = [np.arange(6.0).reshape(3, 2), np.arange(6.0, 10.0).reshape(2, 2), None, None]
    ran = []

    def device(i):
        def step():
            ran.append(i)
            regs[2 + i] = regs[i] * 2
        return step

    step = plan_mod._batched_step(regs, lambda x: x * 2, [device(0), device(1)], [[0, 1]], [True], [[2, 3]],
                                  [[(0, 3), (3, 5)]])
    step()
    assert ran == [0, 1]
    whole = np.arange(10.0).reshape(5, 2)
    regs[:2] = [whole[:3], whole[3:]]
    ran.clear()
    step()
    assert ran == []
    np.testing.assert_array_equal(regs[2], whole[:3] * 2)
    np.testing.assert_array_equal(regs[3], whole[3:] * 2)
    assert np.shares_memory(regs[2], regs[3]) is False and regs[2].base is regs[3].base  # rows of one result
