"""OneFlow 0.9's error types and exact words for the loss functionals (`flow._C.softmax_cross_entropy(_grad)`,
`sparse_cross_entropy`, `sparse_softmax_cross_entropy`, `smooth_l1_loss`, a loss's `reduction`) and for
`_C.pixel_shuffle`, `_C.one_hot`, `_C.normalization`, `_C.normal` (the C++ checks of OneFlow v0.9.0, cited per
test), with what the forms compute where the input is good."""
import re

import numpy as np
import pytest

import oneflow as flow
import oneflow.nn.functional as F


def _words(text):
    return "^" + re.escape(text) + "$"


# --- user/ops/softmax_cross_entropy_op.cpp --------------------------------------------------------------------------
@pytest.mark.parametrize("shapes, dtypes, kind, words", [
    ([(10,), (1, 10)], None, RuntimeError, "The dimension of prediction must be greater than or equal to 2, but "
                                           "found 1"),
    ([(1, 10), (1, 11)], None, RuntimeError, "The size of label (1,11) must match the size of prediction (1,10)"),
    ([(1, 10), (1, 10)], (flow.float32, flow.float64), TypeError,
     "label and prediction are expected to have the same dtype, but found kDouble and kFloat"),
])
def test_softmax_cross_entropy_checks(shapes, dtypes, kind, words):
    dtypes = dtypes or (flow.float32, flow.float32)
    prediction, label = (flow.randn(*s, dtype=d) for s, d in zip(shapes, dtypes))
    with pytest.raises(kind, match=_words(words)):
        flow._C.softmax_cross_entropy(prediction, label)


@pytest.mark.parametrize("shapes, dtypes, kind, words", [
    ([(10, 5), (10, 10, 5), (10,)], None, RuntimeError,
     "The dimension of prob must be greater than or equal to 2, but found 1"),
    ([(10, 10, 5), (10, 10, 5), (10, 10, 5)], None, RuntimeError,
     "The dimension of dy is expected to be less than that of prob by 1, but found 3 and 2"),
    ([(10, 8), (10, 10, 5), (10, 10, 5)], None, RuntimeError,
     "The size of dy (8) must match the size of label (10) at dimension 1"),
    ([(10, 10), (10, 10, 5), (10, 10, 6)], None, RuntimeError,
     "The size of label (10,10,5) must match the size of prob (10,10,6)"),
    ([(10, 10), (10, 10, 5), (10, 10, 5)], (flow.float64, flow.float32, flow.float64), TypeError,
     "label and prob are expected to have the same dtype, but found kFloat and kDouble"),
    ([(10, 10), (10, 10, 5), (10, 10, 5)], (flow.float32, flow.float64, flow.float64), TypeError,
     "dy and prob are expected to have the same dtype, but found kFloat and kDouble"),
])
def test_softmax_cross_entropy_grad_checks(shapes, dtypes, kind, words):
    dtypes = dtypes or (flow.float32,) * 3
    dy, label, prob = (flow.randn(*s, dtype=d) for s, d in zip(shapes, dtypes))
    with pytest.raises(kind, match=_words(words)):
        flow._C.softmax_cross_entropy_grad(dy, label, prob)


def test_softmax_cross_entropy_values():
    rng = np.random.RandomState(0)
    logits, label = rng.randn(3, 4).astype(np.float32), rng.rand(3, 4).astype(np.float32)
    log_p = logits - logits.max(1, keepdims=True)
    log_p = log_p - np.log(np.exp(log_p).sum(1, keepdims=True))
    got = flow._C.softmax_cross_entropy(flow.tensor(logits), flow.tensor(label))
    np.testing.assert_allclose(got.numpy(), -(label * log_p).sum(1), rtol=1e-5)


# --- user/ops/sparse_cross_entropy_op.cpp, sparse_softmax_cross_entropy_op.cpp ---------------------------------
SPARSE_CASES = [
    ((10,), (10, 10), flow.int64, RuntimeError,
     "The dimension of prediction must be greater than or equal to 2, but found 1"),
    ((10, 10, 5), (10, 10, 5), flow.int64, RuntimeError,
     "The dimension of label is expected to be less than that of prediction by 1, but found 3 and 2"),
    ((10, 10, 5), (10, 5), flow.int64, RuntimeError,
     "The size of prediction (10) must match the size of label (5) at dimension 1"),
    ((10, 10, 5), (10, 10), flow.float32, TypeError, "The dtype of label must be integer, but found kFloat"),
    ((4, 3), (4,), flow.uint8, TypeError, "The dtype of label must be integer, but found kUInt8"),
]


def _label(shape, dtype):
    return flow.randn(*shape).to(dtype) if dtype.is_floating_point else flow.randint(0, 3, shape).to(dtype)


@pytest.mark.parametrize("pred_shape, label_shape, label_dtype, kind, words", SPARSE_CASES)
def test_sparse_cross_entropy_checks(pred_shape, label_shape, label_dtype, kind, words):
    with pytest.raises(kind, match=_words(words)):
        flow._C.sparse_cross_entropy(flow.rand(*pred_shape), _label(label_shape, label_dtype), 10)


@pytest.mark.parametrize("pred_shape, label_shape, label_dtype, kind, words", SPARSE_CASES)
def test_sparse_softmax_cross_entropy_checks(pred_shape, label_shape, label_dtype, kind, words):
    prediction, label = flow.randn(*pred_shape), _label(label_shape, label_dtype)
    with pytest.raises(kind, match=_words(words)):
        flow._C.sparse_softmax_cross_entropy(prediction, label)
    with pytest.raises(kind, match=_words(words)):  # OneFlow 0.9's functional form calls the _C one
        F.sparse_softmax_cross_entropy(label, prediction)


def test_sparse_cross_entropy_values():
    p = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]], np.float32)
    got = flow._C.sparse_cross_entropy(flow.tensor(p), flow.tensor([1, 0], dtype=flow.int32), 3)
    np.testing.assert_allclose(got.numpy(), -np.log([0.5, 0.6]), rtol=1e-6)


# --- user/ops/smooth_l1_loss_op.cpp; core/functional/impl/nn_functor.cpp LossFunctorBase --------------------------
def test_smooth_l1_loss_checks():
    with pytest.raises(RuntimeError, match=_words("The size of input (10,) must match the size of target (11,)")):
        flow._C.smooth_l1_loss(flow.randn(10), flow.randn(11), 1.0, "mean")
    with pytest.raises(RuntimeError, match=_words("beta must be greater than or equal to 0, but found it to be -1")):
        flow._C.smooth_l1_loss(flow.randn(10), flow.randn(10), -1.0, "mean")
    with pytest.raises(TypeError, match=_words("input and target are expected to have the same dtype, but found "
                                               "kFloat and kDouble")):
        flow._C.smooth_l1_loss(flow.randn(10), flow.randn(10, dtype=flow.float64), 1.0, "mean")
    # OneFlow 0.9's nn.functional.smooth_l1_loss and nn.SmoothL1Loss are _C.smooth_l1_loss: no broadcast
    with pytest.raises(RuntimeError, match=_words("The size of input (2,3) must match the size of target (3,)")):
        flow.nn.SmoothL1Loss()(flow.randn(2, 3), flow.randn(3))
    x, t = np.array([0.0, 1.0, 3.0], np.float32), np.array([0.5, 1.0, 0.0], np.float32)
    d = np.abs(x - t)
    want = np.where(d < 1.0, 0.5 * d * d, d - 0.5)
    np.testing.assert_allclose(flow._C.smooth_l1_loss(flow.tensor(x), flow.tensor(t), 1.0, "none").numpy(), want)
    np.testing.assert_allclose(flow._C.smooth_l1_loss(flow.tensor(x), flow.tensor(t), 1.0, "sum").numpy(), want.sum(),
                               rtol=1e-6)


def test_unknown_reduction():
    x = flow.ones(4, 4)
    with pytest.raises(RuntimeError) as e:
        flow._C.mse_loss(x, x, "just_test")
    assert str(e.value).startswith("Reduction should be none, sum or mean.")
    with pytest.raises(ValueError):  # still a ValueError, as before
        flow._C.l1_loss(x, x, "just_test")
    np.testing.assert_allclose(flow._C.mse_loss(x, flow.zeros(4, 4), "sum").numpy(), 16.0)


# --- core/functional/impl/nn_functor.cpp PixelShuffleFunctor, OneHotFunctor, NormalizationFunctor ----------------
def test_pixel_shuffle_checks():
    with pytest.raises(RuntimeError, match=_words("Only Accept 4D Tensor")):
        flow._C.pixel_shuffle(flow.ones(1, 8, 4, 4, 1), 2, 2)
    with pytest.raises(RuntimeError, match=_words("The channels of input tensor must be divisible by (upscale_factor "
                                                  "* upscale_factor) or (h_upscale_factor * w_upscale_factor)")):
        flow._C.pixel_shuffle(flow.ones(1, 8, 4, 4), 2, 3)
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 2, 2)
    want = x.reshape(1, 1, 2, 2, 2, 2).transpose(0, 1, 4, 2, 5, 3).reshape(1, 1, 4, 4)
    np.testing.assert_array_equal(flow._C.pixel_shuffle(flow.tensor(x), 2, 2).numpy(), want)


def test_one_hot_index_tensors_and_value_dtype():
    with pytest.raises(RuntimeError, match=_words("one_hot is only applicable to index tensor.")):
        flow._C.one_hot(flow.ones(3, 3), 3, 0.9, 0)
    with pytest.raises(RuntimeError, match=_words("one_hot is only applicable to index tensor.")):
        F.one_hot(flow.ones(3), 3)
    idx = flow.tensor([0, 2])
    soft = flow._C.one_hot(idx, 3, 0.9, 0)  # a float on / off value: float32 values (OneFlow's kFloat)
    assert soft.dtype == flow.float32
    np.testing.assert_allclose(soft.numpy(), [[0.9, 0, 0], [0, 0, 0.9]], rtol=1e-6)
    hard = F.one_hot(idx, -1)  # ints: int64, depth max + 1
    assert hard.dtype == flow.int64
    np.testing.assert_array_equal(hard.numpy(), [[1, 0, 0], [0, 0, 1]])


def test_normalization_checks():
    w, b = flow.ones(4), flow.ones(4)
    with pytest.raises(RuntimeError, match=_words("Both running_mean and running_variance should be None or "
                                                  "Tensor.")):
        flow._C.normalization(flow.ones(1, 4, 2, 2), flow.ones(4), None, w, b, 1, 1e-5, 0.9, False)
    with pytest.raises(RuntimeError, match=_words("NumAxes of x should be greater or equal than 2. ")):
        flow._C.normalization(flow.ones(1), None, None, w, b, 1, 1e-5, 0.9, False)
    with pytest.raises(RuntimeError, match=_words("Must have moving_mean and moving_variance in eval mode.")):
        flow._C.normalization(flow.ones(1, 2), None, None, flow.ones(2), flow.ones(2), 1, 1e-5, 0.9, False)
    with pytest.raises(ValueError):  # still a ValueError, as before
        F.batch_norm(flow.ones(1, 2), None, None, training=False)
    x = np.array([[1.0, 2.0], [3.0, 6.0]], np.float32)
    got = flow._C.normalization(flow.tensor(x), None, None, flow.ones(2), flow.zeros(2), 1, 0.0, 0.9, True)
    np.testing.assert_allclose(got.numpy(), (x - x.mean(0)) / x.std(0), rtol=1e-5)


# --- core/functional/impl/random_functor.cpp NormalFunctor -------------------------------------------------------
def test_normal_checks_and_out():
    with pytest.raises(NotImplementedError, match=_words("Only support float and double in normal().")):
        flow._C.normal(mean=0.0, std=1.0, size=(3, 3), dtype=flow.int32)
    with pytest.raises(RuntimeError, match=_words("data type oneflow.float32 does not match data type of out "
                                                  "parameter oneflow.float64")):
        flow._C.normal(mean=0.0, std=1.0, size=(3, 3), dtype=flow.float32, out=flow.zeros(3, 3, dtype=flow.float64))
    with pytest.raises(RuntimeError, match=_words("device type cuda:0 does not match device type of out parameter "
                                                  "cpu:0")):
        flow._C.normal(mean=0.0, std=1.0, size=(3, 3), out=flow.zeros(3, 3), device="cuda")
    # without dtype, out's dtype: the draws are float64 ones, as flow.randn's
    out = flow.zeros(2, 3, dtype=flow.float64)
    flow.manual_seed(3)
    got = flow._C.normal(mean=0.0, std=1.0, size=(2, 3), out=out)
    flow.manual_seed(3)
    np.testing.assert_array_equal(out.numpy(), flow.randn(2, 3, dtype=flow.float64).numpy())
    assert got is out
