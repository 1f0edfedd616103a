"""oneflow._C's local/global casts, local collectives, point-to-point and runtime helpers (functional_api.yaml
v0.9.0) with the yaml's keyword names, on two simulated ranks; bad input."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import _C
from simulated_ranks import on_ranks

A = np.arange(12, dtype=np.float32).reshape(4, 3)


def test_casts_between_local_and_global_on_two_ranks():
    def body():
        p = flow.placement("cpu", [0, 1])
        rank = flow.env.get_rank()
        local = flow.tensor(A[2 * rank:2 * rank + 2])
        g = _C.to_global(x=local, placement=p, sbp=[flow.sbp.split(0)], grad_sbp=None, check_meta=True, copy=False)
        b = _C.to_global(g, p, [flow.sbp.broadcast], None, True)
        return g.shape, b.to_local().numpy(), _C.to_local(x=g, copy=True).numpy()

    for rank, got in enumerate(on_ranks(2, body)):
        assert got[0] == (4, 3)
        np.testing.assert_array_equal(got[1], A)
        np.testing.assert_array_equal(got[2], A[2 * rank:2 * rank + 2])


def test_to_and_copy_forms():
    x = flow.tensor(A)
    assert _C.to(x, "cpu", flow.float64).dtype == flow.float64
    assert _C.to(x=x, dtype=flow.int32).dtype == flow.int32
    other = flow.tensor([1], dtype=flow.int64)
    y = _C.to(x, other)
    assert y.dtype == flow.int64
    np.testing.assert_array_equal(y.numpy(), A.astype(np.int64))
    c = _C.copy(x=x, device_type="cpu", device_id=0, pin_memory=False)
    assert c is not x
    np.testing.assert_array_equal(c.numpy(), A)
    c[0, 0] = 100.0
    assert float(x.numpy()[0, 0]) == 0.0


def test_local_collectives_on_two_ranks():
    def body():
        rank = flow.env.get_rank()
        x = flow.tensor(A[rank] * (rank + 1))
        b = _C.comm_broadcast(flow.tensor(A[rank]), src_rank=1, inplace=True)
        bs = _C.comm_broadcast([flow.tensor(A[rank]), flow.tensor(A[rank + 2])], src_rank=0, inplace=False)
        gathered = _C.local_all_gather(output=flow.zeros(6), input=x)
        scattered = _C.local_reduce_scatter(output=flow.zeros(3),
                                            input=flow.tensor(np.concatenate([A[rank], A[rank + 2]])))
        reduced = _C.local_reduce(flow.tensor(A[rank]), dst=0, inplace=False)
        return b.numpy(), [t.numpy() for t in bs], gathered.numpy(), scattered.numpy(), reduced.numpy()

    got = on_ranks(2, body)
    for rank, g in enumerate(got):
        np.testing.assert_array_equal(g[0], A[1])
        np.testing.assert_array_equal(g[1][0], A[0])
        np.testing.assert_array_equal(g[1][1], A[2])
        np.testing.assert_array_equal(g[2], np.concatenate([A[0], A[1] * 2]))
        np.testing.assert_array_equal(g[3], (A[0] + A[1]) if rank == 0 else (A[2] + A[3]))
    np.testing.assert_array_equal(got[0][4], A[0] + A[1])
    np.testing.assert_array_equal(got[1][4], A[1])


def test_send_and_recv_on_two_ranks():
    def body():
        if flow.env.get_rank() == 0:
            assert _C.send(input=flow.tensor(A), dst=1, send_meta=True) is None
            _C.send(flow.tensor(A[0]), 1, send_meta=False)
            return None
        meta = _C.recv(src=0)
        raw = _C.recv(0, shape=[3], dtype=flow.float32, device=flow.device("cpu"))
        return meta.numpy(), raw.numpy()

    got = on_ranks(2, body)[1]
    np.testing.assert_array_equal(got[0], A)
    np.testing.assert_array_equal(got[1], A[0])


def test_runtime_helpers():
    assert _C.stream_touch(x=[flow.tensor(A), flow.zeros(2)]) is None
    with pytest.raises(RuntimeError, match=r"^throw error kernel$"):
        _C.throw_error(input=flow.tensor(A))
    buf = _C.gen_tensor_buffer(shape=[2], shape_list=[[2, 2], [3]], value_list=[1.5, -2.0], data_type=flow.float32,
                               dynamic_out=False)
    assert buf.shape == (2,)
    first, second = flow.tensor_buffer_to_list_of_tensors(buf, [(2, 2), (3,)], [flow.float32] * 2, True)
    np.testing.assert_array_equal(first.numpy(), np.full((2, 2), 1.5))
    np.testing.assert_array_equal(second.numpy(), np.full(3, -2.0))


def test_bad_input_is_named():
    with pytest.raises(RuntimeError, match=r"^to_local: expected a global tensor, got a local one$"):
        _C.to_local(flow.tensor(A))
    with pytest.raises(TypeError, match=r"^stream_touch\(\): argument 'x\[1\]' must be Tensor, not int$"):
        _C.stream_touch([flow.zeros(1), 3])
    with pytest.raises(RuntimeError, match=r"^gen_tensor_buffer: shape \(2,\) holds 2 buffers, got 1 shapes and 1 "
                                           r"values$"):
        _C.gen_tensor_buffer([2], [[1]], [1.0], flow.float32, False)
