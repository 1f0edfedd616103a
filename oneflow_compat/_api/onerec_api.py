"""`flow.data.onerec_reader` and `flow.data.onerec_decoder` / `OneRecDecoder` of OneFlow v0.4.0
(`oneflow/python/ops/data_ops.py`, `user_data_ops.py`): signatures, defaults and attrs as there; the ops are
ops/onerec_ops.py's, the format datasets/onerec_io.py's."""
import os

from oneflow_compat._api.data_api import _check_dtype, _op_name
from oneflow_compat.ir import dtypes
from oneflow_compat.ops.registry import apply

_DECODABLE = ("int8", "int32", "int64", "float32", "float64")


def onerec_reader(files, batch_size=1, random_shuffle=False, shuffle_mode="instance", shuffle_buffer_size=1024,
                  shuffle_after_epoch=False, verify_example=True, name=None):
    """A (batch_size,) tensor buffer of raw OneRec examples read from `files` (a list of paths, one stream cycling
    over them); on N devices each device reads batch_size / N examples from its balanced share of the files.
    `shuffle_mode` "instance" shuffles examples through a buffer of `shuffle_buffer_size` examples, "batch"
    whole batches through a buffer of that many batches."""
    assert isinstance(files, (list, tuple))
    files = [str(f) for f in files]
    if not files:
        raise ValueError("flow.data.onerec_reader: files is empty (no OneRec file to read)")
    for f in files:
        if not os.path.isfile(f):
            raise FileNotFoundError("flow.data.onerec_reader: OneRec file %s not found" % f)
    if shuffle_mode not in ("instance", "batch"):
        raise ValueError("flow.data.onerec_reader: shuffle_mode must be 'instance' or 'batch', got %r"
                         % (shuffle_mode,))
    if int(batch_size) < 1:
        raise ValueError("flow.data.onerec_reader: batch_size must be at least 1, got %r" % (batch_size,))
    attrs = {"files": files, "batch_size": int(batch_size), "random_shuffle": bool(random_shuffle),
             "shuffle_mode": shuffle_mode, "seed": -1, "shuffle_buffer_size": int(shuffle_buffer_size),
             "shuffle_after_epoch": bool(shuffle_after_epoch), "verify_example": bool(verify_example)}
    return apply("OneRecReader", [], attrs, name=_op_name(name, "OneRecReader_"))


def OneRecDecoder(input_blob, key, dtype, shape, is_dynamic=False, reshape=None, batch_padding=None,  # noqa: N802
                  name=None):
    """Feature `key` of every example as a (batch,) + shape blob of `dtype`. `reshape` (one dim may be -1) views
    each stored tensor in another shape first; `batch_padding` pads dim 0 per batch (0: all equal, -1: to the
    longest, n > 0: to n); `is_dynamic` lets the blob take the batch's own shape, at most `shape`."""
    _check_dtype(input_blob, dtypes.tensor_buffer, "flow.data.onerec_decoder")
    dtype = dtypes.as_dtype(dtype)
    if dtype is None or dtype.name not in _DECODABLE:
        raise TypeError("flow.data.onerec_decoder: dtype must be one of %s (OneFlow's decoder copies those lists), "
                        "got %r" % (", ".join(_DECODABLE), dtype))
    shape = tuple(int(d) for d in shape)
    attrs = {"key": str(key), "data_type": dtype, "static_shape": shape, "is_dynamic": bool(is_dynamic),
             "has_reshape": reshape is not None,
             "reshape": tuple(int(d) for d in reshape) if reshape is not None else shape,
             "has_batch_padding": batch_padding is not None,
             "batch_padding": tuple(int(d) for d in batch_padding) if batch_padding is not None else shape}
    return apply("onerec_decoder", [input_blob], attrs, name=_op_name(name, "OneRecDecoder_"))


onerec_decoder = OneRecDecoder
