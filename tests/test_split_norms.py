"""LARS's and LAMB's trust ratios on split (model-parallel) variables: the whole variable's norms summed over its
pieces (ops/split_norms.py), so a legacy job on 2 or 3 devices (even and uneven splits, either axis) trains as on
one device. The helper itself against numpy on 1-D placements and a 2 x 2 mesh (replicas along a broadcast axis
counted once). The global API's LAMB (eager and nn.Graph) on 2 MPI ranks: tests/test_optim_adaptive.py."""
import contextlib

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.placement import Placement
from oneflow_compat.ops import split_norms


def _pieces(whole, placement, sbp):
    """Each device's piece of `whole` under `sbp` (numpy slicing with the balanced-split rule)."""
    mesh = tuple(sbp.mesh) if type(sbp) is S.NdSbp else (placement.parallel_num,)
    symbols = tuple(sbp.sbps) if type(sbp) is S.NdSbp else (sbp,)
    out = []
    for p in range(placement.parallel_num):
        piece = whole
        for coord, size, s in zip(np.unravel_index(p, mesh), mesh, symbols):
            if S.is_split(s):
                piece = np.array_split(piece, size, axis=s.axis)[coord]
        out.append(piece)
    return out


@pytest.mark.parametrize("layout", ["S0 of 3", "S1 of 2", "S0,B on 2x2", "B,S1 on 2x2", "S0,S1 on 2x2"])
def test_whole_norms_equal_numpys_norm_of_the_whole(layout):
    rng = np.random.default_rng(0)
    w, d = rng.standard_normal((5, 7)), rng.standard_normal((5, 7))
    if layout == "S0 of 3":
        pl, sbp, counted = Placement("cpu", [(0, i) for i in range(3)]), S.S(0), [True] * 3
    elif layout == "S1 of 2":
        pl, sbp, counted = Placement("cpu", [(0, 0), (0, 1)]), S.S(1), [True] * 2
    else:
        pl = Placement("cpu", [(0, i) for i in range(4)], hierarchy=(2, 2))
        symbols = {"S0,B on 2x2": (S.S(0), S.B), "B,S1 on 2x2": (S.B, S.S(1)), "S0,S1 on 2x2": (S.S(0), S.S(1))}
        sbp = S.nd(symbols[layout], (2, 2))
        counted = {"S0,B on 2x2": [True, False, True, False], "B,S1 on 2x2": [True, True, False, False],
                   "S0,S1 on 2x2": [True] * 4}[layout]
    assert split_norms.counted_devices(pl, sbp) == counted
    assert split_norms.is_split_over_devices(pl, sbp)
    arrays = [list(pair) for pair in zip(_pieces(w, pl, sbp), _pieces(d, pl, sbp))]
    got = split_norms.whole_norms(None, pl, sbp, list(range(pl.parallel_num)), arrays)
    np.testing.assert_allclose(got, [np.linalg.norm(w), np.linalg.norm(d)], rtol=1e-14)


def _trained(devices, optimizer, model, scope=contextlib.nullcontext, steps=4):
    """Losses and variables after `steps` legacy train steps of the loss mean(y^2 + y/2), y = `model(x)` built
    inside `scope()`, on `devices` CPU devices."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((6, 5))) -> tp.Numpy:
        with scope():
            y = model(x)
            loss = flow.math.reduce_mean(y * y + 0.5 * y)
            optimizer().minimize(loss)
        return loss

    x = np.cos(np.arange(30, dtype=np.float32)).reshape(6, 5)
    losses = [float(np.asarray(train(x)).reshape(-1)[0]) for _ in range(steps)]
    return np.array(losses), {k: v.numpy() for k, v in flow.get_all_variables().items()}


def _legacy_run(devices, axis, optimizer):
    dist = flow.distribute.split(axis) if axis is not None else flow.distribute.broadcast()

    def model(x):
        w = flow.get_variable("w", shape=(5, 7), initializer=flow.random_normal_initializer(), distribute=dist)
        b = flow.get_variable("b", shape=(7,), initializer=flow.constant_initializer(0.1))
        return flow.matmul(x, w) + b
    return _trained(devices, optimizer, model)


OPTIMIZERS = {
    "LAMB": lambda: flow.optimizer.LAMB(flow.optimizer.PiecewiseConstantScheduler([], [0.05]), weight_decay=0.01),
    "LARS": lambda: flow.optimizer.LARS(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum_beta=0.9,
                                        lars_coefficient=0.05, weight_decay=0.001),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("devices,axis", [(2, 0), (2, 1), (3, 1)], ids=["2dev-S0", "2dev-S1", "3dev-S1-uneven"])
def test_legacy_split_variable_trains_as_on_one_device(name, devices, axis, monkeypatch):
    monkeypatch.setenv("ONEFLOW_COMPAT_SEED", "5")  # the same initial values in every session
    calls = []
    whole_norms = split_norms.whole_norms
    monkeypatch.setattr(split_norms, "whole_norms", lambda *a: calls.append(a[1]) or whole_norms(*a))
    one_losses, one = _legacy_run(1, None, OPTIMIZERS[name])
    assert not calls  # one device: the plain update reads its own norms
    losses, many = _legacy_run(devices, axis, OPTIMIZERS[name])
    assert len(calls) == 4 and all(pl.parallel_num == devices for pl in calls)  # once per step, the split `w`
    assert one_losses[-1] < one_losses[0]
    np.testing.assert_allclose(losses, one_losses, rtol=2e-6)
    for k in one:
        np.testing.assert_allclose(many[k], one[k], rtol=2e-6, atol=1e-7, err_msg=k)


def _mesh_run(devices, hierarchy, optimizer):
    def dist(*entries):
        return list(entries) if hierarchy is not None else []

    def model(x):
        # replicas along one mesh axis each: their pieces count once in the norms (a common factor would cancel in
        # the trust ratios: test_whole_norms_equal_numpys_norm_of_the_whole checks the counting)
        w = flow.get_variable("w", shape=(5, 7), initializer=flow.random_normal_initializer(),
                              parallel_distribution=dist("B", "S(1)"))
        v = flow.get_variable("v", shape=(6, 7), initializer=flow.random_normal_initializer(),
                              parallel_distribution=dist("S(0)", "B"))
        return flow.matmul(x, w) + v
    return _trained(devices, optimizer, model,
                    lambda: flow.scope.placement("cpu", "0:0-%d" % (devices - 1), hierarchy))


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_legacy_variables_split_on_a_2x2_mesh_train_as_on_one_device(name, monkeypatch):
    monkeypatch.setenv("ONEFLOW_COMPAT_SEED", "6")
    calls = []
    whole_norms = split_norms.whole_norms
    monkeypatch.setattr(split_norms, "whole_norms", lambda *a: calls.append(a[2]) or whole_norms(*a))
    one_losses, one = _mesh_run(1, None, OPTIMIZERS[name])
    losses, mesh = _mesh_run(4, (2, 2), OPTIMIZERS[name])
    assert len(calls) == 8 and {repr(s) for s in calls} == {"(B, S(1))", "(S(0), B)"}, calls
    assert one_losses[-1] < one_losses[0]
    np.testing.assert_allclose(losses, one_losses, rtol=2e-6)
    for k in one:
        np.testing.assert_allclose(mesh[k], one[k], rtol=2e-6, atol=1e-7, err_msg=k)
