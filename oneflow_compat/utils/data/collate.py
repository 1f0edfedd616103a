"""Turning samples into batches (OneFlow 0.9, `utils/data/_utils/collate.py`): `default_collate` stacks tensors
and numpy arrays along a new first dimension, numbers become tensors (floats float64, ints int64), and dicts,
namedtuples and sequences are collated field by field; `default_convert` (no batching) turns numpy arrays into
tensors. Local tensors that need no gradient are stacked as one array (the value `flow.stack` gives)."""
import collections
import collections.abc
import re

import numpy as np

from oneflow_compat.ir import dtypes
from oneflow_compat._global import creation, functional as F
from oneflow_compat._global.tensor import Tensor

_STRINGS = (str, bytes)
_NP_STR_OBJ = re.compile(r"[SaUO]")
_COLLATE_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
_CONVERT_ERR = "default_convert: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def default_convert(data):
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ == "ndarray" and _NP_STR_OBJ.search(data.dtype.str) is not None:
            return data
        return creation.tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, _STRINGS):
        return [default_convert(d) for d in data]
    raise TypeError(_CONVERT_ERR.format(elem_type))


def _stack(tensors):
    first = tensors[0]
    if all(t.is_local and not t.requires_grad and t._device == first._device and t.dtype is first.dtype
           and tuple(t.shape) == tuple(first.shape) for t in tensors):
        return creation.tensor(np.stack([np.asarray(t.numpy()) for t in tensors]), dtype=first.dtype,
                               device=first._device)
    return F.stack(tensors, 0)


def default_collate(batch):
    elem = batch[0]
    elem_type = type(elem)
    if isinstance(elem, Tensor):
        return _stack(list(batch))
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ in ("ndarray", "memmap"):
            if _NP_STR_OBJ.search(elem.dtype.str) is not None:
                raise TypeError(_COLLATE_ERR.format(elem.dtype))
            return creation.tensor(np.stack([np.asarray(b) for b in batch]))
        if elem.shape == ():
            return creation.tensor(np.array(batch))
    elif isinstance(elem, float):
        return creation.tensor(batch, dtype=dtypes.float64)
    elif isinstance(elem, int):
        return creation.tensor(batch)
    elif isinstance(elem, _STRINGS):
        return batch
    elif isinstance(elem, collections.abc.Mapping):
        return {key: default_collate([d[key] for d in batch]) for key in elem}
    elif isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return elem_type(*(default_collate(samples) for samples in zip(*batch)))
    elif isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if not all(len(e) == size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(samples) for samples in zip(*batch)]
    raise TypeError(_COLLATE_ERR.format(elem_type))
