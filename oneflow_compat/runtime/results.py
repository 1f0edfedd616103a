"""Turning fetched values into what the return annotation promises (legacy-api.md §2.3.4)."""
import numpy as np

from oneflow_compat.backend import devices
from oneflow_compat.framework import signature
from oneflow_compat.ir import sbp as S
from oneflow_compat.runtime import distributed


class LocalBlob:
    """An unannotated result or watch-handler argument: numpy-like, with `.numpy()` / `.numpy_list()`."""

    def __init__(self, value, is_mirrored=False):
        self._value = value  # ndarray, or list of per-device ndarrays for mirrored blobs
        self._mirrored = is_mirrored

    def numpy(self, index=None):
        if self._mirrored:
            if index is None:
                if len(self._value) == 1:
                    return self._value[0]
                return np.concatenate(self._value, axis=0)
            return self._value[index]
        return self._value

    def numpy_list(self):
        return list(self._value) if self._mirrored else [self._value]

    def numpy_lists(self):
        """Per device, the list of its tensors (a tensor-list blob, OneFlow v0.3.4's LocalMirroredTensorList);
        another blob gives its one array per device."""
        return [_tensor_list(v) for v in self.numpy_list()]

    ndarray_lists = numpy_lists

    ndarray = numpy
    ndarray_list = numpy_list

    @property
    def is_dynamic(self):
        return self._mirrored

    def __getattr__(self, name):
        return getattr(self.numpy(), name)

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __repr__(self):
        return "LocalBlob(%r)" % (self.numpy(),)

    def __len__(self):
        return len(self.numpy())

    def __getitem__(self, k):
        return self.numpy()[k]

    def __iter__(self):
        return iter(self.numpy())


def _forward(name):
    def f(self, *args):
        return getattr(self.numpy(), name)(*args)

    f.__name__ = name
    return f


for _n in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
           "__neg__", "__abs__", "__pow__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__float__",
           "__int__", "__matmul__", "__mod__"):
    setattr(LocalBlob, _n, _forward(_n))


def leaf_value(value, kind, is_mirrored):
    if kind == "numpy":
        return value
    if kind == "list_numpy":
        return list(value) if is_mirrored else [value]
    if kind == "list_list_numpy":
        return [_tensor_list(v) for v in value] if is_mirrored else [_tensor_list(value)]
    return LocalBlob(value, is_mirrored)


def _tensor_list(piece):
    """A device's piece as a list of arrays: a tensor list's tensors (an object array), else the one array."""
    return list(piece) if getattr(piece, "dtype", None) == object and piece.ndim == 1 else [piece]


class Future:
    """Legacy result of a job function without return annotation: `.get()` or `.async_get(cb)`, once."""

    def __init__(self, value):
        self._value = value
        self._delivered = False

    def get(self):
        if not (not self._delivered):
            raise AssertionError("the result of this job call was already delivered")
        self._delivered = True
        return self._value

    def async_get(self, callback):
        callback(self.get())


def gather_mirrored_pieces(rt, pieces, placement):
    """A mirrored blob's value: every device's piece on the host, in parallel order (gathered from every rank
    under MPI). Copies: a piece may be a variable's own storage (a mirrored view of it), which this call's update
    then overwrites; a train job returns the value the step read (as OneFlow, and as the consistent view does)."""
    local = [np.array(devices.to_host(p)) for p in pieces]
    if len(rt.local_indices(placement)) == placement.parallel_num:
        return local
    return distributed.gather_mirrored(rt, local, placement)


def convert(job, values, jf):
    """The fetched `values` of `job`'s outputs as job function `jf`'s return annotation promises."""
    leaves = [leaf_value(v, kind, blob.op.sbp_out[blob.index] == S.M) for v, (blob, kind) in zip(values, job.output_blobs)]
    return deliver(jf.ret.kind, signature.build_value(job.output_structure, leaves))


def deliver(kind, value):
    """The call's result as its return annotation asks: nothing, a future, a callback registrar, or the value."""
    if kind == "none":
        return None
    if kind == "future":
        return Future(value)
    if kind == "callback":
        def register(callback):
            callback(value)
        return register
    return value
