"""Eager mode (legacy-api.md §2.2): ops run at once, re-definition is legal, minimize updates in the call."""
import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp


def test_eager_training_matches_lazy_training():
    x = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
    y = np.array([0, 1, 2, 0, 1, 2, 0, 1], np.int32)
    def body(images, labels):
        w = flow.get_variable("w", shape=(4, 3), initializer=flow.random_normal_initializer(0, 0.3), random_seed=7)
        b = flow.get_variable("b", shape=(3,), initializer=flow.zeros_initializer())
        logits = flow.nn.bias_add(flow.matmul(images, w), b)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum=0.9).minimize(loss)
        return loss

    @flow.global_function(type="train")
    def lazy(images: tp.Numpy.Placeholder((8, 4)), labels: tp.Numpy.Placeholder((8,), dtype=flow.int32)) -> tp.Numpy:
        return body(images, labels)

    lazy_losses = [lazy(x, y) for _ in range(3)]

    flow.clear_default_session()
    flow.enable_eager_execution(True)
    assert flow.eager_execution_enabled()
    seen = []
    eager_losses = []
    for step in range(3):
        @flow.global_function(type="train")  # re-defined every step, as eager_mlp_mnist.py does
        def eager(images: tp.Numpy.Placeholder((8, 4)),
                  labels: tp.Numpy.Placeholder((8,), dtype=flow.int32)) -> tp.Numpy:
            loss = body(images, labels)
            seen.append(loss.numpy().shape)  # values exist inside the body
            return loss

        if step == 0:
            flow.train.CheckPoint().init()  # a no-op that must not fail
        eager_losses.append(eager(x, y))
    assert seen == [(8,)] * 3
    for a, b in zip(lazy_losses, eager_losses):
        np.testing.assert_allclose(b, a, rtol=1e-5)


def test_job_defined_before_enabling_eager_runs_eagerly_but_not_after_a_lazy_call():
    seen = []

    @flow.global_function()
    def f(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        y = x * 3
        seen.append(y.numpy().copy())  # a value inside the body: the job really runs eagerly
        return y

    flow.enable_eager_execution(True)  # as the docs' eager_mlp_mnist.py does, after decorating its job
    np.testing.assert_allclose(f(np.ones(2, np.float32)), [3, 3])
    np.testing.assert_allclose(f(np.ones(2, np.float32) * 2), [6, 6])
    np.testing.assert_allclose(seen[1], [6, 6])

    flow.clear_default_session()
    flow.enable_eager_execution(False)
    flow.clear_default_session()

    @flow.global_function()
    def g(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        return x

    g(np.ones(2, np.float32))
    with pytest.raises(NotImplementedError, match="no avaliable function found"):
        flow.enable_eager_execution(True)


def test_eager_watch_is_called_immediately_and_numpy_outside_eager_fails():
    flow.enable_eager_execution(True)
    got = []

    @flow.global_function()
    def f(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        y = x * 2
        flow.watch(y, lambda v: got.append(v.numpy().copy()))
        assert len(got) == 1
        return y

    np.testing.assert_allclose(f(np.ones(3, np.float32)), [2, 2, 2])
    np.testing.assert_allclose(got[0], [2, 2, 2])
