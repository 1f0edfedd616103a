"""Gradients of layer normalization and of batch normalization's `normalization` op written with differentiable
tensor ops, for `create_graph=True` (higher_order.py): their fused gradient kernels (`layer_norm_grad`,
`layer_norm_param_grad`, `normalization_grad`) have no gradient rules, so under create_graph the same gradient is
computed from the op's inputs (which carry their history) and recorded op by op, as OneFlow 0.9's higher-order
gradient functions compose differentiable ops.

A rule takes the forward inputs (Tensors with history), the output gradients (Tensors or None) and the op's attrs,
and returns the input gradients; None when output gradients it does not handle are given (higher_order then
replays the op's own rule, refusing by name).

Formulas (x̂ = (x - μ) r, r = (σ² + ε)^-1/2 over the normalized axes, n their size; dx̂ = dy · γ):
    layer_norm:    dx = r (dx̂ - mean(dx̂) - x̂ mean(dx̂ x̂)),  dγ = Σ dy x̂,  dβ = Σ dy  (sums over the batch axes)
    normalization: y = (x - m) r γ + β with m and v = σ² inputs:  dx = dy γ r,  dm = -Σ dy γ r,
                   dv = -½ Σ dy γ (x - m) r³,  dγ = Σ dy (x - m) r,  dβ = Σ dy  (sums over all but the channel axis)
"""


def _layer_norm(xs, dys, attrs):
    if dys[0] is None or any(d is not None for d in dys[1:]):
        return None
    x, dy = xs[0], dys[0]
    nd = x.ndim
    bna, bpa = attrs["begin_norm_axis"] % nd, attrs["begin_params_axis"] % nd
    norm_axes, batch_axes = list(range(bna, nd)), list(range(bpa))
    centered = x - x.mean(dim=norm_axes, keepdim=True)
    r = ((centered * centered).mean(dim=norm_axes, keepdim=True) + attrs["epsilon"]) ** -0.5
    xhat = centered * r
    rest = list(xs[1:])
    grads_params = []
    dxhat = dy
    if attrs["scale"]:
        gamma = rest.pop(0)
        dxhat = dy * gamma
        grads_params.append((dy * xhat).sum(dim=batch_axes) if batch_axes else dy * xhat)
    if attrs["center"]:
        grads_params.append(dy.sum(dim=batch_axes) if batch_axes else dy)
    dx = r * (dxhat - dxhat.mean(dim=norm_axes, keepdim=True)
              - xhat * (dxhat * xhat).mean(dim=norm_axes, keepdim=True))
    return [dx] + grads_params


def _normalization(xs, dys, attrs):
    dy = dys[0]
    if dy is None:
        return None
    x, mean, variance = xs[:3]
    axis = attrs["axis"]
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    others = [i for i in range(x.ndim) if i != axis]

    def channel(t):
        return t.reshape(*shape)

    r = (channel(variance) + attrs["epsilon"]) ** -0.5
    centered = x - channel(mean)
    dxhat = dy
    rest = list(xs[3:])
    gamma = rest.pop(0) if attrs["scale"] else None
    if gamma is not None:
        dxhat = dy * channel(gamma)
    dx = dxhat * r
    dmean = -dx.sum(dim=others)
    dvariance = (dxhat * centered * r * r * r).sum(dim=others) * -0.5
    grads = [dx, dmean, dvariance]
    if attrs["scale"]:
        grads.append((dy * centered * r).sum(dim=others))
    if attrs["center"]:
        grads.append(dy.sum(dim=others))
    return grads


RULES = {"layer_norm": _layer_norm, "normalization": _normalization}


# --- limits2 team: cumprod (its `cumprod_grad` kernel has no gradient rule) -----------------------------------------
# dx_i = Σ_{j>=i} dy_j Π_{k<=j, k!=i} x_k, written as kernels/nn_extra.cumprod_grad computes it, from differentiable
# ops: where x_i != 0, revcumsum(dy·y)_i / x_i (y = cumprod x); at the first zero of a line, revcumsum(dy·y')_i with
# y' the cumulative product of x with that zero replaced by 1. The second zero of a line gets the same (its value is
# 0, but its derivative with respect to the first zero is not); from the third zero on, dx_i holds two zeros in
# every product, so it is 0 with zero derivatives. Each piece equals the true gradient as a function of x near the
# point, so its derivatives (create_graph again) are those of the true gradient.
def _cumprod(xs, dys, attrs):
    from oneflow_compat._global import functional as F

    dy = dys[0]
    if dy is None:
        return None
    x, dim = xs[0], attrs["dim"] % xs[0].ndim

    def revcumsum(t):
        return t.flip([dim]).cumsum(dim).flip([dim])

    zero = x == 0
    zeros_before = zero.to(x.dtype).cumsum(dim)  # (counts, through the zero itself)
    ones = F.ones_like(x)
    safe_x = F.where(zero, ones, x)
    dx = F.where(zero, F.zeros_like(x), revcumsum(dy * x.cumprod(dim)) / safe_x)
    for rank in (1.0, 2.0):
        at = zero.logical_and(zeros_before == rank)
        skipped = F.where(at, ones, x).cumprod(dim)
        dx = F.where(at, revcumsum(dy * skipped), dx)
    return [dx]


RULES["cumprod"] = _cumprod
