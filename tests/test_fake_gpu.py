"""Real jobs with "gpu" placements on the strict fake device (tests/strict_device.py: CuPy's host/device rules on
numpy), compared with the same jobs on CPU devices: legacy train and predict jobs (convolution, pooling, dropout),
moves between gpu and cpu placements, eager mode, global tensors, checkpoints and the data-pipeline ops."""
import os
from typing import Tuple

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp
import strict_device
from cpu_reference import on_cpu
from oneflow_compat._api import data_api as D
from oneflow_compat.core.record import record_pb2 as pb
from oneflow_compat.datasets import ofrecord_io
from oneflow_compat.framework import session as sess
from oneflow_compat.runtime.plan import Plan

BATCH = 8


def _batch(step):
    rng = np.random.default_rng(100 + step)
    return rng.standard_normal((BATCH, 1, 8, 8)).astype(np.float32), rng.integers(0, 5, BATCH).astype(np.int32)


def _net(images, train):
    init = flow.truncated_normal(0.1)
    conv = flow.layers.conv2d(images, 4, 3, padding="SAME", activation=flow.nn.relu, name="conv1",
                              kernel_initializer=init)
    pool = flow.nn.max_pool2d(conv, ksize=2, strides=2, padding="SAME", name="pool1", data_format="NCHW")
    flat = flow.reshape(pool, [pool.shape[0], -1])
    hidden = flow.layers.dense(flat, 16, activation=flow.nn.relu, kernel_initializer=init, name="dense1")
    if train:
        hidden = flow.nn.dropout(hidden, rate=0.5, name="dropout")
    return flow.layers.dense(hidden, 5, kernel_initializer=init, name="dense2")


def _train_and_predict(optimizer=None, steps=3):
    """Losses of `steps` train calls, the predictions after them and every variable, on the default placement."""
    flow.clear_default_session()
    flow.config.gpu_device_num(1)
    optimizer = optimizer or (lambda: flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]),
                                                         momentum=0.9))

    @flow.global_function(type="train")
    def train(images: tp.Numpy.Placeholder((BATCH, 1, 8, 8)),
              labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, _net(images, True), name="loss")
        optimizer().minimize(loss)
        return loss

    @flow.global_function(type="predict")
    def predict(images: tp.Numpy.Placeholder((BATCH, 1, 8, 8))) -> tp.Numpy:
        return _net(images, False)

    losses = [train(*_batch(s)) for s in range(steps)]
    predictions = predict(_batch(99)[0])
    weights = {k: v.numpy() for k, v in flow.get_all_variables().items()}
    return losses, predictions, weights


def _assert_same_run(got, want, rtol=1e-6):
    for g, w in zip(got[0], want[0]):
        assert type(g) is np.ndarray
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-7)
    assert type(got[1]) is np.ndarray
    np.testing.assert_allclose(got[1], want[1], rtol=rtol, atol=1e-7)
    assert sorted(got[2]) == sorted(want[2])
    for name, value in want[2].items():
        assert type(got[2][name]) is np.ndarray, name
        np.testing.assert_allclose(got[2][name], value, rtol=rtol, atol=1e-7, err_msg=name)


def test_legacy_train_and_predict_on_the_device_equal_cpu(monkeypatch):
    with on_cpu():
        want = _train_and_predict()  # CPU devices, whatever the suite runs on
    strict_device.install(monkeypatch, "auto", allow_syncs=True)
    got = _train_and_predict()
    assert sess.default_session().jobs["train"].default_placement.device_tag == "gpu"
    _assert_same_run(got, want)  # dropout masks drawn on the device equal the host's: same losses


def test_moves_between_gpu_and_cpu_placements_copy_the_pieces(monkeypatch):
    strict_device.install(monkeypatch, "auto")
    monkeypatch.setattr(Plan, "release", False)
    flow.config.gpu_device_num(2)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))) -> Tuple[tp.Numpy, tp.Numpy]:
        with flow.scope.placement("gpu", "0:0-1"):
            a = flow.math.relu(flow.identity(x, name="on_gpu"))
        with flow.scope.placement("cpu", "0:0"):
            b = flow.math.square(a, name="on_cpu")
        with flow.scope.placement("gpu", "0:1"):
            c = flow.math.negative(b, name="back_on_gpu")
        return b, c

    x = np.arange(-6, 6, dtype=np.float32).reshape(4, 3)
    b, c = job(x)
    np.testing.assert_array_equal(b, np.maximum(x, 0) ** 2)
    np.testing.assert_array_equal(c, -np.maximum(x, 0) ** 2)
    session = sess.default_session()
    compiled, ops = session.compiled["job"], session.jobs["job"].op_names

    def held(name):
        op = ops[name]
        return [compiled.plan.regs[compiled.plan.slot[(y.key(), i)]] for y in op.inputs + op.outputs
                for i in session.runtime.local_indices(op.placement) if (y.key(), i) in compiled.plan.slot]

    assert all(type(v) is np.ndarray for v in held("on_cpu"))  # its input came down from the device
    assert all(isinstance(v, strict_device.StrictArray) for v in held("on_gpu") + held("back_on_gpu"))


def test_eager_mode_moves_inputs_up_and_results_down(monkeypatch):
    def run():
        flow.clear_default_session()
        flow.enable_eager_execution()
        watched = []

        @flow.global_function(type="train")
        def train(x: tp.Numpy.Placeholder((4, 3)), y: tp.Numpy.Placeholder((4,), dtype=flow.int32)) -> tp.Numpy:
            with flow.scope.placement("gpu", "0:0"):
                logits = flow.layers.dense(x, 5, kernel_initializer=flow.constant_initializer(0.25), name="d")
                flow.watch(logits, lambda blob: watched.append(blob.numpy()))
                loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
            with flow.scope.placement("cpu", "0:0"):
                doubled = loss * 2.0  # a cpu op after gpu ones: no boxing in eager mode
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum=0).minimize(loss)
            return doubled

        x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
        y = np.array([0, 1, 2, 3], np.int32)
        out = [train(x, y) for _ in range(2)]
        return out, watched

    with on_cpu():
        want, want_watched = run()
    strict_device.install(monkeypatch, "auto", allow_syncs=True)
    got, got_watched = run()
    for g, w in zip(got + got_watched, want + want_watched):
        assert type(g) is np.ndarray
        np.testing.assert_allclose(g, w, rtol=1e-6)
    assert not np.allclose(got[0], got[1])  # the update ran between the calls


def test_global_tensors_on_cuda_come_back_as_numpy(monkeypatch):
    def run():
        placement = flow.placement("cuda", [0])
        w = flow.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2), placement=placement,
                        sbp=flow.sbp.broadcast, requires_grad=True)
        x = flow.tensor(np.arange(12, dtype=np.float32).reshape(4, 3), placement=placement, sbp=flow.sbp.split(0))
        loss = flow.matmul(x, w).relu().sum()
        loss.backward()
        return loss.numpy(), w.grad.numpy(), flow.matmul(x, w).numpy()

    with on_cpu():
        want = run()
    strict_device.install(monkeypatch, "auto", allow_syncs=True)
    got = run()
    for g, w in zip(got, want):
        assert type(g) is np.ndarray
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_checkpoint_of_device_variables_saves_and_loads(monkeypatch, tmp_path):
    def trained(folder):
        flow.clear_default_session()
        flow.config.gpu_device_num(2)

        @flow.global_function(type="train")
        def train(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
            w = flow.get_variable("w", (3, 2), initializer=flow.random_normal_initializer(),
                                  distribute=flow.distribute.split(1))
            loss = flow.math.reduce_mean(flow.math.square(flow.matmul(x, w)))
            flow.optimizer.Adam(flow.optimizer.PiecewiseConstantScheduler([], [0.1])).minimize(loss)
            return loss

        train(np.ones((4, 3), np.float32))
        flow.checkpoint.save(str(folder))
        return {k: v.numpy() for k, v in flow.get_all_variables().items()}

    with on_cpu():
        want = trained(tmp_path / "cpu")
    strict_device.install(monkeypatch, "auto", allow_syncs=True)
    got = trained(tmp_path / "gpu")
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-6, err_msg=name)
        for f in os.listdir(tmp_path / "cpu" / name):
            assert (tmp_path / "gpu" / name / f).read_bytes() == (tmp_path / "cpu" / name / f).read_bytes()

    flow.clear_default_session()
    flow.config.gpu_device_num(2)

    @flow.global_function()
    def read() -> tp.Numpy:
        return flow.get_variable("w", (3, 2), initializer=flow.zeros_initializer(),
                                 distribute=flow.distribute.split(1))

    flow.load_variables(flow.checkpoint.get(str(tmp_path / "gpu")))
    assert isinstance(next(iter(flow.get_all_variables().values())), object)
    np.testing.assert_array_equal(read(), want["w"])


def _record(image, label):
    return pb.OFRecord(feature={"images": pb.Feature(bytes_list=pb.BytesList(value=[image.tobytes()])),
                                "shape": pb.Feature(int32_list=pb.Int32List(value=list(image.shape))),
                                "labels": pb.Feature(int32_list=pb.Int32List(value=[label]))})


def test_data_pipeline_on_gpu_placements_equals_cpu(monkeypatch, tmp_path):
    pytest.importorskip("PIL")
    from PIL import Image
    import io

    rng = np.random.default_rng(5)
    records = []
    for i in range(4):
        pixels = rng.integers(0, 256, (6 + i, 7, 3)).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(pixels).save(buf, format="PNG")
        records.append(pb.OFRecord(feature={"images": pb.Feature(bytes_list=pb.BytesList(value=[buf.getvalue()])),
                                            "labels": pb.Feature(int32_list=pb.Int32List(value=[i]))}))
    ofrecord_io.write_part(str(tmp_path / "part-0"), records)

    def run():
        flow.clear_default_session()

        @flow.global_function(type="predict")
        def pipeline() -> Tuple[tp.Numpy, tp.Numpy, tp.Numpy]:
            with flow.scope.placement("gpu", "0:0"):
                rec = D.ofrecord_reader(str(tmp_path), batch_size=4)
                decoded = D.OFRecordImageDecoder(rec, "images", color_space="RGB")
                labels = D.OFRecordRawDecoder(rec, "labels", shape=(), dtype=flow.int32)
                flips = D.CoinFlip(batch_size=4, seed=3, probability=0.5)
                # tensor-buffer images mirrored by the device flags
                normal = D.CropMirrorNormalize(decoded, mirror_blob=flips, color_space="RGB", crop_h=4, crop_w=5,
                                               mean=[10.0, 20.0, 30.0], std=[2.0, 3.0, 4.0])
            return labels, flips, normal

        return [pipeline() for _ in range(2)]

    with on_cpu():
        want = run()
    strict_device.install(monkeypatch, "auto")
    got = run()
    assert any(w[1].any() for w in want) and not all(w[1].all() for w in want)  # some images are mirrored
    for g_call, w_call in zip(got, want):
        for g, w in zip(g_call, w_call):
            assert type(g) is np.ndarray
            np.testing.assert_array_equal(g, w)


def test_copy_from_a_device_tensor_into_a_host_tensor(monkeypatch):
    strict_device.install(monkeypatch, "auto")
    host = flow.zeros(2, 3)
    device = flow.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device="cuda")
    assert isinstance(device._value.pieces[0], strict_device.StrictArray)
    host.copy_(device)
    assert type(host._value.pieces[0]) is np.ndarray
    np.testing.assert_array_equal(host.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))


def test_amp_in_a_graph_on_the_device_computes_the_matmul_in_float16(monkeypatch):
    # OneFlow's AMP pass casts the ops of CUDA placements to float16 (tests/test_graph_amp.py has the whole of it);
    # on the CPU (test_graph.py) the graph computes as without it
    strict_device.install(monkeypatch, "auto", allow_syncs=True)
    model = flow.nn.Linear(3, 2).to("cuda")

    class Step(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.config.enable_amp(True)

        def build(self, x):
            return self.model(x)

    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3) / 3
    y = Step()(flow.tensor(x).to("cuda"))
    assert y.dtype == flow.float32 and model.weight.dtype == flow.float32
    w, b = model.weight.numpy(), model.bias.numpy()
    # the product of float16 operands, rounded to float16 (a device may sum it in another order: one float16
    # step); the bias added in float32 (no white op follows it)
    product = (x.astype(np.float16).astype(np.float32) @ w.astype(np.float16).astype(np.float32).T).astype(np.float16)
    got = y.numpy() - b
    np.testing.assert_allclose(got, got.astype(np.float16).astype(np.float32), rtol=0, atol=1e-6)
    assert np.all(np.abs(got - product.astype(np.float32)) <= np.spacing(np.abs(product)).astype(np.float32) + 1e-7)


def test_a_device_check_left_unread_does_not_outlive_the_process_context(monkeypatch):
    """A failed device-side check nobody fetched (a test that never read its device result back) is dropped with
    the process context, so it cannot fail the next test's first fetch (the first GPU run: a gather's "negative
    index -1" from one test raised in another)."""
    from oneflow_compat.kernels import checks
    from oneflow_compat.runtime import context

    fake = strict_device.install(monkeypatch, "gpu")
    checks.require(fake, fake.asarray(np.array(True)), "gather: negative index %d", fake.asarray(np.array(-1)))
    context.reset()
    checks.raise_failed()  # nothing pending: no error
    checks.require(fake, fake.asarray(np.array(True)), "gather: negative index %d", fake.asarray(np.array(-1)))
    with pytest.raises(ValueError, match="^gather: negative index -1$"):
        checks.raise_failed()


def test_the_fake_refuses_what_cupy_lacks_and_adds_at_in_atomic_order():
    """CuPy's rules the first GPU run met, kept by the fake: no `multiply.at`, no `flags.writeable`, and `add.at`
    of floats summing in an order that changes from call to call (CuPy's atomics); integer sums stay exact."""
    fake = strict_device.module()
    with pytest.raises(NotImplementedError, match="^`cupy_multiply.at` is not supported yet$"):
        fake.multiply.at(fake.ones(3), fake.asarray(np.array([0, 0])), fake.asarray(np.array([2.0, 3.0])))
    a = fake.ones((2, 3))
    assert a.flags.c_contiguous and a.flags["C_CONTIGUOUS"] and not hasattr(a.flags, "writeable")
    rng = np.random.default_rng(0)
    positions, values = rng.integers(0, 4, 2000), rng.standard_normal(2000) * 1e3
    want = np.zeros(4)
    np.add.at(want, positions, values)
    runs = []
    for _ in range(4):
        got = fake.zeros(4)
        fake.add.at(got, fake.asarray(positions), fake.asarray(values))
        runs.append(got.get())
        np.testing.assert_allclose(runs[-1], want, rtol=1e-12)
    assert any(not np.array_equal(r, runs[0]) for r in runs[1:])  # the last bits differ between calls
    ints = fake.zeros(4, dtype=np.int64)
    fake.add.at(ints, fake.asarray(positions), fake.asarray(np.arange(2000)))
    want_ints = np.zeros(4, np.int64)
    np.add.at(want_ints, positions, np.arange(2000))
    np.testing.assert_array_equal(ints.get(), want_ints)
