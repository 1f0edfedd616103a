"""flow.checkpoint.save/get, flow.load_variables, flow.get_all_variables and the legacy CheckPoint classes."""
import os

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp


def _define(devices=1, split=False, momentum=0.9):
    flow.config.cpu_device_num(devices)

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((6, 5)), y: tp.Numpy.Placeholder((6,), dtype=flow.int32)) -> tp.Numpy:
        h = flow.layers.dense(x, 8, activation=flow.nn.relu, name="d1",
                              kernel_initializer=flow.random_uniform_initializer(-0.5, 0.5))
        logits = flow.layers.dense(h, 4, name="d2", kernel_initializer=flow.random_uniform_initializer(-0.5, 0.5),
                                   model_distribute=flow.distribute.split(0) if split else flow.distribute.broadcast())
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.3]), momentum=momentum).minimize(loss)
        return loss

    return train


X = np.random.default_rng(0).normal(size=(6, 5)).astype(np.float32)
Y = np.array([0, 1, 2, 3, 0, 1], np.int32)


def test_round_trip_is_exact_and_lists_system_and_state_variables(tmp_path):
    train = _define()
    for _ in range(3):
        train(X, Y)
    saved = {k: v.numpy() for k, v in flow.get_all_variables().items()}
    assert set(saved) == {"d1-weight", "d1-bias", "d2-weight", "d2-bias", "d1-weight-momentum", "d1-bias-momentum",
                          "d2-weight-momentum", "d2-bias-momentum", "System-Train-TrainStep-train"}
    path = str(tmp_path / "ckpt")
    flow.checkpoint.save(path)
    assert sorted(os.listdir(path)) == sorted(list(saved) + ["snapshot_done"])
    assert open(os.path.join(path, "d1-weight", "meta")).read() == "shape {\n  dim: 8\n  dim: 5\n}\ndata_type: kFloat\n"
    np.testing.assert_array_equal(np.fromfile(os.path.join(path, "d1-weight", "out"), np.float32).reshape(8, 5),
                                  saved["d1-weight"])
    # resume in a fresh session: identical continuation (optimizer state and step restored)
    expected = train(X, Y)
    flow.clear_default_session()
    train2 = _define()
    flow.load_variables(flow.checkpoint.get(path))
    np.testing.assert_array_equal(train2(X, Y), expected)


def test_save_refuses_non_empty_directory_and_leaves_it(tmp_path):
    train = _define()
    train(X, Y)
    path = tmp_path / "busy"
    path.mkdir()
    (path / "keep.txt").write_text("mine")
    with pytest.raises(AssertionError, match="is a file or non-empty directory"):
        flow.checkpoint.save(str(path))
    assert os.listdir(path) == ["keep.txt"]


def test_saving_again_into_a_checkpoint_names_replace(tmp_path):
    # a training script run twice meets OneFlow's refusal; the message goes on to name flow.checkpoint.replace
    train = _define()
    train(X, Y)
    path = str(tmp_path / "model")
    flow.checkpoint.save(path)
    first = open(os.path.join(path, "d1-weight", "out"), "rb").read()
    train(X, Y)
    with pytest.raises(AssertionError) as e:
        flow.checkpoint.save(path)
    assert str(e.value) == (
        "%s is a file or non-empty directory! Note that flow.save is different from torch.save. It saves each weight "
        "as a separated file so that a directory instead of a file should be given. To write over an earlier "
        "checkpoint, call flow.checkpoint.replace(%r) instead (oneflow_compat: the new checkpoint is written beside "
        "the old one and swapped in), or remove the folder first." % (path, path))
    assert open(os.path.join(path, "d1-weight", "out"), "rb").read() == first
    flow.checkpoint.replace(path)  # what the message says works
    assert open(os.path.join(path, "d1-weight", "out"), "rb").read() != first


def test_bad_load_names_variable_and_shapes_and_changes_nothing(tmp_path):
    train = _define()
    train(X, Y)
    before = {k: v.numpy().copy() for k, v in flow.get_all_variables().items()}
    bad = {"d1-bias": np.ones(8, np.float32), "d2-weight": np.zeros((5, 4), np.float32)}
    with pytest.raises(Exception) as e:
        flow.load_variables(bad)
    assert "d2-weight" in str(e.value) and "(4, 8)" in str(e.value) and "(5, 4)" in str(e.value)
    with pytest.raises(Exception, match="d1-bias"):
        flow.load_variables({"d1-bias": np.ones(8, np.float64)})  # float64 into float32: legacy error
    after = {k: v.numpy() for k, v in flow.get_all_variables().items()}
    for k in before:
        np.testing.assert_array_equal(after[k], before[k], err_msg=k)  # d1-bias untouched too: all or nothing
    with pytest.raises(RuntimeError, match='"nope" is not a variable name'):
        flow.load_variables({"nope": np.ones(1, np.float32)}, ignore_mismatch=False)
    flow.load_variables({"nope": np.ones(1, np.float32)})  # ignored by default


def test_checkpoint_from_n_devices_loads_on_m_devices(tmp_path):
    train = _define(devices=3, split=True)
    train(X, Y)
    saved = {k: v.numpy() for k, v in flow.get_all_variables().items()}
    path = str(tmp_path / "n3")
    flow.checkpoint.save(path)
    expected = train(X, Y)
    for m, split in ((1, False), (2, True), (4, False)):
        flow.clear_default_session()
        t = _define(devices=m, split=split)
        flow.load_variables(flow.checkpoint.get(path))
        got = {k: v.numpy() for k, v in flow.get_all_variables().items()}
        for k in saved:
            np.testing.assert_array_equal(got[k], saved[k], err_msg=k)
        np.testing.assert_allclose(t(X, Y), expected, rtol=1e-5)


def test_legacy_checkpoint_classes(tmp_path, capsys):
    flow.config.enable_legacy_model_io(True)
    train = _define(momentum=0)
    ckpt = flow.train.CheckPoint()
    ckpt.init()
    train(X, Y)
    path = str(tmp_path / "legacy")
    ckpt.save(path)
    assert not os.path.exists(os.path.join(path, "d1-weight", "meta"))  # legacy IO writes no meta
    assert os.path.exists(os.path.join(path, "snapshot_done"))
    saved = flow.get_all_variables()["d2-weight"].numpy()
    train(X, Y)
    ckpt.load(path)
    np.testing.assert_array_equal(flow.get_all_variables()["d2-weight"].numpy(), saved)


def test_simple_checkpoint_manager(tmp_path):
    train = _define(momentum=0)
    mgr = flow.train.SimpleCheckPointManager(str(tmp_path / "snaps"))
    mgr.initialize_or_restore()
    assert len(mgr.list_checkpoints()) == 1
    train(X, Y)
    mgr.save()
    latest = mgr.latest_checkpoint()
    assert latest.startswith("snapshot_") and len(mgr.list_checkpoints()) == 2
    w = flow.get_all_variables()["d1-weight"].numpy()
    flow.clear_default_session()
    _define(momentum=0)
    flow.train.SimpleCheckPointManager(str(tmp_path / "snaps")).initialize_or_restore()
    np.testing.assert_array_equal(flow.get_all_variables()["d1-weight"].numpy(), w)
