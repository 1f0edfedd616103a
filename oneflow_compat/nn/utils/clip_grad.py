"""`nn.utils.clip_grad_norm_` and `clip_grad_value_` (OneFlow 0.9, `nn/utils/clip_grad.py`): the gradients of
local or global parameters, scaled in place. The norm is taken over all gradients together (each global gradient
is first made broadcast, so the norm is the logical one whatever the layout) with the functional ops."""
import math

from oneflow_compat import sbp as flow_sbp
from oneflow_compat.runtime import autograd
from oneflow_compat._global import creation, device_keys, functional as F, grad_zeroing, inplace
from oneflow_compat._global.tensor import Tensor


def _with_grad(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p for p in parameters if p.grad is not None]


def _norm(g, norm_type):
    a = F.abs(g)
    if norm_type == math.inf:
        return F.max(a)
    if norm_type == -math.inf:
        return F.min(a)
    if norm_type == 0:
        return F.sum(F.cast(F.ne(a, 0), g.dtype))
    return F.pow(F.sum(F.pow(a, norm_type)), 1.0 / norm_type)


def total_norm(parameters, norm_type=2.0):
    """The norm of all the parameters' gradients viewed as one vector (a 0-d tensor)."""
    params = _with_grad(parameters)
    norm_type = float(norm_type)
    if not params:
        return creation.tensor(0.0)
    first = params[0]
    if first.is_global and not all(p.is_global for p in params):
        raise AssertionError("All parameters must be global tensor.")
    norms = []
    for p in params:
        g = p.grad.detach()
        if g.is_global:  # broadcast on the first gradient's placement: one symbol per dimension of it (a mesh)
            g = g.to_global(placement=first.placement, sbp=[flow_sbp.broadcast] * len(first.placement.hierarchy))
        elif not first.is_global and g._device != first.grad._device:
            g = g.to(first.grad._device)
        norms.append(F.reshape(_norm(g, norm_type), (1,)))
    stacked = F.cat(norms) if len(norms) > 1 else norms[0]
    return _norm(stacked, norm_type)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scales the gradients so that their joint `norm_type`-norm is at most `max_norm`; returns that norm
    before clipping."""
    params = _with_grad(parameters)
    max_norm, norm_type = float(max_norm), float(norm_type)
    with autograd.no_grad():
        total = total_norm(params, norm_type)
        if not params:
            return total
        if total.is_lazy:  # inside nn.Graph.build: the gradients are the job's (lazy) gradient blobs
            if error_if_nonfinite:
                raise RuntimeError("clip_grad_norm_(error_if_nonfinite=True) needs the norm's value, which a "
                                   "lazy tensor inside nn.Graph.build() does not have")
        elif error_if_nonfinite and not math.isfinite(float(total.numpy())):
            raise RuntimeError("The total norm of order %s for gradients from `parameters` is non-finite, so it "
                               "cannot be clipped. To disable this error and scale the gradients by the "
                               "non-finite norm anyway, set `error_if_nonfinite=False`" % (norm_type,))
        coef = F.clamp(F.div(max_norm, F.add(total, 1e-6)), max=1.0)
        for p in params:
            c = coef
            if p.grad.is_global:
                c = coef.to_global(placement=p.grad.placement, sbp=[flow_sbp.broadcast] * len(p.grad.sbp))
            _scale_in_place(p.grad, c)
    return total


def _scale_in_place(grad, coef):
    scaled = F.mul(grad.detach(), F.cast(coef, grad.dtype))
    if grad.is_lazy:  # nn.Graph.build: the parameter's lazy `.grad` takes the op's output, which the graph's
        inplace.rebind(grad, scaled)  # update then reads (_global/lazy.py `variable_gradients`)
        return
    src = scaled._value
    if src.sbp != grad._value.sbp:
        from oneflow_compat._global import layouts

        src = layouts.as_layout_of(scaled, grad)._value
    with device_keys.of(grad):  # (a "cuda:K" gradient: on its GPU)
        for p, q in zip(grad._value.pieces, src.pieces):
            p[...] = q
    grad_zeroing.forget_zeroed(grad._value)  # (zeros times a non-finite norm are zeros no more)


def clip_grad_value_(parameters, clip_value):
    """Clamps every gradient into [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    with autograd.no_grad():
        for p in _with_grad(parameters):
            clamped = F.clamp(p.grad.detach(), min=-clip_value, max=clip_value)
            if clamped.is_lazy:  # nn.Graph.build (see _scale_in_place)
                inplace.rebind(p.grad, clamped)
                continue
            with device_keys.of(p.grad):
                for a, b in zip(p.grad._value.pieces, clamped._value.pieces):
                    a[...] = b
