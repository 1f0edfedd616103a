"""Placeholders, feed checks and return annotations (legacy-api.md §2.3)."""
from typing import Dict, List, Tuple

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp


def test_placeholder_shape_must_be_tuple():
    with pytest.raises(AssertionError, match="shape should be a tuple"):
        tp.Numpy.Placeholder([2, 3])


def test_wrong_shape_names_placeholder_and_both_shapes_and_changes_nothing():
    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((4, 3)), y: tp.Numpy.Placeholder((4,), dtype=flow.int32)) -> tp.Numpy:
        w = flow.get_variable("w", shape=(3, 2), initializer=flow.constant_initializer(0.5))
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, flow.matmul(x, w))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1.0]), momentum=0).minimize(loss)
        return loss

    x, y = np.ones((4, 3), np.float32), np.zeros(4, np.int32)
    train(x, y)
    before = flow.get_all_variables()["w"].numpy().copy()
    with pytest.raises(AssertionError) as e:
        train(np.ones((5, 3), np.float32), y)
    assert "parameter 'x'" in str(e.value) and "(5, 3)" in str(e.value) and "(4, 3)" in str(e.value)
    with pytest.raises(AssertionError):
        train(x)  # wrong count
    with pytest.raises(AssertionError, match="numpy.ndarray"):
        train(x, [0, 0, 0, 0])
    with pytest.raises(TypeError, match="dtype"):
        train(x, np.zeros(4, np.float32))  # a float batch into an int placeholder
    np.testing.assert_array_equal(flow.get_all_variables()["w"].numpy(), before)
    steps = flow.get_all_variables()["System-Train-TrainStep-train"].numpy()
    assert steps.tolist() == [1]


def test_float64_feed_is_cast_and_input_is_copied():
    @flow.global_function()
    def f(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return x * 2

    a = np.arange(3, dtype=np.float64)
    out = f(a)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [0, 2, 4])
    noncontig = np.arange(6, dtype=np.float32)[::2]
    np.testing.assert_allclose(f(noncontig), [0, 4, 8])


def test_return_structures():
    @flow.global_function()
    def f(x: tp.Numpy.Placeholder((2,)), y: tp.Numpy.Placeholder((2,))) -> Tuple[tp.Numpy, tp.Numpy]:
        return x, y

    @flow.global_function()
    def g(x: tp.Numpy.Placeholder((2,))) -> Dict[str, Tuple[tp.Numpy, List[tp.ListNumpy]]]:
        return {"a": (x, [x + 1])}

    @flow.global_function()
    def h(x: tp.Numpy.Placeholder((2,))) -> tp.Bundle[tp.Numpy]:
        return [x, {"k": (x, x * 0)}]

    @flow.global_function()
    def cb(x: tp.Numpy.Placeholder((2,))) -> tp.Callback[tp.Numpy]:
        return x * 5

    @flow.global_function()
    def none(x: tp.Numpy.Placeholder((2,))) -> None:
        flow.watch(x, lambda v: seen.append(v))

    seen = []
    a, b = np.ones(2, np.float32), np.zeros(2, np.float32)
    r = f(a, b)
    assert type(r) is tuple and np.array_equal(r[0], a) and np.array_equal(r[1], b)
    r = g(a)
    assert list(r) == ["a"] and type(r["a"]) is tuple and type(r["a"][1]) is list
    np.testing.assert_allclose(r["a"][1][0][0], [2, 2])
    r = h(a)
    assert type(r) is list and type(r[1]["k"]) is tuple
    got = []
    assert cb(a)(lambda v: got.append(v)) is None
    np.testing.assert_allclose(got[0], [5, 5])
    assert none(a) is None
    assert len(seen) == 1 and isinstance(seen[0], flow.train.__class__) is False
    np.testing.assert_allclose(seen[0].numpy(), a)


def test_bad_annotations():
    with pytest.raises(NotImplementedError, match="invalid return annotation"):
        @flow.global_function()
        def f(x: tp.Numpy.Placeholder((2,))) -> int:
            return x

    with pytest.raises(TypeError, match=r"Callback\[T\] cannot be omitted"):
        @flow.global_function()
        def g(x: tp.Numpy.Placeholder((2,))) -> tp.Callback:
            return x

    with pytest.raises(NotImplementedError, match="invalid parameter annotation"):
        @flow.global_function()
        def k(x: int) -> tp.Numpy:
            return x


def test_returned_value_must_match_annotation():
    @flow.global_function()
    def f(x: tp.Numpy.Placeholder((2,))) -> Tuple[tp.Numpy, tp.Numpy]:
        return x

    with pytest.raises(TypeError, match="does not matched return annotation"):
        f(np.ones(2, np.float32))


def test_list_numpy_placeholder_requires_mirrored_view():
    @flow.global_function()
    def f(x: tp.ListNumpy.Placeholder((2,))) -> tp.ListNumpy:
        return x

    with pytest.raises(AssertionError, match="mirrored view"):
        f([np.ones(2, np.float32)])


def test_mirrored_smaller_arrays_and_per_device_lists():
    flow.config.cpu_device_num(2)
    cfg = flow.function_config()
    cfg.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(function_config=cfg)
    def f(x: tp.ListNumpy.Placeholder((2, 5))) -> tp.ListNumpy:
        return flow.math.relu(x) * 2

    out = f([np.ones((1, 5), np.float32), -np.ones((2, 5), np.float32)])
    assert type(out) is list and len(out) == 2
    assert out[0].shape == (1, 5) and out[1].shape == (2, 5)
    np.testing.assert_allclose(out[0], 2 * np.ones((1, 5)))
    np.testing.assert_allclose(out[1], np.zeros((2, 5)))
    with pytest.raises(AssertionError, match="2 arrays"):
        f([np.ones((1, 5), np.float32)])
    with pytest.raises(AssertionError, match="maximum"):
        f([np.ones((3, 5), np.float32), np.ones((1, 5), np.float32)])
