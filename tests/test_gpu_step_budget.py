"""What one training step costs on a GPU, counted on the fake device (tests/strict_device.py: CuPy's host/device
rules on numpy; every kernel launch counted as CuPy would make it, raw kernels run on their numpy twins).

Per step of the docs' LeNet (batch 100): at most 37 launches and one device -> host synchronisation, which is the
fetch of the loss (with the step's device checks) at the very end of the step, after the last launch; MLP at most 12
launches. The host uploads only the fed batch (one copy from pinned memory) and the step's one buffer of per-call
scalars (learning rate, dropout key). And the device steps equal the CPU steps: losses and every variable (dropout
masks included)."""
import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp
import strict_device
from cpu_reference import on_cpu

BATCH = 100


def lenet(data, train):
    init = flow.truncated_normal(0.1)
    conv1 = flow.layers.conv2d(data, 32, 5, padding="SAME", activation=flow.nn.relu, name="conv1",
                               kernel_initializer=init)
    pool1 = flow.nn.max_pool2d(conv1, ksize=2, strides=2, padding="SAME", name="pool1", data_format="NCHW")
    conv2 = flow.layers.conv2d(pool1, 64, 5, padding="SAME", activation=flow.nn.relu, name="conv2",
                               kernel_initializer=init)
    pool2 = flow.nn.max_pool2d(conv2, ksize=2, strides=2, padding="SAME", name="pool2", data_format="NCHW")
    reshape = flow.reshape(pool2, [pool2.shape[0], -1])
    hidden = flow.layers.dense(reshape, 512, activation=flow.nn.relu, kernel_initializer=init, name="dense1")
    if train:
        hidden = flow.nn.dropout(hidden, rate=0.5, name="dropout")
    return flow.layers.dense(hidden, 10, kernel_initializer=init, name="dense2")


def mlp(data, train):
    reshape = flow.reshape(data, [data.shape[0], -1])
    hidden = flow.layers.dense(reshape, 512, activation=flow.nn.relu, name="dense1",
                               kernel_initializer=flow.truncated_normal(0.1))
    return flow.layers.dense(hidden, 10, name="dense2", kernel_initializer=flow.truncated_normal(0.1))


def _batch(step):
    r = np.random.default_rng(step)
    return r.random((BATCH, 1, 28, 28), dtype=np.float32), r.integers(0, 10, BATCH).astype(np.int32)


def _steps(model, n, on_step=None, schedule=([1], [0.1, 0.05]), devices=1):
    flow.clear_default_session()
    flow.config.gpu_device_num(devices)

    @flow.global_function(type="train")
    def train(images: tp.Numpy.Placeholder((BATCH, 1, 28, 28)),
              labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, model(images, True))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler(*schedule), momentum=0).minimize(loss)
        return loss

    losses = []
    for s in range(n):
        losses.append(train(*_batch(s)))
        if on_step is not None:
            on_step(s)
    return losses, {k: v.numpy() for k, v in flow.get_all_variables().items()}


def _budget(monkeypatch, model):
    """(launches, uploads, synchronisations and where they happened) of each step after the first, and the run."""
    strict_device.install(monkeypatch, "gpu", allow_syncs=False, gpus=1)  # (a CUDA runtime: streams, pinned memory)
    L, S = strict_device.Launches, strict_device.Syncs
    marks = []

    def mark(step):
        marks.append((L.count, L.uploads, S.total(), list(S.at_launch)))

    mark(-1)
    run = _steps(model, 3, on_step=mark)
    per_step = []
    for (l0, u0, s0, _), (l1, u1, s1, at) in zip(marks[1:], marks[2:]):  # steps 2 and 3 (step 1 reads the counter)
        per_step.append(dict(launches=l1 - l0, uploads=u1 - u0, syncs=s1 - s0, sync_after=[a - l0 for a in
                                                                                          at[len(at) - (s1 - s0):]]))
    return per_step, run


@pytest.mark.parametrize("model, launches", [(lenet, 37), (mlp, 12)], ids=["lenet", "mlp"])
def test_a_step_stays_within_its_launch_budget_with_one_sync_at_its_end(monkeypatch, model, launches):
    with on_cpu():
        want = _steps(model, 3)  # CPU devices, whatever the suite runs on
    per_step, got = _budget(monkeypatch, model)
    for step in per_step:
        assert step["launches"] <= launches, step
        assert step["syncs"] == 1, step
        assert step["sync_after"] == [step["launches"]], step  # the loss comes down after the step's last launch
        # the fed images and labels in ONE copy from pinned memory (runtime/staged_feed.py), the step scalars
        assert step["uploads"] == 2, step
    for g, w in zip(got[0], want[0]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert sorted(got[1]) == sorted(want[1])
    for name, value in want[1].items():
        np.testing.assert_allclose(got[1][name], value, rtol=1e-5, atol=1e-6, err_msg=name)


def test_the_budgets_count_what_the_fused_kernels_replace(monkeypatch):
    """The counts are of the fused device path: one raw launch per dropout, per pooling, per loss, per update."""
    strict_device.install(monkeypatch, "gpu", allow_syncs=False)
    _steps(lenet, 2)
    by_name = strict_device.Launches.by_name
    assert by_name["raw:dropout_f32"] == 2 and by_name["raw:softmax_xent_f32_i32"] == 2
    assert by_name["raw:max_pool_f32"] == 4 and by_name["raw:max_pool_grad_f32"] == 4
    assert by_name["raw:im2col_f32"] == 4 and by_name["raw:col2im_f32"] == 2  # conv1 needs no input gradient
    # a weight gradient: one launch of its operands, one product summing the batch inside (no sum after it)
    assert by_name["raw:weight_grad_operands_f32"] == 4 and "ndarray.sum" not in by_name
    # relu's and dropout's gradients: one raw launch each, no comparison or products of CuPy's
    assert by_name["raw:relu_grad_f32"] == 2 and by_name["raw:dropout_grad_f32"] == 2
    assert "numpy.greater" not in by_name and "numpy.multiply" not in by_name
    # the 2 convolutions' weights: one update launch each per step; the 2 dense weights: none, their GEMM adds
    # -lr·g into the weight itself (cuBLAS's device pointer mode: alpha = -lr read from a step scalar); the 4
    # biases: their sums and updates in cuda_optim.bias_sgd's kernels (row sums for the 2 convolutions' (N, C, H·W)
    # gradients, then one column-sum-and-update launch per bias), no CuPy reduction at all
    assert by_name["raw:sgd_f32"] == 4 and by_name["raw:colsum_sgd_f32"] == 8 and by_name["raw:row_sums_f32"] == 4
    assert not any(name.endswith(".sum") or name.endswith(".mean") for name in by_name), by_name
    assert not any(name.startswith("numpy.right_shift") or name == "numpy.bitwise_xor" for name in by_name)


def test_a_bad_label_fails_at_the_steps_one_sync(monkeypatch):
    # the label check makes no synchronisation of its own: a step with a label out of range still makes exactly
    # one (its end's fetch, which brings the check's flag and label with the loss) and raises there, with the
    # CPU's words; the next step is not blamed
    images = _batch(0)[0]
    with on_cpu():
        with pytest.raises(ValueError) as on_host:
            _mlp_job()(images, np.full(BATCH, 10, np.int32))
    strict_device.install(monkeypatch, "gpu", allow_syncs=False)
    train, good = _mlp_job(), _batch(1)[1]
    bad = good.copy()
    bad[7] = 10
    train(images, good)  # the first call (reads the step counter once)
    syncs, errors = [], []
    for labels in (good, bad, good):
        before = strict_device.Syncs.total()
        try:
            train(images, labels)
        except ValueError as e:
            errors.append(str(e))
        syncs.append(strict_device.Syncs.total() - before)
    assert errors == [str(on_host.value)] == ["sparse_softmax_cross_entropy: label 10 is out of range [0, 10)"]
    assert syncs == [1, 1, 1]


def _mlp_job():
    flow.clear_default_session()
    flow.config.gpu_device_num(1)

    @flow.global_function(type="train")
    def train(images: tp.Numpy.Placeholder((BATCH, 1, 28, 28)),
              labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, mlp(images, True))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    return train


def test_the_fed_batch_goes_up_in_one_copy_into_fresh_device_arrays(monkeypatch):
    """runtime/staged_feed.py: a call's fed arrays written into one pinned buffer and copied up at once, into a new
    device allocation each call (what a call keeps is not overwritten by the next); the same values as each array
    copied up on its own (ONEFLOW_COMPAT_STAGED_FEED=0), which makes one copy per array."""
    from oneflow_compat.framework import session as sess

    def run(staged):
        monkeypatch.setenv("ONEFLOW_COMPAT_STAGED_FEED", "1" if staged else "0")
        strict_device.install(monkeypatch, "gpu", allow_syncs=False, gpus=1)
        train = _mlp_job()
        L = strict_device.Launches
        uploads, inputs, losses = [], [], []
        for s in range(3):
            u0 = L.uploads
            losses.append(train(*_batch(s)))
            uploads.append(L.uploads - u0)
            (exe,) = [c.exe for c in sess.default_session().compiled.values()]
            inputs.append(exe.staged)
        return uploads, losses, inputs[0]

    staged_uploads, staged_losses, staged = run(True)
    plain_uploads, plain_losses, plain = run(False)
    assert staged is not None and plain is None
    assert staged_uploads[1:] == [2, 2] and plain_uploads[1:] == [3, 3]  # (the first call reads the step counter)
    for a, b in zip(staged_losses, plain_losses):
        np.testing.assert_array_equal(a, b)


def test_a_staged_call_gives_each_call_its_own_device_arrays(monkeypatch):
    from oneflow_compat.runtime import staged_feed

    fake = strict_device.install(monkeypatch, "gpu", allow_syncs=True, gpus=1)
    feed = staged_feed.StagedFeed(fake)
    device_value = fake.asarray(np.ones(2, np.float32))
    objects = np.array([b"a", None], dtype=object)
    regs = {0: np.arange(6, dtype=np.float32).reshape(2, 3), 1: np.array([7, 8], np.int32), 2: device_value,
            3: objects, 4: np.zeros((0, 4), np.float64)}
    u0 = strict_device.Launches.uploads
    feed.upload(regs, [0, 1, 2, 3, 4])
    assert strict_device.Launches.uploads - u0 == 1
    first = regs[0]
    assert regs[2] is device_value and regs[3] is objects  # a device value and host objects as they were
    assert regs[0].get().tolist() == [[0, 1, 2], [3, 4, 5]] and regs[1].get().tolist() == [7, 8]
    assert regs[0].dtype == np.float32 and regs[1].dtype == np.int32 and regs[4].shape == (0, 4)
    regs[0] = np.full((2, 3), 9, np.float32)
    feed.upload(regs, [0])
    assert first.get().tolist() == [[0, 1, 2], [3, 4, 5]]  # the earlier call's array: untouched
    assert regs[0].get().tolist() == [[9, 9, 9]] * 2
    monkeypatch.setattr(staged_feed, "MAX_BYTES", 16)  # beyond it: array by array, as asarray does
    regs = {0: np.ones(8, np.float32), 1: np.zeros(2, np.int8)}
    u0 = strict_device.Launches.uploads
    feed.upload(regs, [0, 1])
    assert strict_device.Launches.uploads - u0 == 2 and regs[0].get().tolist() == [1.0] * 8
