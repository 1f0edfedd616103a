"""No device -> host synchronisation inside a train step: with every optimizer, a changing learning rate, dynamic
loss scaling and clipping, a step on the strict fake device (which refuses float()/int()/bool() of device arrays)
runs and equals the CPU step; after the first call a step reads back its results and the flags of its device-side
checks in one transfer. Label checks on a device raise with the step's results."""
import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp
import strict_device
from cpu_reference import on_cpu
from oneflow_compat.kernels import checks
from oneflow_compat.kernels import optim as optim_k
from oneflow_compat.optimizer import loss_scale

BATCH, IN, CLASSES = 6, 5, 4


def _schedule():
    return flow.optimizer.PiecewiseConstantScheduler([1, 2], [0.1, 0.05, 0.02])  # the step counter matters


OPTIMIZERS = {
    "sgd": lambda: flow.optimizer.SGD(_schedule(), momentum=0),
    "momentum": lambda: flow.optimizer.SGD(_schedule(), momentum=0.9),
    "sgdw": lambda: flow.optimizer.SGDW(_schedule(), momentum=0.9, weight_decay=0.01),
    "adam": lambda: flow.optimizer.Adam(_schedule(), do_bias_correction=True),
    "adamw": lambda: flow.optimizer.AdamW(_schedule(), do_bias_correction=True, weight_decay=0.01),
    "lazy_adam": lambda: flow.optimizer.LazyAdam(_schedule()),
    "rmsprop": lambda: flow.optimizer.RMSProp(_schedule()),
    "rmsprop_centered": lambda: flow.optimizer.RMSProp(_schedule(), centered=True),
    "lars": lambda: flow.optimizer.LARS(_schedule(), weight_decay=0.01),
    "lamb": lambda: flow.optimizer.LAMB(_schedule(), weight_decay=0.01),
    "clipped_dynamic_scale": lambda: flow.optimizer.SGD(
        _schedule(), momentum=0.9, grad_clipping=flow.optimizer.grad_clipping.by_global_norm(0.5),
        loss_scale_policy=flow.optimizer.loss_scale.dynamic_loss_scale(initial_loss_scale=2.0 ** 10,
                                                                      increment_period=2)),
}


def _batch(step):
    rng = np.random.default_rng(step)
    return rng.standard_normal((BATCH, IN)).astype(np.float32), rng.integers(0, CLASSES, BATCH).astype(np.int32)


def _train(make_optimizer, steps=4, labels=None, on_step=None):
    flow.clear_default_session()
    flow.config.gpu_device_num(1)

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((BATCH, IN)), y: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        init = flow.random_normal_initializer(stddev=0.5)
        hidden = flow.layers.dense(x, 8, activation=flow.nn.relu, kernel_initializer=init, name="h")
        logits = flow.layers.dense(flow.nn.dropout(hidden, rate=0.25), CLASSES, kernel_initializer=init, name="o")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
        make_optimizer().minimize(loss)
        return loss

    losses = []
    for s in range(steps):
        x, y = _batch(s)
        losses.append(train(x, y if labels is None else labels))
        if on_step is not None:
            on_step(s)
    return losses, {k: v.numpy() for k, v in flow.get_all_variables().items()}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_train_steps_make_no_implicit_synchronisation(monkeypatch, name):
    with on_cpu():
        want = _train(OPTIMIZERS[name])
    strict_device.install(monkeypatch, "gpu", allow_syncs=False)  # float()/int()/bool() of device arrays raise
    gets = []
    got = _train(OPTIMIZERS[name], on_step=lambda s: gets.append(strict_device.Syncs.gets))
    # after the first call (which reads the step counter's value once): the loss and the checks' flags come down
    # together at the step's end, one transfer
    assert [b - a for a, b in zip(gets, gets[1:])] == [1, 1, 1]
    for g, w in zip(got[0], want[0]):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-7)
    assert sorted(got[1]) == sorted(want[1])
    for variable, value in want[1].items():
        np.testing.assert_allclose(got[1][variable], value, rtol=2e-6, atol=1e-7, err_msg=variable)


@pytest.mark.filterwarnings("ignore:overflow encountered", "ignore:invalid value encountered")
def test_an_overflowing_step_is_skipped_on_the_device(monkeypatch):
    def run():
        flow.clear_default_session()
        flow.config.gpu_device_num(1)
        policy = flow.optimizer.loss_scale.dynamic_loss_scale(initial_loss_scale=2.0 ** 127, increment_period=1)

        @flow.global_function(type="train")
        def train(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
            w = flow.get_variable("w", (3, 1), initializer=flow.constant_initializer(0.5))
            loss = flow.math.reduce_sum(flow.matmul(x, w))
            flow.optimizer.Adam(_schedule(), loss_scale_policy=policy).minimize(loss)
            return loss

        x = np.ones((2, 3), np.float32)
        train(x)  # the scaled gradient 2 * 2**127 overflows float32: the update is skipped
        return {k: v.numpy() for k, v in flow.get_all_variables().items()}

    with on_cpu():
        want = run()
    strict_device.install(monkeypatch, "gpu")
    got = run()
    np.testing.assert_array_equal(got["w"], np.full((3, 1), 0.5, np.float32))  # not updated
    assert sorted(got) == sorted(want)
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    assert got["System-Train-DynamicLossScale-train-LossScale"] == np.float32(2.0 ** 126)


def test_loss_scale_kernel_follows_the_policy():
    policy = loss_scale.dynamic_loss_scale(initial_loss_scale=2.0 ** 126, increment_period=3, multiplier=3.0)
    xp = strict_device.module()
    scale0, good0 = policy.initial_state()
    scale, good = xp.asarray([scale0], dtype=np.float32), xp.asarray([good0], dtype=np.int64)
    state = (scale0, good0)
    pattern = [True] * 7 + [False] * 3 + [True, False] * 3 + [False] * 90 + [True] * 5
    for finite in pattern:
        optim_k.loss_scale_update(xp, scale, good, xp.asarray([0.0 if finite else 2.0], dtype=np.float32),
                                  multiplier=policy.multiplier, increment_period=policy.increment_period)
        state = policy.next_state(state[0], state[1], finite)[:2]
        assert (scale.get()[0], good.get()[0]) == (np.float32(state[0]), state[1])
    assert state == (3.0, 2) and scale.dtype == np.float32 and good.dtype == np.int64  # clipped at max, down to 1


def test_out_of_range_label_on_the_device_raises_with_the_results(monkeypatch):
    strict_device.install(monkeypatch, "gpu")
    bad = np.array([0, 1, 2, 3, 9, 1], np.int32)
    with pytest.raises(ValueError) as e:
        _train(OPTIMIZERS["sgd"], steps=1, labels=bad)
    assert str(e.value) == "sparse_softmax_cross_entropy: label 9 is out of range [0, 4)"
    checks.raise_failed()  # nothing left pending for the next step
    flow.clear_default_session()
    losses, _ = _train(OPTIMIZERS["sgd"], steps=1)  # a later job is not blamed
    assert np.all(np.isfinite(losses[0]))


def test_a_fresh_context_forgets_the_device_checks_left_pending(monkeypatch):
    # the first GPU run: a kernel test left 'gather: negative index -1' pending (it never read its results), and the
    # next test's job, on the same worker, raised it (tests/test_session.py)
    from oneflow_compat.runtime import context

    fake = strict_device.install(monkeypatch, "gpu")
    checks.require(fake, fake.asarray(True), "gather: negative index %d", fake.asarray(-1))
    context.reset()

    @flow.global_function()
    def add_one(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        return x + 1

    np.testing.assert_allclose(add_one(np.ones(2, np.float32)), [2, 2])


def test_host_checks_raise_at_once_and_device_checks_once_read():
    with pytest.raises(ValueError, match="^bad -3$"):
        checks.require(np, np.bool_(True), "bad %d", np.array(-3))
    checks.require(np, np.bool_(False), "never %d", 1)
    xp = strict_device.module()
    checks.require(xp, xp.asarray(False), "first %d", xp.asarray(1))
    checks.require(xp, xp.asarray(True), "second %d of %d", xp.asarray(7), 8)
    checks.require(xp, xp.asarray(True), "third %d", 3)
    before = strict_device.Syncs.gets
    with pytest.raises(ValueError, match=r"^second 7 of 8$"):
        checks.raise_failed()
    assert strict_device.Syncs.gets - before == 1  # the flags and the values that name a failure: one transfer
    checks.raise_failed()  # all forgotten


@pytest.mark.parametrize("on_device", [False, True])
def test_the_host_copy_of_the_step_follows_host_writes(monkeypatch, on_device):
    # w ← w − lr(t)·(g + wd·w) with g = 2: each call's w tells which step t the update used
    if on_device:
        strict_device.install(monkeypatch, "gpu")
    flow.config.gpu_device_num(2)

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        w = flow.get_variable("w", (3, 1), initializer=flow.constant_initializer(1.0))
        loss = flow.math.reduce_sum(flow.matmul(x, w))
        flow.optimizer.SGDW(_schedule(), momentum=0, weight_decay=0.5).minimize(loss)
        return loss

    def call():
        train(np.ones((2, 3), np.float32))
        return float(flow.get_all_variables()["w"].numpy()[0, 0])

    step = "System-Train-TrainStep-train"
    got = [call() for _ in range(4)]
    flow.load_variables({step: np.array([0], np.int64)})  # a host write: the host copy is read again
    got.append(call())
    flow.load_variables({step: np.array([1], np.int64)})
    got += [call(), call()]
    w, want = 1.0, []
    for t in [0, 1, 2, 3, 0, 1, 2]:
        w -= _schedule().lr_at(t) * (2.0 + 0.5 * w)
        want.append(w)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert len({_schedule().lr_at(t) for t in range(4)}) == 3  # the steps are told apart
    assert int(flow.get_all_variables()[step].numpy()[0]) == 3


_INDEX_OPS = {
    "gather": (lambda m, k: k.indexing.gather(m, m.asarray(np.ones((4, 3), np.float32)),
                                              m.asarray(np.array([1, -1, 2])), axis=0),
               "^gather: negative index -1$", ValueError),
    "batch_gather": (lambda m, k: k.indexing.batch_gather(m, m.asarray(np.ones((2, 5, 3), np.float32)),
                                                          m.asarray(np.array([[1, 5], [0, 2]]))),
                     r"^batch_gather: indices must lie in \[0, 5\)$", ValueError),
    "one_hot": (lambda m, k: k.shape.one_hot(m, m.asarray(np.array([0, 3, 7])), depth=4),
                r"^one_hot: index 7 out of range \[0, 4\)$", ValueError),
    "dim_gather": (lambda m, k: k.nd_index.dim_gather(m, m.asarray(np.ones((2, 3), np.float32)),
                                                      m.asarray(np.array([[0, 3, 1], [2, 2, 2]])), dim=1),
                   r"^dim_gather: index out of range \[0, 3\) along dim 1$", IndexError),
    "gather_nd": (lambda m, k: k.nd_index.gather_nd(m, m.asarray(np.ones((3, 4), np.float32)),
                                                    m.asarray(np.array([[0, 1], [2, 4]]))),
                  r"^gather_nd: index \(2, 4\) out of range for the leading dims \(3, 4\)$", IndexError),
    "unsorted_segment_sum": (lambda m, k: k.nd_index.unsorted_segment_sum(
        m, m.asarray(np.ones((3, 2), np.float32)), m.asarray(np.array([0, -2, 1])), axis=0, num_segments=2),
        "^unsorted_segment_sum: negative segment id -2$", ValueError),
    "scatter": (lambda m, k: k.tensor_ops.dim_scatter_add(m, m.asarray(np.zeros((2, 3), np.float32)),
                                                          m.asarray(np.array([[0, 5]])),
                                                          m.asarray(np.ones((1, 2), np.float32)), dim=1),
                r"^scatter: index 5 is out of bounds for dimension 1 with size 3$", IndexError),
    "sparse_softmax_cross_entropy": (lambda m, k: k.loss.sparse_softmax_cross_entropy(
        m, m.asarray(np.zeros((3, 4), np.float32)), m.asarray(np.array([0, 4, 1], np.int32)))[0],
        r"^sparse_softmax_cross_entropy: label 4 is out of range \[0, 4\)$", ValueError),
    "ctc_loss": (lambda m, k: k.ctc.ctc_loss(
        m, m.asarray(np.full((5, 2, 3), -1.0, np.float32)), m.asarray(np.array([[1, 2], [1, 1]])),
        m.asarray(np.array([6, 5])), m.asarray(np.array([2, 2])), blank=0, max_target_length=2)[0],
        r"^ctc_loss: input_lengths \[6, 5\] must lie in \[0, 5\] \(the length of log_probs\)$", ValueError),
    "ctc_greedy_decoder": (lambda m, k: k.ctc.ctc_greedy_decoder(
        m, m.asarray(np.zeros((4, 2, 3), np.float32)), m.asarray(np.array([4, -1])))[0],
        r"^ctc_greedy_decoder: input_lengths \[4, -1\] must lie in \[0, 4\] \(the length of log_probs\)$",
        ValueError),
}


@pytest.mark.parametrize("op", sorted(_INDEX_OPS))
def test_index_ops_on_a_device_check_their_indices_without_waiting(monkeypatch, op):
    # the host raises at once; on a device the op makes no synchronisation (int()/bool() of device arrays raise and
    # no explicit transfer is counted) and its output's fetch — one transfer, the check's flag and values with the
    # output — raises what the host raised, with the same type and words; the check is then forgotten
    import types

    from oneflow_compat.backend import devices
    from oneflow_compat.kernels import ctc, indexing, loss, nd_index, shape, tensor_ops

    kernels = types.SimpleNamespace(indexing=indexing, nd_index=nd_index, shape=shape, tensor_ops=tensor_ops,
                                    loss=loss, ctc=ctc)
    run, message, error = _INDEX_OPS[op]
    with pytest.raises(error, match=message) as on_host:
        run(np, kernels)  # the host raises at once
    fake = strict_device.install(monkeypatch, "gpu")
    before = strict_device.Syncs.total()
    out = run(fake, kernels)
    assert isinstance(out, strict_device.StrictArray)
    assert strict_device.Syncs.total() == before  # 0 synchronisations from the index op
    with pytest.raises(error, match=message) as on_device:
        devices.to_host(out)  # the fetch
    assert str(on_device.value) == str(on_host.value)
    assert strict_device.Syncs.total() == before + 1  # the output, the flag and the named index: one transfer
    assert checks.pending_count() == 0
    devices.to_host(out)  # raised once: the next fetch is not blamed
    assert strict_device.Syncs.total() == before + 2
