"""oneflow._C names bound earlier under the functional forms' argument names take the yaml's (functional_api.yaml
v0.9.0) names and overloads now, and still take the old keywords."""
import inspect

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import _C

A = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]], np.float32)


@pytest.mark.parametrize("name,ref", [("tanh", np.tanh), ("exp", np.exp), ("sigmoid", lambda a: 1 / (1 + np.exp(-a))),
                                      ("negative", np.negative), ("atan", np.arctan)])
def test_unary_take_x_and_the_old_input(name, ref):
    fn = getattr(_C, name)
    assert list(inspect.signature(fn).parameters) == ["x"]
    np.testing.assert_allclose(fn(x=flow.tensor(A)).numpy(), ref(A), rtol=1e-5)
    np.testing.assert_allclose(fn(input=flow.tensor(A)).numpy(), ref(A), rtol=1e-5)


def test_renamed_arguments():
    x = flow.tensor(A)
    want = np.exp(A) / np.exp(A).sum(1, keepdims=True)
    np.testing.assert_allclose(_C.softmax(x=x, dim=1).numpy(), want, rtol=1e-5)
    np.testing.assert_array_equal(_C.concat(inputs=[x, x], dim=1).numpy(), np.concatenate([A, A], 1))
    np.testing.assert_array_equal(_C.tril(x=x, diagonal=0).numpy(), np.tril(A))


def test_overloads_by_keyword_and_position():
    x = flow.tensor(A)
    np.testing.assert_array_equal(_C.transpose(input=x, perm=[1, 0]).numpy(), A.T)
    np.testing.assert_array_equal(_C.transpose(x, dim0=0, dim1=1).numpy(), A.T)
    np.testing.assert_array_equal(_C.transpose(x, 0, 1).numpy(), A.T)
    np.testing.assert_array_equal(_C.transpose(x=x, perm=[1, 0]).numpy(), A.T)  # the old keyword
    got = _C.argmax(x=x, dim=1, keepdim=True, dtype=flow.int32)
    assert got.dtype == flow.int32
    np.testing.assert_array_equal(got.numpy(), A.argmax(1)[:, None])
    b = A.T.copy()
    np.testing.assert_allclose(_C.tensordot(a=x, b=flow.tensor(b), dims=1).numpy(), A @ b, rtol=1e-6)
    np.testing.assert_allclose(_C.tensordot(x, flow.tensor(b), dims_a=[1], dims_b=[0]).numpy(), A @ b, rtol=1e-6)
    np.testing.assert_allclose(_C.tensordot(x, flow.tensor(b), [1], [0]).numpy(), A @ b, rtol=1e-6)
    z = flow.tensor(A)
    assert _C.fmod(z, 2.0, inplace=True) is z
    np.testing.assert_allclose(z.numpy(), np.fmod(A, 2.0), rtol=1e-6)
    assert _C.max(x, other=flow.zeros(2, 3)).numpy().min() == 0.0
    np.testing.assert_array_equal(_C.arange(end=3).numpy(), [0, 1, 2])
    r = _C.randint(high=4, size=[20])
    assert r.numpy().min() >= 0 and r.numpy().max() < 4
    u = _C.unique(flow.tensor([3, 1, 3]), True, flow.int64)  # unique(x, sorted, dtype)
    np.testing.assert_array_equal(u.numpy(), [1, 3])
    np.testing.assert_allclose(_C.add(inputs=[x, x]).numpy(), 2 * A)
    b = flow.zeros(4)
    assert _C.bernoulli_(input=b, p=1.0) is b
    np.testing.assert_array_equal(b.numpy(), np.ones(4))


def test_tensor_buffer_to_tensor_yaml_order():
    buf = _C.tensor_to_tensor_buffer(flow.tensor(A), instance_dims=1)
    back = _C.tensor_buffer_to_tensor(input=buf, instance_shape=[3], dtype=flow.float32)
    np.testing.assert_array_equal(back.numpy(), A)
    back = _C.tensor_buffer_to_tensor(buf, flow.float32, [3])  # the earlier (x, dtype, instance_shape) order
    np.testing.assert_array_equal(back.numpy(), A)


def test_bad_input_is_named():
    with pytest.raises(TypeError, match=r"^transpose\(\) needs perm, or dim0 and dim1$"):
        _C.transpose(flow.tensor(A))
    with pytest.raises(TypeError, match=r"^comm_broadcast\(\) takes a tensor x or a tensor list inputs$"):
        _C.comm_broadcast()


def test_two_ranks_split_input_gives_one_ranks_numbers():
    from simulated_ranks import on_ranks

    def body():
        p = flow.placement("cpu", [0, 1])
        x = flow.tensor(A, placement=p, sbp=flow.sbp.split(1))
        return (_C.transpose(x, dim0=0, dim1=1).numpy(), _C.argmax(x=x, dim=1, dtype=flow.int32).numpy(),
                _C.softmax(x=x, dim=1).numpy(), _C.concat(inputs=[x, x], dim=0).numpy())

    for t, am, sm, cat in on_ranks(2, body):
        np.testing.assert_array_equal(t, A.T)
        np.testing.assert_array_equal(am, A.argmax(1))
        np.testing.assert_allclose(sm, np.exp(A) / np.exp(A).sum(1, keepdims=True), rtol=1e-5)
        np.testing.assert_array_equal(cat, np.concatenate([A, A]))
