"""Session lifecycle (legacy-api.md §2.1): registration, compile at first call, clear/sync, config messages."""
import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp


def _identity_job():
    @flow.global_function()
    def ident(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return flow.identity(x)

    return ident


def test_body_runs_once_per_session_for_every_job():
    calls = []

    @flow.global_function()
    def a(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        calls.append("a")
        return x + 1

    @flow.global_function()
    def never_called(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        calls.append("b")
        return x * 2

    assert calls == []  # decoration does not trace
    np.testing.assert_allclose(a(np.ones(2, np.float32)), [2, 2])
    np.testing.assert_allclose(a(np.zeros(2, np.float32)), [1, 1])
    assert calls == ["a", "b"]


def test_define_after_start_fails_with_legacy_message():
    ident = _identity_job()
    ident(np.zeros((2, 3), np.float32))
    with pytest.raises(NotImplementedError, match="^no avaliable function found.\n"):
        @flow.global_function()
        def late(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
            return x


def test_config_after_start_prints_nothing_happened(capsys):
    ident = _identity_job()
    ident(np.zeros((2, 3), np.float32))
    assert flow.config.gpu_device_num(2) is False
    assert "Nothing happened because the session is running" in capsys.readouterr().out


def test_clear_default_session_discards_jobs_and_old_wrappers_fail():
    ident = _identity_job()
    ident(np.zeros((2, 3), np.float32))
    flow.clear_default_session()
    with pytest.raises(AssertionError, match="closed"):
        ident(np.zeros((2, 3), np.float32))
    ident2 = _identity_job()
    np.testing.assert_allclose(ident2(np.ones((2, 3), np.float32)), np.ones((2, 3)))
    flow.sync_default_session()


def test_keyword_arguments_are_a_type_error():
    ident = _identity_job()
    with pytest.raises(TypeError, match="keyword"):
        ident(x=np.zeros((2, 3), np.float32))


def test_checkpoint_call_without_jobs_is_an_assertion():
    with pytest.raises(AssertionError):
        flow.get_all_variables()


def test_train_job_without_optimizer_fails_at_first_call():
    @flow.global_function(type="train")
    def t(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return flow.math.reduce_sum(x)

    with pytest.raises(RuntimeError, match="has no optimizer"):
        t(np.zeros((2, 3), np.float32))


def test_deprecated_config_positional_and_future(capsys):
    cfg = flow.function_config()
    cfg.default_data_type(flow.float)

    @flow.global_function(cfg)
    def job(x=flow.FixedTensorDef((2, 2))):
        return x * 3

    out = capsys.readouterr().out
    assert "flow.global_function(func_config) is deprecated" in out
    fut = job(np.ones((2, 2), np.float32))
    blob = fut.get()
    np.testing.assert_allclose(blob.numpy(), 3 * np.ones((2, 2)))
    with pytest.raises(AssertionError):
        fut.get()


def test_invalid_type_is_bare_assertion():
    with pytest.raises(AssertionError):
        flow.global_function(type="training")


def test_eval_between_train_calls_sees_updated_variable_and_train_returns_pre_update_value():
    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((2, 5))) -> tp.Numpy:
        v = flow.get_variable("var", shape=(2, 5), initializer=flow.constant_initializer(1.0))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum=0).minimize(v + x)
        return v

    @flow.global_function()
    def read() -> tp.Numpy:
        return flow.get_variable("var", shape=(2, 5), initializer=flow.constant_initializer(1.0))

    x = np.zeros((2, 5), np.float32)
    np.testing.assert_allclose(train(x), np.ones((2, 5)))  # value before this step's update
    # loss = var + x of shape (2, 5): gradient 1, scaled by 1/10 -> var - lr/10
    np.testing.assert_allclose(read(), np.full((2, 5), 1 - 0.05), rtol=1e-6)
    np.testing.assert_allclose(train(x), np.full((2, 5), 0.95), rtol=1e-6)
    steps = flow.get_all_variables()["System-Train-TrainStep-train"].numpy()
    assert steps.dtype == np.int64 and steps.tolist() == [2]


def test_current_global_function_desc_and_unittest_base():
    seen = []

    @flow.global_function()
    def p(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        seen.append(flow.current_global_function_desc().IsTrainable())
        return x

    p(np.zeros(2, np.float32))
    assert seen == [False]
    assert issubclass(flow.unittest.TestCase, __import__("unittest").TestCase)


def test_tensor_list_placeholder_feeds_and_returns_the_lists():
    flow.config.cpu_device_num(1)
    cfg = flow.function_config()
    cfg.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(function_config=cfg)
    def f(x: tp.ListListNumpy.Placeholder((2,))) -> tp.ListListNumpy:
        return x

    out = f([[np.ones(1, np.float32), np.full(1, 2.0, np.float32)]])
    assert [[a.tolist() for a in per_dev] for per_dev in out] == [[[1.0], [2.0]]]
