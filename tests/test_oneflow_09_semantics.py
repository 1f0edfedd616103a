"""Behaviours OneFlow 0.9 documents (the examples of its docstrings, `python/oneflow/framework/docstr/*.py` and
`nn/modules/*.py` at v0.9.0) where this implementation once differed: each case states OneFlow's rule and checks it
against numpy written here."""
import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.nn.functional as F


def test_kl_div_is_zero_where_the_target_is_not_positive():
    # KLDivLoss's example: the negative target's entry is 0 (OneFlow's kernel: target > 0 ? t (log t - x) : 0),
    # and it passes no gradient
    x = flow.tensor(np.array([-0.9021705, 0.08798598, 1.04686249], np.float32), requires_grad=True)
    t = np.array([1.22386942, -0.89729659, 0.01615712], np.float32)
    out = F.kl_div(x, flow.tensor(t), reduction="none")
    expected = np.where(t > 0, t * (np.log(np.where(t > 0, t, 1)) - x.numpy()), 0)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(out.numpy(), [1.3514, 0.0, -0.0836], atol=1e-4)
    np.testing.assert_allclose(F.kl_div(x, flow.tensor(t), reduction="mean").numpy(), 0.4226, atol=1e-4)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(t > 0, -t, 0), rtol=1e-6)


def test_sort_and_argsort_give_int32_indices_topk_int64():
    # sort.py / argsort.py docstrings: indices dtype=oneflow.int32 (arg_sort); topk's are int64
    x = flow.tensor(np.array([[10, 2, 9, 3, 7], [1, 9, 4, 3, 2]], np.float32))
    result = flow.sort(x)
    assert result.indices.dtype is flow.int32 and flow.argsort(x, descending=True).dtype is flow.int32
    np.testing.assert_array_equal(result.indices.numpy(), [[1, 3, 4, 2, 0], [0, 4, 3, 2, 1]])
    np.testing.assert_array_equal(flow.argsort(x, dim=0).numpy(), np.argsort(x.numpy(), 0, kind="stable"))
    assert flow.topk(x, 2).indices.dtype is flow.int64


def test_unique_in_first_appearance_order_and_its_index_dtype():
    # unique.py: unique(input, sorted=True, return_inverse=False, return_counts=False, dtype=flow.int)
    x = flow.tensor([3, 1, 2, 0, 2])
    np.testing.assert_array_equal(flow.unique(x).numpy(), [0, 1, 2, 3])
    values, inverse, counts = flow.unique(x, sorted=False, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(values.numpy(), [3, 1, 2, 0])
    np.testing.assert_array_equal(inverse.numpy(), [0, 1, 2, 3, 2])
    np.testing.assert_array_equal(values.numpy()[inverse.numpy()], x.numpy())
    np.testing.assert_array_equal(counts.numpy(), [1, 1, 2, 1])
    assert inverse.dtype is flow.int32 and counts.dtype is flow.int32
    _, inverse = flow.unique(x, return_inverse=True, dtype=flow.long)
    assert inverse.dtype is flow.int64
    np.testing.assert_array_equal(inverse.numpy(), [3, 1, 2, 0, 2])
    m = flow.tensor(np.array([[5, 5], [4, 6]]))
    _, inverse = m.unique(sorted=False, return_inverse=True)
    np.testing.assert_array_equal(inverse.numpy(), [[0, 0], [1, 2]])  # input's shape


def test_argwhere_defaults_to_int32_and_nonzero_of_a_number():
    x = flow.tensor(np.array([[0, 1, 0], [2, 0, 3]], np.float32))
    out = flow.argwhere(x)
    assert out.dtype is flow.int32
    np.testing.assert_array_equal(out.numpy(), [[0, 1], [1, 0], [1, 2]])
    (idx,) = flow.nonzero(flow.tensor(5), as_tuple=True)
    np.testing.assert_array_equal(idx.numpy(), [0])
    (idx,) = flow.nonzero(flow.tensor(0), as_tuple=True)
    assert idx.numpy().tolist() == []
    assert tuple(flow.nonzero(flow.tensor(5)).shape) == (1, 0)


def test_tensor_tile_takes_the_repetitions_one_by_one():
    a = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    x = flow.tensor(a)
    np.testing.assert_array_equal(x.tile(2, 1, 2, 1).numpy(), np.tile(a, (2, 1, 2, 1)))
    np.testing.assert_array_equal(x.tile(3, 4).numpy(), np.tile(a, (3, 4)))
    np.testing.assert_array_equal(x.tile((2, 2)).numpy(), np.tile(a, (2, 2)))
    np.testing.assert_array_equal(flow.tile(x, (2,)).numpy(), np.tile(a, 2))


def test_dropout_with_an_addend_and_in_place():
    # dropout.py's docstring: F.dropout(x, p=0, addend=addend) is x + addend; the fused op adds it in eval too
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.full((3, 4), 0.5, np.float32)
    x, addend = flow.tensor(a), flow.tensor(b)
    np.testing.assert_array_equal(F.dropout(x, p=0, addend=addend).numpy(), a + b)
    np.testing.assert_array_equal(F.dropout(x, p=0.9, training=False, addend=addend).numpy(), a + b)
    flow.manual_seed(3)
    out = F.dropout(x, p=0.5, addend=addend).numpy()
    kept = out != b
    assert 0 < kept.sum() < 12  # with p=0.5 some of the 11 non-zero entries go, some stay
    np.testing.assert_allclose(out[kept], a[kept] * 2 + 0.5)
    np.testing.assert_array_equal(out[~kept & (a != 0)], 0.5)
    m = flow.nn.Dropout(p=0.0)
    np.testing.assert_array_equal(m(x, addend=addend).numpy(), a + b)
    m = flow.nn.Dropout(p=0.5, inplace=True)
    y = flow.tensor(a.copy())
    out = m(y)
    assert out is y and ((y.numpy() == 0) | (y.numpy() == 2 * a)).all()
    g = flow.tensor(a, requires_grad=True)
    h = g * 1
    F.dropout(h, p=0.0, addend=addend).sum().backward()
    np.testing.assert_array_equal(g.grad.numpy(), np.ones_like(a))


def test_like_creators_take_a_device_or_a_placement_and_sbp():
    # constant.py's full_like example: a local input with placement and sbp gives a global tensor
    x = flow.randn(2, 3)
    y = flow.full_like(x, 5.0, placement=flow.placement("cpu", ranks=[0]), sbp=flow.sbp.broadcast)
    assert y.is_global and y.sbp == (flow.sbp.broadcast,)
    np.testing.assert_array_equal(y.numpy(), np.full((2, 3), 5.0, np.float32))
    assert flow.full_like(x, 2, dtype=flow.int32).dtype is flow.int32
    g = flow.ones(4, 2, placement=flow.placement("cpu", ranks=[0]), sbp=flow.sbp.split(0))
    for make in (flow.zeros_like, flow.ones_like, flow.empty_like):
        out = make(g)
        assert out.is_global and out.sbp == (flow.sbp.split(0),) and tuple(out.shape) == (4, 2)
        assert make(g, sbp=flow.sbp.broadcast).sbp == (flow.sbp.broadcast,)
        assert make(g, device="cpu").is_local
    np.testing.assert_array_equal(flow.ones_like(g, sbp=flow.sbp.broadcast).numpy(), np.ones((4, 2)))
    with pytest.raises(ValueError, match="argument 'sbp' must not be None when argument 'placement' exist and "
                                         "Tensor is local"):
        flow.zeros_like(x, placement=flow.placement("cpu", ranks=[0]))
    with pytest.raises(ValueError, match="argument 'placement' and 'sbp' must be None when argument 'device'"):
        flow.ones_like(g, device="cpu", sbp=flow.sbp.broadcast)


def test_where_of_two_numbers_takes_their_type_not_the_conditions():
    cond = flow.tensor(np.array([1, 0, 1], np.int32))
    out = flow.where(cond, 0.5, 2.0)
    assert out.dtype is flow.float32
    np.testing.assert_array_equal(out.numpy(), [0.5, 2.0, 0.5])
    out = flow.where(cond > 0, 3, 4)
    assert out.dtype is flow.int64
    np.testing.assert_array_equal(out.numpy(), [3, 4, 3])
    assert flow.where(cond > 0, True, False).dtype is flow.bool
    np.testing.assert_array_equal(flow.where(cond, flow.tensor([1.5, 2.5, 3.5]), 0).numpy(), [1.5, 0, 3.5])
