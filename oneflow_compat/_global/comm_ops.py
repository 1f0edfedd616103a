"""`oneflow.comm` (OneFlow 0.9's `python/oneflow/comm/comm_ops.py`): collectives on local tensors over all ranks
of the job, as torch.distributed's — all_reduce, all_gather(_into_tensor), reduce_scatter(_tensor), broadcast,
scatter, reduce, all_to_all, gather, barrier — and point-to-point send / recv.

The collectives are OneFlow's compositions of global tensors: each rank's local tensor made a global one's addend
or piece on every rank's devices, then boxed (P -> B is the all-reduce, P -> S(0) the reduce-scatter, S(0) -> B
the all-gather), so they run through the engine's boxing, with its identity checks and byte accounting. Results
land in the given tensors in place where OneFlow's do. scatter and all_to_all are OneFlow's loops of send / recv.
`send(tensor, dst)` first sends the shape, dtype and device (`send_meta`), which `recv(src)` reads when it is not
given them. The top package installs these names on `flow.comm` (the communication layer's package, which
`oneflow.comm` resolves to)."""
import numpy as np

from oneflow_compat import sbp as flow_sbp
from oneflow_compat._global import creation
from oneflow_compat._global.placement import placement as Placement
from oneflow_compat._global.tensor import Tensor, as_dtype
from oneflow_compat.runtime import global_eager

__all__ = ["all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor", "broadcast", "scatter",
           "reduce", "all_to_all", "barrier", "reduce_scatter", "gather", "send", "recv"]


def _local(tensor, what):
    assert isinstance(tensor, Tensor), "%s: expected a Tensor, got %s" % (what, type(tensor).__name__)
    assert tensor.is_local, "%s: expected a local tensor, got a global one" % what
    return tensor


def _everywhere(tensor):
    return Placement.all(tensor.device.type)


def _world():
    return global_eager.world_size()


def all_reduce(tensor):
    """Sums `tensor` over all ranks, in place: every rank holds the same sum afterwards."""
    _local(tensor, "all_reduce")
    total = tensor.to_global(placement=_everywhere(tensor), sbp=flow_sbp.partial_sum)
    tensor.copy_(total.to_global(sbp=flow_sbp.broadcast).to_local())


def _stacked(tensor):
    """(world, *shape): every rank's tensor, on every rank."""
    one = tensor.reshape(1, *tensor.shape)
    return one.to_global(placement=_everywhere(tensor), sbp=flow_sbp.split(0)).to_global(
        sbp=flow_sbp.broadcast).to_local()


def all_gather(tensor_list, tensor):
    """Fills `tensor_list` (one entry per rank) with every rank's `tensor`."""
    _local(tensor, "all_gather")
    assert isinstance(tensor_list, list)
    assert len(tensor_list) == _world()
    gathered = _stacked(tensor)
    for i in range(gathered.shape[0]):
        tensor_list[i] = gathered[i]


def _stack_or_concat(big, small, what):
    """`big`'s shape read as the ranks' `small` tensors stacked ((world, *shape)) or concatenated along dim 0."""
    world, shape = _world(), tuple(small.shape)
    stacked, concat = (world,) + shape, ((world * shape[0],) + shape[1:]) if shape else None
    if tuple(big.shape) not in (stacked, concat):
        raise RuntimeError("%s: a tensor of shape %s is neither %d tensors of shape %s stacked %s nor concatenated"
                           " %s" % (what, tuple(big.shape), world, shape, stacked, concat))


def all_gather_into_tensor(output_tensor, input_tensor):
    """Every rank's `input_tensor` into `output_tensor`, stacked or concatenated along dim 0 (its shape says)."""
    _local(output_tensor, "all_gather_into_tensor")
    _local(input_tensor, "all_gather_into_tensor")
    _stack_or_concat(output_tensor, input_tensor, "all_gather_into_tensor")
    output_tensor.copy_(_stacked(input_tensor).reshape(*output_tensor.shape))


def reduce_scatter_tensor(output_tensor, input_tensor):
    """The sum over ranks of `input_tensor` (the ranks' outputs stacked or concatenated along dim 0), this rank's
    part of it into `output_tensor`: one reduce-scatter."""
    _local(output_tensor, "reduce_scatter_tensor")
    _local(input_tensor, "reduce_scatter_tensor")
    _stack_or_concat(input_tensor, output_tensor, "reduce_scatter_tensor")
    parts = input_tensor.reshape(_world(), *output_tensor.shape)
    mine = parts.to_global(placement=_everywhere(input_tensor), sbp=flow_sbp.partial_sum).to_global(
        sbp=flow_sbp.split(0)).to_local()
    output_tensor.copy_(mine.reshape(*output_tensor.shape))


def broadcast(tensor, src):
    """Rank `src`'s `tensor` into every rank's `tensor`, in place."""
    assert isinstance(src, int)
    _local(tensor, "broadcast")
    source = Placement(tensor.device.type, ranks=[src])
    value = tensor.to_global(placement=source, sbp=flow_sbp.broadcast)  # (src's values; the others' ignored)
    tensor.copy_(value.to_global(placement=_everywhere(tensor), sbp=flow_sbp.broadcast).to_local())


def scatter(tensor, scatter_list=None, src=0):
    """Rank `src`'s `scatter_list[r]` into rank r's `tensor` (OneFlow's: sends from `src`)."""
    assert isinstance(src, int)
    _local(tensor, "scatter")
    out_shape = tuple(tensor.shape)
    if global_eager.rank() == src:
        assert isinstance(scatter_list, list)
        assert len(scatter_list) == _world()
        tensor.data = scatter_list[src]
        for i, item in enumerate(scatter_list):
            if i == src:
                continue
            assert isinstance(item, Tensor) and item.is_local
            assert tuple(item.shape) == out_shape, \
                f"invalid tensor size at index {i}: {out_shape} vs {tuple(item.shape)}"
            send(item, i)
    else:
        recv(src, out=tensor)


def reduce(tensor, dst):
    """The sum over ranks of `tensor` into rank `dst`'s `tensor` (the others keep theirs)."""
    _local(tensor, "reduce")
    assert isinstance(dst, int)
    original = tensor.numpy().copy()
    all_reduce(tensor)
    if global_eager.rank() != dst:
        tensor.copy_(creation.local_tensor(original, dtype=tensor.dtype, device=tensor.device))


def all_to_all(output_tensor_list, input_tensor_list):
    """Rank r's `input_tensor_list[q]` into rank q's `output_tensor_list[r]` (one scatter from each rank)."""

    def check(tensor_list):
        assert isinstance(tensor_list, list)
        assert len(tensor_list) == _world()
        first = tensor_list[0]
        for t in tensor_list:
            assert isinstance(t, Tensor) and t.is_local
            assert t.shape == first.shape and t.dtype == first.dtype and t.device == first.device

    check(output_tensor_list)
    check(input_tensor_list)
    assert input_tensor_list[0].shape == output_tensor_list[0].shape
    assert input_tensor_list[0].dtype == output_tensor_list[0].dtype
    assert input_tensor_list[0].device == output_tensor_list[0].device
    me = global_eager.rank()
    for i in range(_world()):
        scatter(output_tensor_list[i], input_tensor_list if i == me else [], src=i)


def barrier():
    """Returns once every rank has called it."""
    global_eager.comm().barrier()


def reduce_scatter(output, input_list):
    """The sum over ranks of `input_list[r]` into rank r's `output`."""
    _local(output, "reduce_scatter")
    assert isinstance(input_list, list)
    assert len(input_list) == _world()
    reduced = []
    for t in input_list:
        assert t.is_local
        assert t.shape == output.shape
        total = t.to_global(placement=_everywhere(output), sbp=flow_sbp.partial_sum)
        reduced.append(total.to_global(sbp=flow_sbp.broadcast).to_local())
    output.data = reduced[global_eager.rank()]


def gather(tensor, gather_list=None, dst=0):
    """Every rank's `tensor` into `gather_list` (as OneFlow 0.9's, which fills it on every rank, not only `dst`)."""
    _local(tensor, "gather")
    gathered = _stacked(tensor)
    if gather_list is None:
        gather_list = [creation.local_full(tuple(tensor.shape), 0, tensor.dtype, tensor.device)
                       for _ in range(_world())]
    assert isinstance(gather_list, list)
    assert len(gather_list) == _world()
    for i in range(gathered.shape[0]):
        gather_list[i] = gathered[i]


def send(tensor, dst, send_meta=True):
    """Sends local `tensor` to rank `dst` (its shape, dtype and device first, with `send_meta`)."""
    _local(tensor, "send")
    comm = global_eager.comm()
    array = np.ascontiguousarray(tensor.numpy())
    if send_meta:
        meta = np.frombuffer(repr((tuple(array.shape), tensor.dtype.name, tensor.device.type)).encode(), np.uint8)
        comm.send(np.array([meta.size], np.int64), dst)
        comm.send(meta, dst)
    comm.send(array, dst)


def recv(src, shape=None, dtype=None, device=None, *, out=None):
    """A tensor received from rank `src` (into `out` when given): of `shape`, `dtype` and `device` when all three
    are given, else of the shape, dtype and device `send` sent first."""
    import ast

    comm = global_eager.comm()
    given = [v is not None for v in (shape, dtype, device)]
    if all(given):
        shape, dtype, kind = tuple(shape), as_dtype(dtype), getattr(device, "type", str(device).split(":")[0])
    elif not any(given):
        size = comm.recv((1,), src, dtype=np.int64)
        text = comm.recv((int(size[0]),), src, dtype=np.uint8).tobytes().decode()
        shape, dtype_name, kind = ast.literal_eval(text)
        dtype = as_dtype(dtype_name)
    else:
        raise RuntimeError("All or none of shape, dtype and device should have value.")
    array = comm.recv(shape, src, dtype=dtype.np)
    if out is not None:
        assert out.device.type == kind, "recv: out is on %s, the data on %s" % (out.device.type, kind)
        out.copy_(creation.local_tensor(array, dtype=dtype, device=kind))
        return out
    return creation.local_tensor(array, dtype=dtype, device=kind)
