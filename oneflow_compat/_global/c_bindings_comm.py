"""`oneflow._C`'s casts between local and global, the local collectives, point-to-point and the runtime helpers
(OneFlow v0.9.0 functional_api.yaml; functors in `oneflow/core/functional/impl/comm_functor.cpp`,
`global_cast.cpp`, `array_functor.cpp`), over the `oneflow.comm` functions (`_global/comm_ops.py`).
"""
from oneflow_compat._global import comm_ops as _comm
from oneflow_compat._global.tensor import Tensor


def _tensor(x, fn, arg="x"):
    if not isinstance(x, Tensor):
        raise TypeError("%s(): argument '%s' must be Tensor, not %s" % (fn, arg, type(x).__name__))
    return x


def to_global(x, placement, sbp, grad_sbp=None, check_meta=True, copy=False):
    """ToGlobal: a local tensor made global (its pieces as the sbp says) or a global one re-laid."""
    return _tensor(x, "to_global").to_global(placement, sbp, grad_sbp=grad_sbp, check_meta=check_meta, copy=copy)


def to_local(x, copy=False):
    """GlobalToLocal: this rank's piece of a global tensor."""
    x = _tensor(x, "to_local")
    if not x.is_global:
        raise RuntimeError("to_local: expected a global tensor, got a local one")
    return x.to_local(copy=copy)


def to(x, *args, **kwargs):
    """To: `(x, device, dtype, copy)`, `(x, dtype, copy)`, `(x, other, copy)` (other's device and dtype)."""
    x = _tensor(x, "to")
    if args and isinstance(args[0], Tensor):
        other, rest = args[0], args[1:]
        return x.to(other.device, other.dtype, *rest, **kwargs)
    if "other" in kwargs:
        other = kwargs.pop("other")
        return x.to(other.device, other.dtype, *args, **kwargs)
    return x.to(*args, **kwargs)


def copy(x, device_type, device_id, pin_memory=False):
    """Copy: a new tensor on device `device_type`:`device_id` (always a copy, also on the same device)."""
    x = _tensor(x, "copy")
    out = x.to("%s:%d" % (device_type, int(device_id)))
    return out.clone() if out is x else out


def comm_broadcast(x=None, *, inputs=None, src_rank=0, inplace=True):
    """CommBroadcast(x) / CommBroadcastTensors(inputs): rank src_rank's local tensor(s) into every rank's (in place,
    or into copies)."""
    if (x is None) == (inputs is None):
        raise TypeError("comm_broadcast() takes a tensor x or a tensor list inputs")
    x = inputs if x is None else x
    many = isinstance(x, (list, tuple))
    outs = []
    for t in (list(x) if many else [x]):
        _tensor(t, "comm_broadcast")
        t = t if inplace else t.clone()
        _comm.broadcast(t, int(src_rank))
        outs.append(t)
    return tuple(outs) if many else outs[0]


def local_all_gather(output, input):  # noqa: A002
    """LocalAllGather: every rank's `input` concatenated (or stacked) along dim 0 into `output`."""
    _comm.all_gather_into_tensor(_tensor(output, "local_all_gather", "output"),
                                 _tensor(input, "local_all_gather", "input"))
    return output


def local_reduce_scatter(output, input):  # noqa: A002
    """LocalReduceScatter: the ranks' `input` summed, this rank's part (along dim 0) into `output`."""
    _comm.reduce_scatter_tensor(_tensor(output, "local_reduce_scatter", "output"),
                                _tensor(input, "local_reduce_scatter", "input"))
    return output


def local_reduce(x, *, dst=0, inplace=True):
    """LocalReduce: the sum over ranks into rank dst's tensor (in place, or into a copy)."""
    t = _tensor(x, "local_reduce")
    t = t if inplace else t.clone()
    _comm.reduce(t, int(dst))
    return t


def send(input, dst, send_meta=True):  # noqa: A002
    _comm.send(_tensor(input, "send", "input"), int(dst), send_meta=send_meta)


def recv(src, shape=None, dtype=None, device=None, *, out=None):
    return _comm.recv(int(src), shape=shape, dtype=dtype, device=device, out=out)


def stream_touch(x):
    """StreamTouch: OneFlow keeps the tensors alive until the work queued on their stream has run (DDP's buckets);
    eager ops here finish before they return, so there is nothing left to wait for. Returns None."""
    for i, t in enumerate(x):
        _tensor(t, "stream_touch", "x[%d]" % i)


def throw_error(input):  # noqa: A002
    """ThrowError: the op whose kernel raises (OneFlow's test of errors reported from the worker thread)."""
    _tensor(input, "throw_error", "input")
    raise RuntimeError("throw error kernel")


def gen_tensor_buffer(shape, shape_list, value_list, data_type, dynamic_out):
    """GenTensorBuffer: a TensorBuffer tensor of `shape`, buffer i an array of shape_list[i] filled with
    value_list[i] (of data_type)."""
    from oneflow_compat._global import creation, dispatch
    from oneflow_compat.ir import dtypes

    shape = tuple(int(s) for s in shape)
    n = 1
    for s in shape:
        n *= s
    if len(shape_list) != n or len(value_list) != n:
        raise RuntimeError("gen_tensor_buffer: shape %s holds %d buffers, got %d shapes and %d values"
                           % (shape, n, len(shape_list), len(value_list)))
    like = creation.zeros(1)
    return dispatch.make_source("gen_tensor_buffer", {
        "shape": shape, "shape_list": [tuple(int(d) for d in s) for s in shape_list],
        "value_list": [float(v) for v in value_list], "data_type": dtypes.as_dtype(data_type),
        "dynamic_out": bool(dynamic_out)}, like)[0]
