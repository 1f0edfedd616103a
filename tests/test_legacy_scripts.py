"""The API usage patterns of the legacy OneFlow documentation scripts (oneflow-documentation v0.4.0 and older,
en/cn `docs/code/{quick_start,basics_topics,extended_topics}`; inventory in legacy-api.md §1.1), each in a small
inline job written here. The scripts themselves are not part of this repository.

Every numeric check compares with a numpy re-computation of the same model from the variables' values."""
import os
from typing import Tuple

import numpy as np
import pytest

import oneflow as flow  # the scripts' spelling: must resolve to oneflow_compat
import oneflow.typing as tp
import oneflow_compat

B = 10  # batch; images are (B, 1, 4, 4) so the "MLP on MNIST" jobs stay tiny


# ---------------------------------------------------------------------------------------------------------------
# numpy references


def _softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _sparse_ce(logits, labels):
    p = _softmax(logits.astype(np.float64))
    return -np.log(p[np.arange(len(labels)), labels])


def _dense(x, w, b, relu=False):
    y = x.reshape(len(x), -1) @ w.T + b
    return np.maximum(y, 0) if relu else y


def _variables():
    return {name: v.numpy() for name, v in flow.get_all_variables().items()}


def _mlp_logits(values, x, names=("dense1", "dense2")):
    h = _dense(x, values[names[0] + "-weight"], values[names[0] + "-bias"], relu=True)
    return _dense(h, values[names[1] + "-weight"], values[names[1] + "-bias"])


def _batch(seed, n=B):
    rng = np.random.default_rng(seed)
    return rng.random((n, 1, 4, 4), dtype=np.float32), rng.integers(0, 10, n).astype(np.int32)


def _mlp(images, names=("dense1", "dense2")):
    """The scripts' MLP (reshape -> dense relu -> dense), 16 -> 8 -> 10, named like mlp_mnist_origin."""
    initializer = flow.truncated_normal(0.1)
    reshape = flow.reshape(images, [images.shape[0], -1])
    hidden = flow.layers.dense(reshape, 8, activation=flow.nn.relu, kernel_initializer=initializer,
                               bias_initializer=flow.random_uniform_initializer(-0.1, 0.1), name=names[0])
    return flow.layers.dense(hidden, 10, kernel_initializer=initializer, name=names[1])


def _sgd(loss, lr=0.1):
    flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [lr]), momentum=0).minimize(loss)


def _train_job(names=("dense1", "dense2"), placement=("cpu", "0:0")):
    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((B, 1, 4, 4), dtype=flow.float),
                  labels: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement(*placement):
            logits = _mlp(images, names)
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        _sgd(loss)
        return loss

    return train_job


def _sgd_step_reference(values, x, y, lr=0.1, names=("dense1", "dense2")):
    """One SGD step on the mean loss (legacy: d(sum loss)/dw scaled by 1/N), by hand."""
    w1, b1, w2, b2 = (values[names[0] + "-weight"], values[names[0] + "-bias"],
                      values[names[1] + "-weight"], values[names[1] + "-bias"])
    xf = x.reshape(len(x), -1).astype(np.float64)
    pre = xf @ w1.T + b1
    h = np.maximum(pre, 0)
    logits = h @ w2.T + b2
    d_logits = (_softmax(logits) - np.eye(10)[y]) / len(y)
    d_h = (d_logits @ w2) * (pre > 0)
    return {names[1] + "-weight": w2 - lr * d_logits.T @ h, names[1] + "-bias": b2 - lr * d_logits.sum(0),
            names[0] + "-weight": w1 - lr * d_h.T @ xf, names[0] + "-bias": b1 - lr * d_h.sum(0)}


# ---------------------------------------------------------------------------------------------------------------
# imports, module-level config calls, data


def test_oneflow_alias_and_record_module_resolve_to_compat():
    import oneflow.core.record.record_pb2 as ofrecord  # ofrecord_to_string.py / ofrecord_from_string.py

    assert flow is oneflow_compat and tp is oneflow_compat.typing
    rec = ofrecord.OFRecord(feature={"labels": ofrecord.Feature(int64_list=ofrecord.Int64List(value=[7]))})
    back = ofrecord.OFRecord.FromString(rec.SerializeToString())
    assert list(back.feature["labels"].int64_list.value) == [7]
    assert rec.ByteSize() == len(rec.SerializeToString())


def test_enable_legacy_model_io_false_at_import_time_is_accepted_silently(capsys):
    # lenet_train.py & co. call it at module level, before any job is defined
    assert flow.config.enable_legacy_model_io(False) is None
    assert flow.config.legacy_model_io_enabled() is False
    assert "Nothing happened" not in capsys.readouterr().out


def _write_mnist(folder, n_train=20, n_test=10):
    rng = np.random.default_rng(5)
    arrays = {"x_train": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
              "y_train": rng.integers(0, 10, n_train).astype(np.uint8),
              "x_test": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
              "y_test": rng.integers(0, 10, n_test).astype(np.uint8)}
    np.savez(os.path.join(folder, "mnist.npz"), **arrays)
    return arrays


def test_load_mnist_batches_from_working_directory(tmp_path, monkeypatch):
    arrays = _write_mnist(tmp_path, n_train=20, n_test=10)
    monkeypatch.chdir(tmp_path)
    (train_images, train_labels), (test_images, test_labels) = flow.data.load_mnist(10, 5)
    assert train_images.shape == (2, 10, 1, 28, 28) and train_images.dtype == np.float32
    assert train_labels.shape == (2, 10) and train_labels.dtype == np.int32
    assert test_images.shape == (2, 5, 1, 28, 28) and test_labels.shape == (2, 5)
    # the scripts iterate zip(train_images, train_labels): batches in file order, pixels / 255
    np.testing.assert_allclose(train_images[1, 3, 0], arrays["x_train"][13] / np.float32(255), rtol=1e-6)
    np.testing.assert_array_equal(test_labels.reshape(-1), arrays["y_test"])
    with pytest.raises(ValueError, match="does not divide"):
        flow.data.load_mnist(10)  # default test batch 100 vs 10 test samples


# ---------------------------------------------------------------------------------------------------------------
# train -> checkpoint -> eval / finetune (lenet_train -> lenet_eval, mlp_mnist_origin -> mlp_mnist_finetune)


def test_checkpoint_handoff_train_to_eval_across_sessions(tmp_path):
    x, y = _batch(1)
    train_job = _train_job()
    for _ in range(3):
        train_job(x, y)
    trained = _variables()
    path = str(tmp_path / "lenet_models_1")
    flow.checkpoint.save(path)
    with pytest.raises(Exception, match="non-empty directory"):
        flow.checkpoint.save(path)  # "need remove the existed folder"

    flow.clear_default_session()  # next script

    @flow.global_function(type="predict")
    def eval_job(images: tp.Numpy.Placeholder((B, 1, 4, 4), dtype=flow.float),
                 labels: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> Tuple[tp.Numpy, tp.Numpy]:
        with flow.scope.placement("cpu", "0:0"):
            logits = _mlp(images)
            flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
        return (labels, logits)

    flow.load_variables(flow.checkpoint.get(path))
    labels, logits = eval_job(x, y)
    np.testing.assert_array_equal(labels, y)
    np.testing.assert_allclose(logits, _mlp_logits(trained, x), rtol=1e-4, atol=1e-5)


def test_finetune_loads_old_variables_and_initializes_new_ones(tmp_path):
    x, y = _batch(2)
    train_job = _train_job()
    train_job(x, y)
    origin = _variables()
    path = str(tmp_path / "mlp_models_1")
    flow.train.CheckPoint().save(path)  # legacy spelling, model IO v2
    flow.clear_default_session()

    @flow.global_function(type="train")
    def finetune_job(images: tp.Numpy.Placeholder((B, 1, 4, 4), dtype=flow.float),
                     labels: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0"):
            dense2 = _mlp(images)
            dense3 = flow.layers.dense(dense2, 10, kernel_initializer=flow.constant_initializer(0.5), name="dense3")
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, dense3)
        _sgd(loss)
        return loss

    flow.train.CheckPoint().load(path)  # the checkpoint has no dense3-*: those keep their initializer values
    now = _variables()
    layer_names = [n for n in origin if n.startswith("dense")]  # the train-step counter is per job name
    assert sorted(layer_names) == ["dense1-bias", "dense1-weight", "dense2-bias", "dense2-weight"]
    for name in layer_names:
        np.testing.assert_array_equal(now[name], origin[name])
    np.testing.assert_array_equal(now["dense3-weight"], np.full((10, 10), 0.5, np.float32))
    loss = finetune_job(x, y)
    expected = _dense(_mlp_logits(origin, x), now["dense3-weight"], now["dense3-bias"])
    np.testing.assert_allclose(loss, _sparse_ce(expected, y), rtol=1e-4, atol=1e-5)


def test_train_step_matches_hand_written_sgd():
    x, y = _batch(3)
    train_job = _train_job()
    flow.train.CheckPoint().init()  # compiles and initializes, as the scripts' check_point.init()
    before = _variables()
    loss = train_job(x, y)
    np.testing.assert_allclose(loss, _sparse_ce(_mlp_logits(before, x), y), rtol=1e-4, atol=1e-5)
    after = _variables()
    for name, value in _sgd_step_reference(before, x, y).items():
        np.testing.assert_allclose(after[name], value, rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------------------------------------------------------
# return styles: tp.Callback, Tuple, no annotation (.get()), legacy train config


def test_callback_returns_in_train_and_predict_jobs():
    x, y = _batch(4)
    losses = []

    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((B, 1, 4, 4), dtype=flow.float),
                  labels: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Callback[tp.Numpy]:
        logits = _mlp(images, ("hidden", "output"))  # async_single_job.py: default placement, these names
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
        _sgd(loss)
        return loss

    @flow.global_function(type="predict")
    def eval_job(images: tp.Numpy.Placeholder((B, 1, 4, 4), dtype=flow.float),
                 labels: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Callback[Tuple[tp.Numpy, tp.Numpy]]:
        with flow.scope.placement("cpu", "0:0"):
            logits = _mlp(images, ("hidden", "output"))
        return (labels, logits)

    def cb_print_loss(result: tp.Numpy):
        losses.append(result)

    flow.train.CheckPoint().init()
    before = _variables()
    assert train_job(x, y)(cb_print_loss) is None
    assert len(losses) == 1 and isinstance(losses[0], np.ndarray)
    np.testing.assert_allclose(losses[0], _sparse_ce(_mlp_logits(before, x, ("hidden", "output")), y),
                               rtol=1e-4, atol=1e-5)
    after = _variables()
    got = []

    def acc(arguments: Tuple[tp.Numpy, tp.Numpy]):
        got.append(arguments)

    eval_job(x, y)(acc)
    (labels, logits), = got
    np.testing.assert_array_equal(labels, y)
    np.testing.assert_allclose(logits, _mlp_logits(after, x, ("hidden", "output")), rtol=1e-4, atol=1e-5)


def test_legacy_train_config_fixed_tensor_def_and_future_results():
    # synchronize_single_job / async_batch_job (v0.2 style): config.train.*, add_loss, FixedTensorDef, .get(),
    # .async_get(), unannotated returns
    x, y = _batch(5)
    config = flow.function_config()
    config.default_data_type(flow.float)
    config.train.primary_lr(0.1)
    config.train.model_update_conf({"naive_conf": {}})

    @flow.global_function(config)
    def train_job(images=flow.FixedTensorDef((B, 1, 4, 4), dtype=flow.float),
                  labels=flow.FixedTensorDef((B,), dtype=flow.int32)):
        with flow.scope.placement("gpu", "0:0"):
            logits = _mlp(images)
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
        flow.losses.add_loss(loss)
        return loss

    eval_config = flow.function_config()
    eval_config.default_data_type(flow.float)

    @flow.global_function(eval_config)
    def eval_job(images=flow.FixedTensorDef((B, 1, 4, 4), dtype=flow.float),
                 labels=flow.FixedTensorDef((B,), dtype=flow.int32)):
        logits = _mlp(images)
        return {"labels": labels, "logits": logits}

    flow.train.CheckPoint().init()
    before = _variables()
    loss = train_job(x, y).get()
    np.testing.assert_allclose(loss.numpy(), _sparse_ce(_mlp_logits(before, x), y), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(loss.ndarray(), loss.numpy())
    np.testing.assert_allclose(loss.mean(), loss.numpy().mean(), rtol=1e-6)  # `.get().mean()` in the scripts
    expected = _sgd_step_reference(before, x, y)  # naive_conf with primary_lr 0.1 == SGD(0.1)
    after = _variables()
    for name, value in expected.items():
        np.testing.assert_allclose(after[name], value, rtol=1e-4, atol=1e-6)
    results = []
    eval_job(x, y).async_get(results.append)
    assert len(results) == 1
    np.testing.assert_array_equal(results[0]["labels"].ndarray(), y)
    np.testing.assert_allclose(results[0]["logits"].ndarray(), _mlp_logits(after, x), rtol=1e-4, atol=1e-5)


def test_feed_numpy_tuple_and_unannotated_returns_are_the_fed_arrays():
    images_in = np.random.default_rng(6).uniform(-10, 10, (32, 1, 28, 28)).astype(np.float32)
    labels_in = np.random.default_rng(7).integers(-10, 10, (32,)).astype(np.int32)

    @flow.global_function(type="predict")
    def test_job(images: tp.Numpy.Placeholder((32, 1, 28, 28), dtype=flow.float),
                 labels: tp.Numpy.Placeholder((32,), dtype=flow.int32)) -> Tuple[tp.Numpy, tp.Numpy]:
        return (images, labels)

    @flow.global_function(flow.function_config())
    def old_job(images: tp.Numpy.Placeholder((32, 1, 28, 28), dtype=flow.float),
                labels: tp.Numpy.Placeholder((32,), dtype=flow.int32)):
        return images, labels

    images, labels = test_job(images_in, labels_in)
    np.testing.assert_array_equal(images, images_in)
    np.testing.assert_array_equal(labels, labels_in)
    images, labels = old_job(images_in, labels_in).get()
    assert images.shape == (32, 1, 28, 28) and labels.shape == (32,)
    np.testing.assert_array_equal(images.numpy(), images_in)


# ---------------------------------------------------------------------------------------------------------------
# watch / watch_diff (test_watch.py, test_watch_diff.py)


def test_watch_handlers_with_and_without_annotation():
    data = np.random.default_rng(8).uniform(-1, 1, 5).astype(np.float32)
    annotated, plain = [], []

    def watch_handler(y: tp.Numpy):
        annotated.append(y)

    def cb(y):
        plain.append(y.ndarray())

    @flow.global_function()
    def ReluJob(x: tp.Numpy.Placeholder((5,))) -> None:  # noqa: N802 - the script's name
        y = flow.nn.relu(x)
        flow.watch(y, watch_handler)
        flow.watch(y, cb)

    flow.config.gpu_device_num(1)
    assert ReluJob(data) is None
    assert len(annotated) == 1 and isinstance(annotated[0], np.ndarray)
    np.testing.assert_array_equal(annotated[0], np.maximum(data, 0))
    np.testing.assert_array_equal(plain[0], np.maximum(data, 0))


def test_watch_diff_of_logits_is_softmax_minus_onehot():
    x, y = _batch(9)
    seen = []

    def watch_diff_handler(blob: tp.Numpy):
        seen.append(blob)

    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((B, 1, 4, 4), dtype=flow.float),
                  labels: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0"):
            logits = _mlp(images, ("hidden", "output"))
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        _sgd(loss)
        flow.watch_diff(logits, watch_diff_handler)
        return loss

    flow.train.CheckPoint().init()
    before = _variables()
    train_job(x, y)
    assert len(seen) == 1 and seen[0].shape == (B, 10) and seen[0].dtype == np.float32
    logits = _mlp_logits(before, x, ("hidden", "output"))
    np.testing.assert_allclose(seen[0], _softmax(logits) - np.eye(10)[y], rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------------------------------------------------------
# resources: distributed_train.py on one process, "gpu" placements on a CPU-only machine


def test_two_machines_listed_but_one_process_is_a_clear_error():
    # the env outlives sessions, but not the test: tests/conftest.py resets the process context
    flow.config.gpu_device_num(1)
    flow.env.ctrl_port(9988)
    flow.env.machine([{"addr": "192.168.1.12"}, {"addr": "192.168.1.11"}])
    flow.config.enable_debug_mode(True)
    train_job = _train_job(placement=("gpu", "0:0"))
    with pytest.raises(RuntimeError, match=r"2 machine\(s\) configured .* 1 process"):
        flow.train.CheckPoint().init()
    with pytest.raises(AssertionError, match="duplicate"):
        flow.env.machine(["10.0.0.1", "10.0.0.1"])
    del train_job


def test_gpu_placement_runs_on_cpu_when_no_cuda():
    from oneflow_compat.backend import devices

    if devices.cuda_usable():
        pytest.skip("a CUDA device is usable here")
    x, y = _batch(10)
    train_job = _train_job(placement=("gpu", "0:0"))  # lenet_train.py's placement
    flow.config.gpu_device_num(1)
    flow.train.CheckPoint().init()
    before = _variables()
    np.testing.assert_allclose(train_job(x, y), _sparse_ce(_mlp_logits(before, x), y), rtol=1e-4, atol=1e-5)


def test_gpu_device_beyond_configured_count_is_rejected():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        with flow.scope.placement("gpu", "0:1"):
            return flow.identity(x)

    flow.config.gpu_device_num(1)
    with pytest.raises(ValueError, match="gpu device 1"):
        job(np.zeros(2, np.float32))


# ---------------------------------------------------------------------------------------------------------------
# two devices: mirrored_strategy.py (en and cn), hybrid_parallelism_mlp.py, mixed_parallel_lenet.py


def _mirrored_train_job(per_device):
    config = flow.function_config()
    config.default_data_type(flow.float)
    config.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(type="train", function_config=config)
    def train_job(images: tp.ListNumpy.Placeholder((per_device, 1, 4, 4), dtype=flow.float),
                  labels: tp.ListNumpy.Placeholder((per_device,), dtype=flow.int32)) -> tp.ListNumpy:
        logits = _mlp(images)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        _sgd(loss)
        return loss

    return train_job


def test_mirrored_list_numpy_returns_one_array_per_device():
    half = 50  # the scripts' BATCH_SIZE_PER_GPU
    x, y = _batch(11, n=2 * half)
    flow.config.gpu_device_num(2)
    train_job = _mirrored_train_job(half)
    flow.train.CheckPoint().init()
    before = _variables()
    loss = train_job([x[:half], x[half:]], [y[:half], y[half:]])
    # en: np.array([*loss[0], *loss[1]]); cn: np.array(train_job(...)) of shape (devices, per-device batch)
    assert isinstance(loss, list) and len(loss) == 2
    assert np.array(loss).shape == (2, half)
    expected = _sparse_ce(_mlp_logits(before, x), y)
    np.testing.assert_allclose(np.array([*loss[0], *loss[1]]), expected, rtol=1e-4, atol=1e-5)
    # gradients are summed over devices and scaled by the total instance count: the same step as 1 device
    after = _variables()
    for name, value in _sgd_step_reference(before, x, y).items():
        np.testing.assert_allclose(after[name], value, rtol=1e-4, atol=1e-6)


def test_model_parallel_dense_split0_on_two_devices_equals_one_device_math():
    x, y = _batch(12)
    flow.config.gpu_device_num(2)

    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((B, 1, 4, 4), dtype=flow.float),
                  labels: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        initializer = flow.truncated_normal(0.1)
        reshape = flow.reshape(images, [images.shape[0], -1])
        hidden = flow.layers.dense(reshape, 8, activation=flow.nn.relu, kernel_initializer=initializer,
                                   bias_initializer=flow.random_uniform_initializer(-0.1, 0.1), name="dense1")
        logits = flow.layers.dense(hidden, 10, kernel_initializer=initializer,
                                   model_distribute=flow.distribute.split(axis=0), name="dense2")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
        _sgd(loss)
        return loss

    flow.train.CheckPoint().init()
    before = _variables()
    assert before["dense2-weight"].shape == (10, 8)  # full logical value although split over 2 devices
    np.testing.assert_allclose(train_job(x, y), _sparse_ce(_mlp_logits(before, x), y), rtol=1e-4, atol=1e-5)
    after = _variables()
    for name, value in _sgd_step_reference(before, x, y).items():
        np.testing.assert_allclose(after[name], value, rtol=1e-4, atol=1e-6)


def test_layers_placed_on_different_devices_pipeline():
    x, y = _batch(13)
    flow.config.gpu_device_num(2)

    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((B, 1, 4, 4), dtype=flow.float),
                  labels: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Numpy:
        initializer = flow.truncated_normal(0.1)
        reshape = flow.reshape(images, [images.shape[0], -1])  # default placement 0:0-1
        with flow.scope.placement("gpu", "0:0"):
            hidden = flow.layers.dense(reshape, 8, activation=flow.nn.relu, kernel_initializer=initializer,
                                       bias_initializer=flow.random_uniform_initializer(-0.1, 0.1), name="hidden")
        with flow.scope.placement("gpu", "0:1"):
            output = flow.layers.dense(hidden, 10, kernel_initializer=initializer, name="outlayer")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, output, name="softmax_loss")
        _sgd(loss)
        return loss

    flow.train.CheckPoint().init()
    before = _variables()
    names = ("hidden", "outlayer")
    np.testing.assert_allclose(train_job(x, y), _sparse_ce(_mlp_logits(before, x, names), y), rtol=1e-4, atol=1e-5)
    after = _variables()
    for name, value in _sgd_step_reference(before, x, y, names=names).items():
        np.testing.assert_allclose(after[name], value, rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------------------------------------------------------
# eager_mlp_mnist.py (stored versions): enable_eager_execution after a global function is defined, then train


def test_job_decorated_before_enable_eager_trains_eagerly():
    x, y = _batch(17)
    train_job = _train_job()
    flow.enable_eager_execution(True)
    flow.train.CheckPoint().init()
    train_job(x, y)  # creates and initializes the variables, and takes the first step
    before = _variables()
    np.testing.assert_allclose(train_job(x, y), _sparse_ce(_mlp_logits(before, x), y), rtol=1e-4, atol=1e-5)
    after = _variables()
    for name, value in _sgd_step_reference(before, x, y).items():
        np.testing.assert_allclose(after[name], value, rtol=1e-4, atol=1e-6)
