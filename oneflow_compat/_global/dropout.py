"""`flow.nn.functional.dropout` (and `nn.Dropout`'s work): the input times a scaled random keep-mask, one
`multiply` op through `dispatch.apply_op`, so the SBP comes from the op's declarations and the gradient from its
grad rule (the mask is a constant).
"""
import numpy as np

from oneflow_compat import sbp as flow_sbp
from oneflow_compat._global import dispatch, generators, lazy
from oneflow_compat._global.inplace import rebind as _rebind
from oneflow_compat._global.tensor import Tensor


def _mask_like(x, p, generator):
    """The scaled keep-mask (1/(1−p) where kept, 0 elsewhere) for `x`, as a tensor on x's layout: local tensors
    draw from this rank's local generator; global ones from the global generator, as one full logical value
    (every rank draws it, so the counters stay aligned), each rank keeping its piece — a partial-sum `x` gets a
    broadcast mask, since each of its addends must be masked alike."""
    from oneflow_compat._global import creation, nn_init

    gen = generator
    if gen is None:
        gen = generators.global_generator() if x.is_global else generators.default_generator()
    keep = gen.uniform(tuple(x.shape), np.float32) >= np.float32(p)
    full = keep.astype(x.dtype.np) * x.dtype.np.type(1.0 / (1.0 - p))
    if x.is_local:
        return creation.tensor(full, dtype=x.dtype, device=x._device)
    sbp = [flow_sbp.broadcast if s == flow_sbp.partial_sum else s for s in x.sbp]
    mask = creation.zeros(*x.shape, dtype=x.dtype, placement=x.placement, sbp=sbp)
    return nn_init._fill(mask, full)


def dropout(input, p=0.5, training=True, inplace=False, generator=None, addend=None):  # noqa: A002
    """Zeroes each element with probability `p` and scales the others by 1/(1−p) when `training`; then adds
    `addend` if given (OneFlow 0.9's fused dropout + add, which adds it in eval mode too); `inplace` writes the
    result into `input` and returns it."""
    if not 0 <= p <= 1:
        raise ValueError("dropout probability has to be between 0 and 1, but got %r" % (p,))
    out = _dropped(input, p, training, generator)
    if addend is not None:
        out = dispatch.apply_op("add_n", [out, addend])
    if inplace and out is not input:
        return _rebind(input, out)
    return out


def _dropped(input, p, training, generator):  # noqa: A002
    if not training or p == 0:
        return input
    if p == 1:
        return dispatch.apply_op("scalar_mul", [input], {"value": 0.0})
    if lazy.tracer_active():
        # inside nn.Graph.build: the job's dropout op draws a fresh mask at every call of the graph (a mask made
        # here would be traced once into a constant)
        return dispatch.apply_op_list("dropout", [input], {"rate": float(p), "seed": None})[0]
    return dispatch.apply_op("multiply", [input, _mask_like(input, p, generator)])
