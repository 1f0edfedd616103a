"""Causes found by running OneFlow 0.9's autotest-based module tests (python/oneflow/test/modules at v0.9.0, which
run one random program on OneFlow and on torch, eagerly and inside an nn.Graph, and compare): each case states
OneFlow 0.9's rule and checks it here against numpy (or against the eager result)."""
import numpy as np
import pytest

import oneflow_compat as flow


def test_add_and_sub_scale_a_python_number_by_alpha():
    # flow.add(x, 2.0, alpha=3.0) is x + 6 (a scalar `other` is multiplied by alpha as a number)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = flow.tensor(a)
    np.testing.assert_allclose(flow.add(x, 2.0, alpha=3.0).numpy(), a + 6.0)
    np.testing.assert_allclose(flow.sub(x, 2.0, alpha=3.0).numpy(), a - 6.0)
    np.testing.assert_allclose(flow.add(x.mean(), 1.5, alpha=-2.0).numpy(), a.mean() - 3.0, rtol=1e-6)
    assert flow.add(x, 2.0, alpha=3.0).dtype is flow.float32


def test_inplace_method_on_a_captured_eager_tensor_inside_graph_build():
    # inside nn.Graph.build, `x.add_(y)` on an eager tensor captured from outside gives the op's lazy result;
    # the graph's output equals the eager in-place result and the outside tensor keeps its value
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = flow.tensor(a)
    y = flow.tensor(np.full((2, 3), 0.5, np.float32))

    class G(flow.nn.Graph):
        def build(self):
            return x.add_(y)

    out = G()()
    np.testing.assert_allclose(out.numpy(), a + 0.5)
    np.testing.assert_array_equal(x.numpy(), a)


def test_inplace_inside_graph_on_a_leaf_requiring_grad_is_no_eager_autograd_error():
    # eager autograd's "leaf Variable used in an in-place operation" check does not apply while tracing a graph
    a = np.ones((2, 2), np.float32)
    w = flow.tensor(a, requires_grad=True)

    class G(flow.nn.Graph):
        def build(self):
            return w.mul_(3.0)

    np.testing.assert_allclose(G()().numpy(), a * 3.0)
    with pytest.raises(RuntimeError, match="leaf Tensor that requires grad"):
        w.mul_(3.0)  # eager: still refused


def test_optimizer_takes_an_empty_parameter_iterator():
    # OneFlow 0.9's Optimizer._parse_input_parameters makes one empty group of an exhausted iterator:
    # SGD(m.parameters()) on a module with no parameters (BatchNorm with affine=False) is valid; a step is a no-op
    m = flow.nn.BatchNorm1d(3, affine=False)
    opt = flow.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    assert len(opt.param_groups) == 1 and opt.param_groups[0]["params"] == []
    opt.step()
    opt.zero_grad()
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        flow.optim.SGD([], lr=0.1)  # an empty list stays an error


def test_tensor_with_no_arguments_is_empty_one_dimensional():
    # TensorEmptyCtorFunctor (tensor_api.cpp@v0.9.0): flow.Tensor() has shape (0,)
    t = flow.Tensor()
    assert tuple(t.shape) == (0,) and t.dtype is flow.float32 and t.numel() == 0


def test_cat_leaves_out_empty_one_dimensional_inputs():
    # ConcatFunctor skips inputs with no element and one dimension, whatever the others' shapes
    a = np.random.RandomState(0).randn(2, 6, 5, 3).astype(np.float32)
    e, x = flow.Tensor(), flow.tensor(a, requires_grad=True)
    np.testing.assert_array_equal(flow.cat([e, x], dim=0).numpy(), a)
    np.testing.assert_array_equal(flow.cat([x, e, x, e], dim=1).numpy(), np.concatenate([a, a], axis=1))
    out = flow.cat([e, x, e, x], dim=0)
    assert tuple(out.shape) == (4, 6, 5, 3)
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(a.shape, 2.0, np.float32))
    assert tuple(flow.cat([e, e]).shape) == (0,)
    with pytest.raises(ValueError, match="Tensors must have same number of dimensions"):
        flow.cat([flow.ones(2, 3), flow.ones(2, 3, 1)])  # non-empty inputs must still agree


def test_arange_reads_one_element_tensor_bounds_also_inside_graph_build():
    # arange_op calls .item() on tensor bounds (arange.py@v0.9.0); inside nn.Graph.build an eager bound captured
    # from outside is read the same way
    s, e = flow.tensor(1.5), flow.tensor(4.0)
    np.testing.assert_allclose(flow.arange(start=s, end=e).numpy(), np.arange(1.5, 4.0, dtype=np.float32))
    assert flow.arange(flow.tensor(5)).dtype is flow.int64
    np.testing.assert_array_equal(flow.arange(flow.tensor(5)).numpy(), np.arange(5))

    class G(flow.nn.Graph):
        def build(self):
            return flow.arange(start=s, end=e, step=flow.tensor(0.5))

    np.testing.assert_allclose(G()().numpy(), np.arange(1.5, 4.0, 0.5, dtype=np.float32))


def test_gather_index_smaller_than_input_outside_dim():
    # DimGatherFunctor (array_functor.cpp@v0.9.0): the output has the index's shape; outside `dim` the index may
    # be smaller than the input (out[i][j][k] = x[i][index[i][j][k]][k])
    rs = np.random.RandomState(1)
    a = rs.randn(3, 4, 5).astype(np.float32)
    idx = rs.randint(0, 4, size=(2, 3, 4))
    x = flow.tensor(a, requires_grad=True)
    out = flow.gather(x, 1, flow.tensor(idx))
    i, _, k = np.meshgrid(np.arange(2), np.arange(3), np.arange(4), indexing="ij")
    np.testing.assert_array_equal(out.numpy(), a[i, idx, k])
    np.testing.assert_array_equal(x.gather(1, flow.tensor(idx)).numpy(), a[i, idx, k])
    out.sum().backward()
    grad = np.zeros_like(a)
    np.add.at(grad, (i, idx, k), 1.0)
    np.testing.assert_array_equal(x.grad.numpy(), grad)
    b = flow.tensor(rs.rand(3, 4) > 0.5)
    np.testing.assert_array_equal(flow.gather(b, 0, flow.tensor([[2, 0]])).numpy(), b.numpy()[[2, 0], [0, 1]][None])


def test_gather_zero_dim_input_or_index():
    x = flow.tensor(1.0, requires_grad=True)
    out = flow.gather(x, 0, flow.tensor(0))
    assert tuple(out.shape) == () and out.item() == 1.0
    out.backward()
    assert x.grad.item() == 1.0
    assert tuple(flow.gather(x, 0, flow.tensor([0])).shape) == (1,)
    assert tuple(flow.gather(flow.ones(1), 0, flow.tensor(0)).shape) == ()


def test_gather_errors_name_the_mismatch():
    with pytest.raises(RuntimeError, match=r"Size does not match at dimension 1 expected index \(2,3\) to be "
                                           r"smaller than self \(2,2\) apart from dimension 0"):
        flow.gather(flow.ones(2, 2), 0, flow.zeros(2, 3, dtype=flow.int64))
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of dimensions as input tensor"):
        flow.gather(flow.ones(2, 2), 0, flow.zeros(2, dtype=flow.int64))
    with pytest.raises(RuntimeError, match="Expected dtype int32 or int64 for index"):
        flow.gather(flow.ones(2, 2), 0, flow.zeros(2, 2))


def test_reshape_to_a_shape_with_zero_dims_and_its_gradient():
    # a zero-size tensor reshapes to any shape of zero elements; the reduce-sum gradient goes through such a reshape
    x = flow.zeros(0, 10, requires_grad=True)
    assert tuple(x.reshape(0, 1, 5, 2).shape) == (0, 1, 5, 2)
    y = flow.tensor(np.ones((4, 0, 5, 2), np.float32), requires_grad=True)
    y.sum(1).sum().backward()
    assert tuple(y.grad.shape) == (4, 0, 5, 2)
    with pytest.raises(ValueError, match="Invalid shape dimension -2"):
        flow.ones(2, 3).reshape(-2, -3)


def test_squeeze_of_a_zero_dim_tensor_is_itself():
    t = flow.tensor(3.0)
    assert tuple(t.squeeze(0).shape) == () and tuple(t.squeeze(-1).shape) == () and t.squeeze().item() == 3.0
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.squeeze(1)


def test_logsumexp_follows_oneflow_for_zero_dim_empty_and_infinite_inputs():
    # LogSumExpFunctor (math_functor.cpp@v0.9.0): 0-dim -> itself as float32; empty -> log(sum(exp)) (-inf where
    # nothing is summed); an infinite max is replaced by 0 so that inf inputs give inf, not nan
    assert flow.logsumexp(flow.tensor(2.5, dtype=flow.float64), 0).dtype is flow.float32
    assert flow.tensor(2.5).logsumexp(0).item() == 2.5
    out = flow.logsumexp(flow.zeros(4, 3, 0, 2), 2)
    np.testing.assert_array_equal(out.numpy(), np.full((4, 3, 2), -np.inf, np.float32))
    assert tuple(flow.logsumexp(flow.zeros(4, 3, 0, 2), 0).shape) == (3, 0, 2)
    b = np.array([[1.0, np.inf], [-np.inf, -np.inf], [1.0, 2.0]], np.float32)
    with np.errstate(divide="ignore"):
        expected = np.array([np.inf, -np.inf, np.log(np.exp(1.0) + np.exp(2.0))], np.float32)
    np.testing.assert_allclose(flow.logsumexp(flow.tensor(b), 1).numpy(), expected, rtol=1e-6)
    a = np.random.RandomState(2).randn(3, 4).astype(np.float32)
    x = flow.tensor(a, requires_grad=True)
    flow.logsumexp(x, 1).sum().backward()
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(x.grad.numpy(), e / e.sum(1, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("sa,sb", [((1, 1, 6, 4), (1, 4, 4, 4)), ((1, 1), (1, 3, 1, 6)), ((3, 2, 5), (4, 1, 5, 2)),
                                   ((2, 5), (3, 5, 4))])
def test_matmul_broadcasts_batch_dims(sa, sb):
    # batch dims broadcast as numpy.matmul's; each input's gradient sums back over the dims it was broadcast along
    rs = np.random.RandomState(3)
    a, b = rs.randn(*sa).astype(np.float32), rs.randn(*sb).astype(np.float32)
    x, y = flow.tensor(a, requires_grad=True), flow.tensor(b, requires_grad=True)
    out = flow.matmul(x, y)
    expected = np.matmul(a, b)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)
    out.sum().backward()
    ones = np.ones(expected.shape, np.float32)
    ga, gb = np.matmul(ones, np.swapaxes(b, -1, -2)), np.matmul(np.swapaxes(a, -1, -2), ones)
    ga = ga.reshape((-1,) + a.shape).sum(0) if ga.ndim > a.ndim else ga
    gb = gb.reshape((-1,) + b.shape).sum(0) if gb.ndim > b.ndim else gb
    ga = ga.sum(axis=tuple(i for i in range(a.ndim - 2) if a.shape[i] == 1 and ga.shape[i] != 1), keepdims=True)
    gb = gb.sum(axis=tuple(i for i in range(b.ndim - 2) if b.shape[i] == 1 and gb.shape[i] != 1), keepdims=True)
    np.testing.assert_allclose(x.grad.numpy(), ga, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y.grad.numpy(), gb, rtol=1e-5, atol=1e-5)


def test_matmul_batch_dims_that_do_not_broadcast():
    with pytest.raises(RuntimeError, match=r"matmul\(\): the batch dims of shapes \(2, 3, 4\) and \(3, 4, 5\) do "
                                           r"not broadcast"):
        flow.matmul(flow.ones(2, 3, 4), flow.ones(3, 4, 5))


def test_vector_norm_ord_zero_counts_and_passes_a_zero_gradient():
    # VectorNormFunctor counts with not_equal_zero, an op of x's dtype whose gradient is 0: the result is connected
    # to x (requires_grad) and backward gives zeros; nan and inf count as non-zero
    a = np.array([[0.0, 1.5, np.inf], [0.0, 0.0, np.nan]], np.float32)
    x = flow.tensor(a, requires_grad=True)
    with np.errstate(invalid="ignore"):
        r = flow.linalg.vector_norm(x, ord=0, dim=(0, 1))
        assert r.requires_grad and r.item() == 3.0
        r.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros_like(a))
    np.testing.assert_array_equal(flow.linalg.vector_norm(flow.tensor(a), ord=0, dim=1, keepdim=True).numpy(),
                                  [[2.0], [1.0]])


def test_mean_of_a_zero_dim_tensor_along_its_dim():
    y = flow.tensor(2.0, requires_grad=True)
    m = y.mean(-1)
    assert tuple(m.shape) == () and m.item() == 2.0
    m.backward()
    assert y.grad.item() == 1.0
    assert flow.tensor(4.0).mean(0, keepdim=True).item() == 4.0


def test_cross_entropy_with_unnormalised_probability_targets_has_the_exact_gradient():
    # CrossEntropyProbFunctor composes -sum(log_softmax(x) * t): d/dx = softmax(x) * sum(t) - t (per row, / rows
    # for the mean), also when the target rows do not sum to 1
    rs = np.random.RandomState(4)
    a, t = rs.rand(5, 3, 2).astype(np.float32), rs.rand(5, 3, 2).astype(np.float32)
    x = flow.tensor(a, requires_grad=True)
    loss = flow.nn.functional.cross_entropy(x, flow.tensor(t))
    rows, trows = a.transpose(0, 2, 1).reshape(-1, 3), t.transpose(0, 2, 1).reshape(-1, 3)
    logp = rows - rows.max(1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
    np.testing.assert_allclose(loss.item(), -(logp * trows).sum(1).mean(), rtol=1e-5)
    loss.backward()
    grad = (np.exp(logp) * trows.sum(1, keepdims=True) - trows) / rows.shape[0]
    np.testing.assert_allclose(x.grad.numpy(), grad.reshape(5, 2, 3).transpose(0, 2, 1), rtol=1e-4, atol=1e-6)


def test_prod_takes_dtype_and_multiplies_bool_as_int64():
    # flow.prod is _C.reduce_prod (ReduceProdFunctor): `dtype` casts the input first; bool -> int64
    a = np.array([[1.5, 2.7, 3.2], [1.1, 3.9, 2.0]], np.float32)
    out = flow.prod(flow.tensor(a), 1, dtype=flow.int32)
    assert out.dtype is flow.int32
    np.testing.assert_array_equal(out.numpy(), np.prod(a.astype(np.int32), 1))
    assert flow.tensor(a).prod(dtype=flow.float64).dtype is flow.float64
    b = flow.tensor(np.array([True, True, False]))
    assert flow.prod(b).dtype is flow.int64 and flow.prod(b).item() == 0
    assert flow.tensor(np.array([2, 3], np.int32)).prod().dtype is flow.int32


def test_var_and_std_are_nan_without_enough_elements():
    # IsNanOut (variance_kernel_util.h@v0.9.0): no element, or one element with the unbiased divisor, gives nan
    x = flow.tensor(np.array([0.87], np.float32), requires_grad=True)
    v = flow.var(x)
    assert np.isnan(v.item())
    v.backward()
    assert np.isnan(x.grad.numpy()).all()
    assert flow.var(flow.tensor(np.array([0.87], np.float32)), unbiased=False).item() == 0.0
    out = flow.var(flow.zeros(2, 3, 0, 4), dim=-2, keepdim=True)
    assert tuple(out.shape) == (2, 3, 1, 4) and np.isnan(out.numpy()).all()
    a = np.random.RandomState(5).rand(1, 2, 6, 1).astype(np.float32)
    assert np.isnan(flow.std(flow.tensor(a), dim=-1).numpy()).all()
    np.testing.assert_allclose(flow.var(flow.tensor(a), dim=2).numpy(), a.var(2, ddof=1), rtol=1e-5)
