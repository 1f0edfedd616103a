"""oneflow._C's elementwise, comparison and reduction names (functional_api.yaml v0.9.0), called with the yaml's
keyword names and checked against numpy; gradients through the composed ones; two simulated ranks; bad input."""
import math

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import _C
from simulated_ranks import on_ranks

RNG = np.random.RandomState(11)
A = RNG.randn(3, 4).astype(np.float32)
B = RNG.randn(3, 4).astype(np.float32)
POS = (RNG.rand(3, 4) + 0.2).astype(np.float32)
UNIT = (RNG.rand(3, 4) * 1.6 - 0.8).astype(np.float32)

_erf = np.vectorize(math.erf)
_lgamma = np.vectorize(math.lgamma)

UNARY = [
    ("reciprocal", POS, lambda a: 1 / a), ("sin", A, np.sin), ("cos", A, np.cos), ("cosh", A, np.cosh),
    ("sinh", A, np.sinh), ("tan", UNIT, np.tan), ("log2", POS, np.log2), ("sqrt", POS, np.sqrt),
    ("rsqrt", POS, lambda a: 1 / np.sqrt(a)), ("square", A, np.square), ("abs", A, np.abs), ("ceil", A, np.ceil),
    ("floor", A, np.floor), ("erf", A, _erf), ("erfc", A, lambda a: 1 - _erf(a)), ("expm1", A, np.expm1),
    ("lgamma", POS, _lgamma), ("log1p", POS, np.log1p), ("round", A * 3, np.round), ("rint", A * 3, np.rint),
    ("sign", A, np.sign),
]


@pytest.mark.parametrize("name,a,ref", UNARY, ids=[u[0] for u in UNARY])
def test_unary_with_the_yaml_keyword_x(name, a, ref):
    got = getattr(_C, name)(x=flow.tensor(a)).numpy()
    np.testing.assert_allclose(got, ref(a.astype(np.float64)), rtol=1e-5, atol=1e-6)


def test_reciprocal_no_nan_and_the_predicates():
    a = np.array([0.0, 2.0, -4.0, np.inf, np.nan], np.float32)
    np.testing.assert_allclose(_C.reciprocal_no_nan(x=flow.tensor(a[:3])).numpy(), [0.0, 0.5, -0.25])
    np.testing.assert_array_equal(_C.isnan(input=flow.tensor(a)).numpy(), np.isnan(a))
    np.testing.assert_array_equal(_C.isinf(input=flow.tensor(a)).numpy(), np.isinf(a))
    np.testing.assert_array_equal(_C.isfinite(input=flow.tensor(a)).numpy(), np.isfinite(a))


def test_comparisons_each_overload():
    x, y = flow.tensor(A), flow.tensor(B)
    np.testing.assert_array_equal(_C.less(input=x, other=y).numpy(), A < B)
    np.testing.assert_array_equal(_C.less(x, 0.5).numpy(), A < 0.5)
    np.testing.assert_array_equal(_C.less(0.5, x).numpy(), 0.5 < A)
    np.testing.assert_array_equal(_C.less_equal(input=x, other=y).numpy(), A <= B)
    np.testing.assert_array_equal(_C.less_equal(0.0, x).numpy(), 0.0 <= A)
    np.testing.assert_allclose(_C.minimum(input=x, other=y).numpy(), np.minimum(A, B))
    np.testing.assert_allclose(_C.maximum(input=x, other=y).numpy(), np.maximum(A, B))
    np.testing.assert_allclose(_C.atan2(input=x, other=y).numpy(), np.arctan2(A, B), rtol=1e-5)


def test_pow_floor_and_trunc_divide_overloads():
    x = flow.tensor(POS)
    np.testing.assert_allclose(_C.pow(input=x, exponent=flow.tensor(A)).numpy(), POS ** A, rtol=1e-5)
    np.testing.assert_allclose(_C.pow(x, 2.0).numpy(), POS ** 2, rtol=1e-6)
    np.testing.assert_allclose(_C.pow(2.0, x).numpy(), 2.0 ** POS, rtol=1e-6)  # ScalarReversePow
    z = flow.tensor(POS.copy())
    assert _C.pow(z, 2.0, inplace=True) is z
    np.testing.assert_allclose(z.numpy(), POS ** 2, rtol=1e-6)
    i = flow.tensor(np.array([7, -7, 5], np.int64))
    j = flow.tensor(np.array([2, 2, -3], np.int64))
    np.testing.assert_array_equal(_C.floor_divide(input=i, other=j).numpy(), [3, -4, -2])
    np.testing.assert_array_equal(_C.trunc_divide(input=i, other=j).numpy(), [3, -3, -1])
    assert _C.trunc_divide(i, j).dtype == flow.int64
    np.testing.assert_allclose(_C.trunc_divide(flow.tensor(A * 5), 2.0).numpy(), np.trunc(A * 5 / 2.0))


def test_max_min_return_a_value_a_pair_or_the_elementwise_form():
    x = flow.tensor(A)
    assert float(_C.max(input=x).numpy()) == A.max()
    values, indices = _C.max(input=x, dim=1, keepdim=True)
    np.testing.assert_array_equal(values.numpy(), A.max(1, keepdims=True))
    np.testing.assert_array_equal(indices.numpy(), A.argmax(1)[:, None])
    values, indices = _C.min(x, 0)
    np.testing.assert_array_equal(values.numpy(), A.min(0))
    np.testing.assert_array_equal(indices.numpy(), A.argmin(0))
    np.testing.assert_array_equal(_C.max(x, flow.tensor(B)).numpy(), np.maximum(A, B))
    np.testing.assert_array_equal(_C.min(x, flow.tensor(B)).numpy(), np.minimum(A, B))


def test_reductions_with_the_yaml_names():
    x = flow.tensor(A)
    np.testing.assert_allclose(_C.reduce_sum(x=x, dim=[1], keepdim=True).numpy(), A.sum(1, keepdims=True),
                               rtol=1e-6)
    assert _C.reduce_sum(x=x).shape == ()
    np.testing.assert_allclose(_C.reduce_sum(x).numpy(), A.sum(), rtol=1e-5)
    np.testing.assert_allclose(_C.reduce_mean(x=x, dim=0).numpy(), A.mean(0), rtol=1e-6)
    np.testing.assert_allclose(_C.reduce_prod(x=x, dim=[0, 1]).numpy(), A.prod(), rtol=1e-5)
    assert _C.reduce_prod(x=x, dtype=flow.float64).dtype == flow.float64
    # OneFlow's functors: bool sums and products are int64
    assert _C.reduce_prod(x=flow.tensor(A > 0), dim=[1]).dtype == flow.int64
    assert _C.reduce_sum(x=flow.tensor(A > 0), dim=[1]).dtype == flow.int64
    np.testing.assert_array_equal(_C.reduce_prod(flow.tensor(A > -5), dim=[1]).numpy(), [1, 1, 1])
    np.testing.assert_array_equal(_C.reduce_max(x=x, axis=[1], keepdim=False).numpy(), A.max(1))
    np.testing.assert_array_equal(_C.reduce_min(x=x, axis=[0]).numpy(), A.min(0))
    np.testing.assert_array_equal(_C.amax(input=x, dim=1, keepdim=True).numpy(), A.max(1, keepdims=True))
    np.testing.assert_array_equal(_C.amin(input=x).numpy(), A.min())
    b = flow.tensor(A > 0)
    np.testing.assert_array_equal(_C.reduce_all(x=b, dim=[1]).numpy(), (A > 0).all(1))
    np.testing.assert_array_equal(_C.reduce_any(x=b, dim=0, keepdim=True).numpy(), (A > 0).any(0, keepdims=True))
    np.testing.assert_array_equal(_C.reduce_any(x=b).numpy(), (A > 0).any())
    want = np.log(np.exp(A.astype(np.float64)).sum(1))
    np.testing.assert_allclose(_C.logsumexp(x=x, dim=[1], keepdim=False).numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(_C.std(x=x, dim=[1]).numpy(), A.std(1, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(_C.var(x=x, dim=0, unbiased=False, keepdim=True).numpy(),
                               A.var(0, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(_C.sqrt_square_sum(x=x).numpy(), np.sqrt((A.astype(np.float64) ** 2).sum()),
                               rtol=1e-5)
    got = _C.argmin(x=x, dim=1, keepdim=True, dtype=flow.int32)
    assert got.dtype == flow.int32
    np.testing.assert_array_equal(got.numpy(), A.argmin(1)[:, None])


def test_two_stage_reductions_on_one_device():
    x = flow.tensor(np.array([[1.0, 3.0, 3.0], [2.0, 0.0, -1.0]], np.float32))
    out, mask, count = _C.reduce_max_device_stage(input=x, axis=[1])
    np.testing.assert_array_equal(out.numpy(), [[3.0], [2.0]])
    np.testing.assert_array_equal(mask.numpy(), [[0, 1, 1], [1, 0, 0]])
    np.testing.assert_array_equal(count.numpy(), [[2], [1]])
    y, gmask = _C.reduce_max_global_stage(input=out, device_count=count, axis=[1], keepdims=False)
    np.testing.assert_array_equal(y.numpy(), [3.0, 2.0])
    out, mask, count = _C.reduce_min_device_stage(x, [1])
    np.testing.assert_array_equal(out.numpy(), [[1.0], [-1.0]])
    y, _ = _C.reduce_min_global_stage(out, count, [1], keepdims=True)
    np.testing.assert_array_equal(y.numpy(), [[1.0], [-1.0]])


def test_grad_names_compose_the_derivatives():
    x, dy = flow.tensor(UNIT), flow.tensor(B)
    np.testing.assert_allclose(_C.cosh_grad(x=x, dy=dy).numpy(), B * np.sinh(UNIT), rtol=1e-5)
    np.testing.assert_allclose(_C.tan_grad(x=x, dy=dy).numpy(), B / np.cos(UNIT) ** 2, rtol=1e-5)
    np.testing.assert_allclose(_C.tanh_grad(x=x, dy=dy).numpy(), B * (1 - np.tanh(UNIT) ** 2), rtol=1e-5)
    s = 1 / (1 + np.exp(-A))
    np.testing.assert_allclose(_C.sigmoid_grad(y=flow.tensor(s), dy=dy).numpy(), B * s * (1 - s), rtol=1e-5)


def test_gradients_flow_through_the_bindings():
    x = flow.tensor(UNIT, requires_grad=True)
    (_C.reduce_sum(_C.sin(x), dim=[0, 1]) + _C.reduce_max(_C.square(x), axis=[1]).sum()
     + _C.tanh_grad(x, flow.ones_like(x)).sum()).backward()
    t = np.tanh(UNIT)
    want = np.cos(UNIT) + (UNIT ** 2 == (UNIT ** 2).max(1, keepdims=True)) * 2 * UNIT + (-2 * t * (1 - t ** 2))
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-4, atol=1e-6)


def test_two_ranks_split_inputs_give_one_ranks_numbers():
    def body():
        p = flow.placement("cpu", [0, 1])
        x = flow.tensor(A, placement=p, sbp=flow.sbp.split(1), requires_grad=True)
        s = _C.reduce_sum(x=x, dim=[1])
        s.sum().backward()
        values, indices = _C.max(x, 1)
        return (s.numpy(), _C.logsumexp(x, [1]).numpy(), values.numpy(), indices.numpy(),
                _C.less(x, 0.0).numpy(), x.grad.numpy())

    for got in on_ranks(2, body):
        np.testing.assert_allclose(got[0], A.sum(1), rtol=1e-5)
        np.testing.assert_allclose(got[1], np.log(np.exp(A.astype(np.float64)).sum(1)), rtol=1e-5)
        np.testing.assert_array_equal(got[2], A.max(1))
        np.testing.assert_array_equal(got[3], A.argmax(1))
        np.testing.assert_array_equal(got[4], A < 0)
        np.testing.assert_array_equal(got[5], np.ones_like(A))


def test_bad_input_is_named():
    with pytest.raises(TypeError, match=r"^sin\(\): argument 'x' must be Tensor, not list$"):
        _C.sin([1.0])
    with pytest.raises(TypeError, match=r"^reduce_sum\(\): argument 'x' must be Tensor, not int$"):
        _C.reduce_sum(3, dim=[0])
    with pytest.raises(ValueError, match=r"^reduce_max_device_stage\(\): axis must name at least one dimension$"):
        _C.reduce_max_device_stage(flow.tensor(A), [])
