"""OneFlow v0.4.0's eager module API, `import oneflow.experimental as flow`, on the global-tensor API.

v0.4.0 exported, besides its legacy lazy API, an eager prototype of the 0.5+ API under `oneflow.experimental`:
the names decorated `@experimental_api` together with `@oneflow_export(...)` in oneflow/python/**/*.py (nn modules,
math functions, optimizers, schedulers, the data-pipeline modules, `tmp.*`), and — `oneflow_export` without an API
tag put every name under both `oneflow.X` and `oneflow.experimental.X` (oneflow/python/oneflow_export.py@v0.4.0) —
every untagged export as well (`Tensor`, `tensor`, `device`, `to`, `nn.Module`, `nn.Parameter`, `unittest`, …).

There is one implementation: each name is the global-tensor function or class, bound here directly. Where
v0.4.0's signature or behaviour differs, an adapter below changes only that and says where v0.4.0 does it (each
file is oneflow/python/nn/modules/<file>.py or oneflow/python/nn/optimizer/<file>.py at tag v0.4.0).
`FUNCTIONS` is the table experimental.py binds; `NN`, `OPTIM`, `LR_SCHEDULER`, `TMP`, `NN_IMAGE` the names of the
sub-namespaces (which otherwise fall back to the global API's `flow.nn`, `flow.optim`, …).
"""
import numpy as np

from oneflow_compat import nn as _nn, optim as _optim
from oneflow_compat.framework import client_mode, session as _session
from oneflow_compat.runtime import context as _context
from oneflow_compat._global import creation, functional as F, nd_functions, nn_data, shape_extra  # noqa: F401
from oneflow_compat._global import tensor_functions
from oneflow_compat._global.nn_activations import gelu
from oneflow_compat._global.tensor import Tensor, device as _device


# --- functions -------------------------------------------------------------------------------------------------
def gather(input, index, dim=0, sparse_grad=False):  # noqa: A002
    """v0.4.0's order is (input, index, dim=0) (gather.py: `gather_op(input, index, dim=0, sparse_grad=False)`);
    0.9's is (input, dim, index). `sparse_grad` is refused there as here ("Only support bool = False for now!")."""
    if sparse_grad:
        raise AssertionError("Only support bool = False for now!")
    return F.gather(input, dim, index)


def sum(input, dim=None, keepdims=False, keepdim=None):  # noqa: A001,A002 (OneFlow's names)
    """v0.4.0 spells the flag `keepdims` (math_ops.py `_sum(input, dim=None, keepdims=False)`); `keepdim`, the
    Tensor method's spelling, is accepted too."""
    return F.sum(input, dim, bool(keepdims if keepdim is None else keepdim))


def var(input, dim=None, keepdim=False):  # noqa: A002
    """v0.4.0's variance is the population variance, mean(x²) − mean(x)² (math_ops.py `Variance`: no
    `unbiased` argument, no Bessel correction); 0.9's default divides by n − 1."""
    return F.var(input, dim, unbiased=False, keepdim=keepdim)


def std(input, dim=None, unbiased=True, keepdim=False):  # noqa: A002
    """v0.4.0's std takes `unbiased=True` only ("Only support 'unbiased=True' for now!") yet computes the
    population deviation, sqrt(sum(x²)/n − (sum(x)/n)²) (math_ops.py `Std.forward`): that number is kept."""
    if unbiased is not True:
        raise AssertionError("Only support 'unbiased=True' for now!")
    return F.std(input, dim, unbiased=False, keepdim=keepdim)


def _int8(compare, doc):
    def comparison(input, other):  # noqa: A002
        from oneflow_compat.ir import dtypes
        return F.cast(compare(input, other), dtypes.int8)

    comparison.__name__, comparison.__doc__ = compare.__name__, doc
    return comparison


_INT8 = ("v0.4.0's comparisons return int8 tensors of 0 and 1 (the broadcast_equal / broadcast_greater / "
         "broadcast_less ops' output in {eq,greater,less}.py@v0.4.0: \"A Tensor with int8 type\"); 0.9's are bool.")
eq = _int8(F.eq, _INT8 + " `equal` is `eq`, elementwise (eq.py exports both names on `eq_op`); 0.9's `equal` "
           "returns one bool.")
gt = _int8(F.gt, _INT8)
lt = _int8(F.lt, _INT8)
equal = eq


def where(condition, x, y):
    """where.py@v0.4.0: a Python number for `x` or `y` is a float32 tensor (whatever the condition's dtype), on
    the condition's device; tensors keep theirs."""
    from oneflow_compat.ir import dtypes
    if not isinstance(x, Tensor):
        x = creation.full_like(condition, float(x), dtype=dtypes.float32)
    if not isinstance(y, Tensor):
        y = creation.full_like(condition, float(y), dtype=dtypes.float32)
    return F.where(condition, x, y)


def arange(start=0, end=None, step=1, dtype=None, device="cpu", requires_grad=False):
    """arange.py@v0.4.0: int64 unless a dtype is given, on `device` ("cpu" by default)."""
    from oneflow_compat.ir import dtypes
    return creation.arange(start, end, step, dtype=dtypes.int64 if dtype is None else dtype, device=device,
                           requires_grad=requires_grad)


def slice_update(x, update, slice_tup_list):
    """v0.4.0's slice_update returns a new tensor and leaves `x` as it was (slice.py: the `slice_update` op with
    output `y`); 0.9's updates `x` in place. Gradients reach both `x` and `update`."""
    return nd_functions.slice_update(F.clone(x), update, slice_tup_list)


def logical_slice_assign(x, update, slice_tup_list):
    """`flow.tmp.logical_slice_assign` (slice.py@v0.4.0): writes `update` into `x`'s slices in place and returns
    nothing (its op has no output)."""
    nd_functions.slice_update(x, update, slice_tup_list)


def to(input, *args, **kwargs):  # noqa: A002
    """`flow.to(x, ...)` of to.py@v0.4.0 is the Tensor method: `x.to(device)`, `x.to(dtype)`, `x.to(other)`,
    `x.to(device, dtype)`, with `copy=True` forcing a copy."""
    if not isinstance(input, Tensor):
        raise TypeError("to() expected a Tensor as its input, got %s" % type(input).__name__)
    return input.to(*args, **kwargs)


def tensor_buffer_to_list_of_tensors(tensor, out_shapes, out_dtypes):
    """dataset.py@v0.4.0: element i of a tensor buffer as its own tensor of `out_shapes[i]` and `out_dtypes[i]`
    (the `tensor_buffer_to_list_of_tensors_v2` op, dynamic_out=False: as many shapes as elements, each element of
    that dtype and as many values as its shape holds — user/kernels/tensor_buffer_kernels.cpp@v0.4.0). Each is
    the element's array read by `tensor_buffer_to_tensor` and reshaped."""
    from oneflow_compat.ir import dtypes
    if not isinstance(tensor, Tensor) or tensor.dtype != dtypes.tensor_buffer:
        raise TypeError("tensor_buffer_to_list_of_tensors: the input must be a tensor buffer, got %s"
                        % (getattr(tensor, "dtype", type(tensor).__name__),))
    if len(out_shapes) != len(out_dtypes):
        raise ValueError("tensor_buffer_to_list_of_tensors: %d out_shapes but %d out_dtypes"
                         % (len(out_shapes), len(out_dtypes)))
    flat = F.reshape(tensor, (-1,))
    arrays = flat.numpy()  # the elements' shapes and dtypes (host metadata: the op ran on CPU only)
    if len(arrays) != len(out_shapes) or len(arrays) == 0:
        raise ValueError("tensor_buffer_to_list_of_tensors: the tensor buffer holds %d elements, %d out_shapes "
                         "were given (one per element)" % (len(arrays), len(out_shapes)))
    out = []
    for i, (shape, dtype) in enumerate(zip(out_shapes, out_dtypes)):
        dtype, shape = dtypes.as_dtype(dtype), tuple(int(d) for d in shape)
        held = arrays[i]
        if dtypes.as_dtype(held.dtype) != dtype:
            raise TypeError("tensor_buffer_to_list_of_tensors: element %d holds %s, out_dtypes[%d] is %s"
                            % (i, dtypes.as_dtype(held.dtype).name, i, dtype.name))
        if held.size != int(np.prod(shape)):
            raise ValueError("tensor_buffer_to_list_of_tensors: element %d holds %d values (shape %s), out_shapes[%d] "
                             "%s holds %d" % (i, held.size, tuple(held.shape), i, shape, int(np.prod(shape))))
        value = nn_data.tensor_buffer_to_tensor(flat[i:i + 1], dtype, tuple(held.shape))
        out.append(F.reshape(value, shape))
    return out


def enable_eager_execution(val=True):
    """v0.4.0's modules ran only in eager mode, which `flow.enable_eager_execution()` (v0.4.0's unittest.TestCase
    calls it in setUp under ONEFLOW_TEST_ENABLE_EAGER=1) switched on. Every op of the global-tensor API is eager:
    here the call records the flag (read back by `flow.eager_execution_enabled()`) without choosing the legacy API
    for the process, so v0.4.0's eager module programs keep the global-tensor API."""
    with client_mode.neutral():
        _context.get().legacy_eager = bool(val)
        _session.default_session().eager = bool(val)


def eager_execution_enabled():
    return _session.default_session().eager


# The table experimental.py binds: v0.4.0's experimental function names -> the global-tensor functions (the
# modern function itself wherever v0.4.0's signature and numbers agree with it).
FUNCTIONS = {
    "abs": F.abs, "add": F.add, "arange": arange, "arcsin": tensor_functions.asin, "arcsinh": tensor_functions.asinh,
    "argmax": F.argmax, "argwhere": tensor_functions.argwhere, "asin": tensor_functions.asin,
    "asinh": tensor_functions.asinh, "broadcast_like": nd_functions.broadcast_like, "cast": F.cast, "cat": F.cat,
    "cos": F.cos, "cosh": tensor_functions.cosh, "div": F.div, "eq": eq, "equal": equal, "exp": F.exp,
    "flatten": F.flatten, "gather": gather, "gelu": gelu, "gt": gt, "log": F.log, "lt": lt,
    "masked_fill": F.masked_fill, "matmul": F.matmul, "mean": F.mean, "mul": F.mul, "neg": F.neg,
    "negative": F.negative, "ones": creation.ones, "ones_like": creation.ones_like, "pow": F.pow,
    "reciprocal": F.reciprocal, "repeat": tensor_functions.repeat, "reshape": F.reshape, "rsqrt": F.rsqrt,
    "sigmoid": F.sigmoid, "sin": F.sin, "slice": nd_functions.slice, "slice_update": slice_update,
    "softmax": F.softmax, "sqrt": F.sqrt, "square": F.square, "squeeze": F.squeeze, "std": std, "sub": F.sub,
    "sum": sum, "tanh": F.tanh, "tensor_buffer_to_list_of_tensors": tensor_buffer_to_list_of_tensors,
    "transpose": F.transpose, "unsqueeze": F.unsqueeze, "var": var, "where": where, "zeros": creation.zeros,
    "zeros_like": creation.zeros_like,
    # untagged v0.4.0 exports that the global API spells differently or lacks at the top
    "to": to, "enable_eager_execution": enable_eager_execution, "eager_execution_enabled": eager_execution_enabled,
    "device": _device,
}


# --- nn ----------------------------------------------------------------------------------------------------------
class LogSoftmax(_nn.LogSoftmax):
    """activation.py@v0.4.0: `LogSoftmax(dim=1)` (0.9's default is None, an implicit choice)."""

    def __init__(self, dim=1):
        super().__init__(dim=dim)


class OfrecordReader(_nn.OFRecordReader):
    """dataset.py@v0.4.0 `nn.OfrecordReader` (0.9 renamed it OFRecordReader): the same reader, CPU only."""

    def __init__(self, ofrecord_dir, batch_size=1, data_part_num=1, part_name_prefix="part-",
                 part_name_suffix_length=-1, random_shuffle=False, shuffle_buffer_size=1024,
                 shuffle_after_epoch=False, random_seed=-1, name=None):
        super().__init__(ofrecord_dir, batch_size=batch_size, data_part_num=data_part_num,
                         part_name_prefix=part_name_prefix, part_name_suffix_length=part_name_suffix_length,
                         random_shuffle=random_shuffle, shuffle_buffer_size=shuffle_buffer_size,
                         shuffle_after_epoch=shuffle_after_epoch, random_seed=random_seed, name=name)


class OfrecordRawDecoder(_nn.OFRecordRawDecoder):
    """dataset.py@v0.4.0 `nn.OfrecordRawDecoder(blob_name, shape, dtype, dim1_varying_length=False,
    auto_zero_padding=False, name=None)` (0.9's OFRecordRawDecoder, which adds `truncate`)."""

    def __init__(self, blob_name, shape, dtype, dim1_varying_length=False, auto_zero_padding=False, name=None):
        super().__init__(blob_name, shape, dtype, dim1_varying_length=dim1_varying_length,
                         auto_zero_padding=auto_zero_padding, name=name)


class CrossEntropyLoss(_nn.CrossEntropyLoss):
    """loss.py@v0.4.0: `reduction` may be None, which is "none" there (its forward reduces only for "mean" and
    "sum"); `ignore_index=None` (v0.4.0's default) ignores nothing."""

    def __init__(self, weight=None, ignore_index=None, reduction="mean"):
        super().__init__(weight=weight, ignore_index=-100 if ignore_index is None else ignore_index,
                         reduction="none" if reduction is None else reduction)


class NLLLoss(_nn.NLLLoss):
    """loss.py@v0.4.0: `reduction` may be None, which averages there (its forward returns the unreduced loss only
    for "none", the sum for "sum", else the mean); `ignore_index=None` (v0.4.0's default) ignores nothing."""

    def __init__(self, weight=None, ignore_index=None, reduction="mean"):
        super().__init__(weight=weight, ignore_index=-100 if ignore_index is None else ignore_index,
                         reduction="mean" if reduction is None else reduction)


NN = {"LogSoftmax": LogSoftmax, "CrossEntropyLoss": CrossEntropyLoss, "NLLLoss": NLLLoss, "OfrecordReader": OfrecordReader, "OfrecordRawDecoder": OfrecordRawDecoder}
NN_IMAGE = {"Resize": _nn.image.Resize}


def _ofrecord_reader(ofrecord_dir, batch_size=1, data_part_num=1, part_name_prefix="part-",
                     part_name_suffix_length=-1, random_shuffle=False, shuffle_buffer_size=1024,
                     shuffle_after_epoch=False, name=None):
    """`flow.tmp.OfrecordReader(...)` (dataset.py@v0.4.0 `get_ofrecord_handle`): one batch of records, read at
    once by a reader module."""
    return OfrecordReader(ofrecord_dir, batch_size, data_part_num, part_name_prefix, part_name_suffix_length,
                          random_shuffle, shuffle_buffer_size, shuffle_after_epoch, name=name)()


def _raw_decoder(input_record, blob_name, shape, dtype, dim1_varying_length=False, auto_zero_padding=False,
                 name=None):
    """`flow.tmp.RawDecoder(record, ...)` (dataset.py@v0.4.0 `raw_decoder`): the raw decoder applied once."""
    return OfrecordRawDecoder(blob_name, shape, dtype, dim1_varying_length, auto_zero_padding, name)(input_record)


TMP = {"OfrecordReader": _ofrecord_reader, "RawDecoder": _raw_decoder, "logical_slice_assign": logical_slice_assign}


# --- optim -------------------------------------------------------------------------------------------------------
def _v04_optimizer(base, v04_name):
    """v0.4.0's optimizers name their first argument `parameters` and take `scale`, a factor on every gradient
    before the update (sgd.py/adam.py/adamw.py/rmsprop.py@v0.4.0: the update ops' `scale` attribute; the loss's
    scale of static loss scaling). The update is the global API's; the gradients are scaled for the step only."""

    class V04Optimizer(base):
        def __init__(self, parameters=None, *args, scale=1.0, params=None, **kwargs):
            if parameters is None:
                parameters = params
            if not scale >= 0.0:
                raise AssertionError("Invalid scale factor: %s" % (scale,))
            self.scale = float(scale)
            super().__init__(parameters, *args, **kwargs)
            for group in self.param_groups:  # a group's own "scale" (v0.4.0's param-group option) or the default
                group.setdefault("scale", self.scale)
                if not group["scale"] >= 0.0:
                    raise AssertionError("Invalid scale factor: %s" % (group["scale"],))

        def step(self, closure=None):
            if all(group["scale"] == 1.0 for group in self.param_groups):
                return super().step(closure)
            saved = []
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None and group["scale"] != 1.0:
                        saved.append((p, p.grad))
                        p.grad = p.grad * group["scale"]
            try:
                return super().step(closure)
            finally:
                for p, g in saved:
                    p.grad = g

    V04Optimizer.__name__ = V04Optimizer.__qualname__ = v04_name
    V04Optimizer.__doc__ = "%s of OneFlow v0.4.0: the global API's %s, with `parameters` and `scale`." % (
        v04_name, base.__name__)
    return V04Optimizer


OPTIM = {name: _v04_optimizer(getattr(_optim, name), name) for name in ("SGD", "RMSprop")}


class RMSprop(OPTIM["RMSprop"]):
    """rmsprop.py@v0.4.0 hands `weight_decay` to the `rmsprop_update` op, whose update never reads it
    (RmsPropUpdateFunctor in user/kernels/model_update_kernel_util.h@v0.4.0 regularizes with l1 = l2 = 0 only):
    the option is kept in the group, and the update runs without it, as v0.4.0's did."""

    def step(self, closure=None):
        kept = [group["weight_decay"] for group in self.param_groups]
        for group in self.param_groups:
            group["weight_decay"] = 0.0
        try:
            return super().step(closure)
        finally:
            for group, wd in zip(self.param_groups, kept):
                group["weight_decay"] = wd


OPTIM["RMSprop"] = RMSprop


def _without_bias_correction(base, v04_name):
    """adam.py/adamw.py@v0.4.0 run the `adam_update` op without bias correction (m and v as they are: its kernel
    had no `do_bias_correction` then); the global API's Adam corrects by default."""
    scaled = _v04_optimizer(base, v04_name)

    class V04Adam(scaled):
        def __init__(self, parameters=None, lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0, amsgrad=False,
                     scale=1.0, params=None):
            super().__init__(parameters, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                             scale=scale, params=params, do_bias_correction=False)

    V04Adam.__name__ = V04Adam.__qualname__ = v04_name
    V04Adam.__doc__ = scaled.__doc__ + " Without bias correction, as v0.4.0's adam_update."
    return V04Adam


OPTIM.update({name: _without_bias_correction(getattr(_optim, name), name) for name in ("Adam", "AdamW")})


class CosineScheduler(_optim.lr_scheduler.CosineDecayLR):
    """cosine_scheduler.py@v0.4.0: `lr = base · ((1 − alpha)·0.5·(1 + cos(π·step/steps)) + alpha)` for
    step < steps, then `base · alpha` — the global API's CosineDecayLR, whose `decay_steps` v0.4.0 calls `steps`."""

    def __init__(self, optimizer, steps, alpha=0.0, last_step=-1, verbose=False):
        if not steps > 0:
            raise AssertionError("steps must greater than zero, but got %s" % (steps,))
        self.steps = steps
        super().__init__(optimizer, steps, alpha=alpha, last_step=last_step, verbose=verbose)


LR_SCHEDULER = {"CosineScheduler": CosineScheduler, "LambdaLR": _optim.lr_scheduler.LambdaLR,
                "StepLR": _optim.lr_scheduler.StepLR}
