"""oneflow._C's tensor constructors (tensor_api.yaml v0.9.0): tensor, _legacy_tensor_ctor, from_numpy, from_dlpack,
assign_local_tensor; the global form on two simulated ranks; bad input."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import _C
from simulated_ranks import on_ranks

A = np.arange(6, dtype=np.float32).reshape(2, 3)


def test_constructors():
    t = _C.tensor(A, dtype=flow.float64, requires_grad=True)
    assert t.dtype == flow.float64 and t.requires_grad
    np.testing.assert_array_equal(t.numpy(), A)
    assert _C._legacy_tensor_ctor(2, 3).shape == (2, 3)
    np.testing.assert_array_equal(_C._legacy_tensor_ctor([1.0, 2.0]).numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(_C._legacy_tensor_ctor(flow.tensor(A)).numpy(), A)
    shared = A.copy()
    s = _C.from_numpy(shared)
    shared[0, 0] = 42.0
    assert float(s.numpy()[0, 0]) == 42.0  # the memory is the array's
    d = _C.from_dlpack(np.arange(3, dtype=np.int64))
    np.testing.assert_array_equal(d.numpy(), [0, 1, 2])
    ref = flow.zeros(2, 3)
    assert _C.assign_local_tensor(ref=ref, value=flow.tensor(A)) is None
    np.testing.assert_array_equal(ref.numpy(), A)


def test_global_tensor_on_two_ranks():
    def body():
        p = flow.placement("cpu", [0, 1])
        g = _C.tensor(A, placement=p, sbp=[flow.sbp.split(0)])
        return g.shape, g.to_local().numpy()

    for rank, (shape, local) in enumerate(on_ranks(2, body)):
        assert shape == (2, 3)
        np.testing.assert_array_equal(local, A[rank:rank + 1])


def test_bad_input_is_named():
    with pytest.raises(RuntimeError, match=r"^assign_local_tensor: value \(\(3,\), oneflow.float32\) must have ref's "
                                           r"shape and dtype \(\(2, 3\), oneflow.float32\)$"):
        _C.assign_local_tensor(flow.zeros(2, 3), flow.zeros(3))
