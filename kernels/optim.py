"""Optimizer update kernels (legacy-api.md §2.13) and the gradient post-processing before them (regularization,
global-norm clipping, the non-finite check of dynamic loss scaling), one source for numpy and cupy.

Every `*_update` function updates its parameter `w` and state arrays IN PLACE and returns None; only
gradient-sized temporaries are allocated. The gradient `g` is the fully post-processed one (1/N scaling,
loss-scale division, `add_regularization`, clipping already applied by the caller).

Arithmetic follows OneFlow's update functors (`model_update_kernel_util.h`): hyper-parameters (lr, betas,
epsilon, weight decay) are C++ `float` attributes, so they are rounded to float32 here and combined with the
arrays in the arrays' dtype (float32 stays float32; float64 parameters see float32-rounded coefficients, as in
OneFlow), with the same operation order so float32 results match OneFlow's to the last bit where the
operations are the same. Host-side scalars are plain numpy float32 values, which cupy accepts too.
"""
import numpy as np

from . import blas
from .half_products import all_half, narrow

_ONE = np.float32(1)


def _f32(x):
    return np.float32(x)


def squared_l2_norm(xp, x):
    """Σ x² as a 0-d array (or scalar) of x's dtype; what OneFlow reduced for global-norm clipping, LARS, LAMB."""
    return xp.vdot(x, x)


def add_regularization(xp, g, w, *, l1=0.0, l2=0.0):
    """`g + l1·sign(w) + l2·w` (a variable's `flow.regularizers` terms). Returns a new array, or `g` itself when
    both coefficients are 0; never modifies its inputs."""
    if l1 == 0 and l2 == 0:
        return g
    out = g + _f32(l1) * xp.sign(w) if l1 != 0 else g.copy()
    if l2 != 0:
        out += _f32(l2) * w
    return out


def sum_of_squares(xp, g):
    """Σ g² as a (1,) array: one addend of the global norm that gradient clipping scales by."""
    return xp.reshape(squared_l2_norm(xp, g), (1,))


def global_norm_clip_scale(xp, total, *, clip_norm, formula="legacy"):
    """The factor applied to every gradient by `flow.optimizer.grad_clipping.by_global_norm`, from the summed squares
    `total`: min(1/‖g‖, 1/clip_norm), as OneFlow's source (legacy-api.md §2.13), not TensorFlow's
    clip_norm / max(‖g‖, clip_norm). `formula="max_norm"`: OneFlow 0.9's nn.Graph clipping (a param group's
    `clip_grad_max_norm`; job_rewriter/autograd.cpp ClipGradientByGlobalNorm, v0.9.0), min(max_norm/(‖g‖ + 1e-6),
    1), the same factor as the eager `clip_grad_norm_`."""
    if formula == "max_norm":
        return xp.minimum(total.dtype.type(clip_norm) / (xp.sqrt(total) + total.dtype.type(1e-6)),
                          total.dtype.type(1.0))
    return xp.minimum(1.0 / xp.sqrt(total), total.dtype.type(1.0 / clip_norm))


def count_nonfinite(xp, g):
    """How many entries of g are inf or nan, as a float32 (1,) array (dynamic loss scaling skips such steps)."""
    return xp.reshape(xp.sum(~xp.isfinite(g)).astype(xp.float32), (1,))


def increment(xp, step):
    """The train-step counter, one more, in place."""
    step += 1


def loss_scale_update(xp, scale, good, nonfinite, *, multiplier, increment_period):
    """Dynamic loss scaling's state, in place on the arrays' device (no host round trip): after a step whose
    gradients held inf/nan (`nonfinite` > 0) the scale is divided by `multiplier`, not below 1, and the good-step
    count restarts; after `increment_period` finite steps in a row it is multiplied, not above float32's max, and
    the count restarts. float32 rounding as `DynamicLossScalePolicy.next_state` (one IEEE operation each)."""
    finite = xp.reshape(nonfinite, scale.shape) == 0
    good_next = xp.where(finite, good + 1, 0)
    grow = good_next >= increment_period
    m = np.float32(multiplier)
    with np.errstate(over="ignore"):  # float32 overflow is the max, below
        grown = xp.minimum(scale * m, np.finfo(np.float32).max)
    shrunk = xp.maximum(scale / m, _ONE)
    scale[...] = xp.where(finite, xp.where(grow, grown, scale), shrunk)
    good[...] = xp.where(grow, 0, good_next)


def undo_if_nonfinite(xp, nonfinite, arrays, saved):
    """Puts `saved` back into `arrays` (in place) when this step's gradients held inf/nan (`nonfinite` > 0): the
    skipped update of dynamic loss scaling, decided on the device instead of by reading the count back."""
    skipped = xp.reshape(nonfinite, ()) > 0
    for array, old in zip(arrays, saved):
        array[...] = xp.where(skipped, old, array)


def sgd_update(xp, w, g, *, lr, weight_decay=0.0):
    """`w ← w − lr·(g + wd·w)` (SGD without momentum, `naive_conf`)."""
    if weight_decay != 0:
        delta = _f32(weight_decay) * w
        delta += g
    else:
        delta = g.copy()
    delta *= _f32(lr)
    w -= delta


def _sgd_target(w, m, momentum):
    """Where the step's −c·g goes and with what factor on what is there: w itself, or the momentum m ← β·m."""
    return (w, 1.0) if momentum == 0 else (m, float(_f32(momentum)))


def matmul_sgd_update(xp, w, m, pairs, *, lr, scale=1.0, momentum=0.0, transpose_a=False, transpose_b=False,
                      alpha=1.0):
    """SGD (`sgd_update`, or `momentum_update` when momentum β > 0, no weight decay) of `w` by the gradient
    g = scale·alpha·Σ op(a)·op(b) over `pairs` [(a, b), ...] — partial products of a split matmul add up — without
    making g: each product is added by its GEMM straight into w (w ← w − c·g) or into the momentum m (m ← β·m − c·g,
    then w ← w + m), c = lr·scale in float32 as the update kernels take it. `m` is None without momentum."""
    c = float(_f32(lr) * _f32(scale)) * alpha
    target, beta = _sgd_target(w, m, momentum)
    for k, (a, b) in enumerate(pairs):
        if all_half(xp, (a, b, target)):
            _add_half_product(a, b, target, -c, beta if k == 0 else 1.0, transpose_a, transpose_b)
            continue
        blas.gemm(a, b, target, alpha=-c, beta=beta if k == 0 else 1.0, trans_a=transpose_a, trans_b=transpose_b)
    if momentum != 0:
        w += m


def _add_half_product(a, b, target, alpha, beta, trans_a, trans_b):
    """target ← beta·target + alpha·op(a)·op(b) for float16 numpy arrays as blas.gemm makes it for float16 (the
    product rounded to float16, scaled, added in float16), the product on the float32 BLAS rounded once
    (kernels/half_products.py) instead of numpy's float16 loop."""
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    product = narrow(blas.gemm(a32, b32, np.empty(target.shape, dtype=np.float32), trans_a=trans_a, trans_b=trans_b))
    product *= target.dtype.type(alpha)
    if beta != 1.0:
        target *= target.dtype.type(beta)
    target += product


def reduce_sum_sgd_update(xp, w, m, parts, *, lr, axis, scale=1.0, momentum=0.0):
    """The same SGD step by the gradient g = scale·Σ sum(x, axis) over `parts` (a bias gradient: the sum of the
    gradient flowing into bias_add over its other axes, partial sums adding up)."""
    g = None
    for x in parts:
        if x.ndim == 2 and tuple(axis) == (0,):
            # the column sums as a GEMV with ones: several times faster than a sum along axis 0 of a column-major x
            s = xp.ones(x.shape[0], dtype=x.dtype) @ x
        else:
            s = xp.sum(x, axis=tuple(axis))
        if g is None:
            g = s
        else:
            g += s
    g = xp.reshape(g, w.shape)
    g *= _f32(lr) * _f32(scale)
    target, beta = _sgd_target(w, m, momentum)
    if beta != 1.0:
        target *= target.dtype.type(beta)
    target -= g
    if momentum != 0:
        w += m


def momentum_update(xp, w, m, g, *, lr, beta, weight_decay=0.0):
    """TF-style momentum: `m ← β·m − lr·g; w ← w + m − lr·wd·w` (no dampening, no Nesterov)."""
    decay = _f32(lr) * _f32(weight_decay) * w if weight_decay != 0 else None
    m *= _f32(beta)
    m -= _f32(lr) * g
    w += m
    if decay is not None:
        w -= decay


def adam_bias_corrected_lr(lr, beta1, beta2, step):
    """`lr·√(1−β2^(step+1)) / (1−β1^(step+1))` in float32, as OneFlow's bias-correction kernel computes it."""
    exponent = float(int(step) + 1)
    beta1_power = _f32(float(_f32(beta1)) ** exponent)
    beta2_power = _f32(float(_f32(beta2)) ** exponent)
    return _f32(lr) * np.sqrt(_ONE - beta2_power) / (_ONE - beta1_power)


def _adam_moments(m, v, g, b1, b2):
    """In place: `m ← β1·m + (1−β1)·g; v ← β2·v + (1−β2)·g²` (shared by Adam, AdamW, LazyAdam and LAMB)."""
    m *= b1
    m += (_ONE - b1) * g
    g_squared = (_ONE - b2) * g
    g_squared *= g
    v *= b2
    v += g_squared


def adam_update(xp, w, m, v, g, *, lr, beta1, beta2, epsilon, weight_decay=0.0, do_bias_correction=False, step=0):
    """`m ← β1·m + (1−β1)·g; v ← β2·v + (1−β2)·g²; w ← w − lr'·(m/(√v + ε) + wd·w)`, with `lr' = lr` or, when
    `do_bias_correction`, `lr·√(1−β2^(step+1))/(1−β1^(step+1))` (`step` = train step before increment)."""
    b1, b2 = _f32(beta1), _f32(beta2)
    _adam_moments(m, v, g, b1, b2)
    effective_lr = adam_bias_corrected_lr(lr, beta1, beta2, step) if do_bias_correction else _f32(lr)
    delta = xp.sqrt(v)
    delta += _f32(epsilon)
    xp.divide(m, delta, out=delta)
    if weight_decay != 0:
        delta += _f32(weight_decay) * w
    delta *= effective_lr
    w -= delta


def lazy_adam_update(xp, w, m, v, g, *, lr, beta1, beta2, epsilon, step):
    """LazyAdam with a dense gradient: Adam with bias correction always on and no weight decay. (OneFlow's
    lazy variant differs only for indexed-slices gradients, where untouched rows keep their m/v.)"""
    adam_update(xp, w, m, v, g, lr=lr, beta1=beta1, beta2=beta2, epsilon=epsilon, weight_decay=0.0,
                do_bias_correction=True, step=step)


def _rmsprop_apply(xp, w, g, denominator, *, lr, epsilon):
    # w ← w − lr·g·rsqrt(d + ε); `denominator` is a temporary that gets overwritten.
    denominator += _f32(epsilon)
    xp.sqrt(denominator, out=denominator)
    xp.divide(_ONE, denominator, out=denominator)
    delta = _f32(lr) * g
    delta *= denominator
    w -= delta


def rmsprop_update(xp, w, ms, g, *, lr, decay_rate, epsilon):
    """`ms ← (1−ρ)·g² + ρ·ms; w ← w − lr·g/√(ms + ε)` (ε inside the root, unlike torch; no weight decay)."""
    rho = _f32(decay_rate)
    g_squared = (_ONE - rho) * g
    g_squared *= g
    ms *= rho
    ms += g_squared
    _rmsprop_apply(xp, w, g, ms.copy(), lr=lr, epsilon=epsilon)


def rmsprop_centered_update(xp, w, ms, mg, g, *, lr, decay_rate, epsilon):
    """Centered RMSProp: also `mg ← (1−ρ)·g + ρ·mg`, and the root is of `ms − mg² + ε`."""
    rho = _f32(decay_rate)
    g_squared = (_ONE - rho) * g
    g_squared *= g
    ms *= rho
    ms += g_squared
    mg *= rho
    mg += (_ONE - rho) * g
    denominator = mg * mg
    xp.subtract(ms, denominator, out=denominator)
    _rmsprop_apply(xp, w, g, denominator, lr=lr, epsilon=epsilon)


def _guarded_ratio(xp, numerator, denominator, valid, dtype):
    # numerator/denominator where `valid`, else 1, without dividing by a zero that `valid` excludes.
    one = dtype.type(1)
    safe = xp.where(valid, denominator, one)
    return xp.where(valid, numerator / safe, one)


def _in_dtype(norm, dtype):
    """A norm (a float, or a 0-d array: a device's whole-variable norms stay on the device) in `dtype`."""
    return norm.astype(dtype, copy=False) if hasattr(norm, "astype") else dtype.type(norm)


def lars_update(xp, w, m, g, *, lr, momentum_beta, epsilon, lars_coefficient, weight_decay=0.0, norms=None):
    """LARS (OneFlow v0.4.0 form): `trust = coef·‖w‖/(ε + ‖g‖ + wd·‖w‖)` (1 if either norm is 0),
    `llr = lr·trust; m ← β·m − llr·g; w ← w + m − llr·wd·w`. `norms`: (‖w‖, ‖g‖) of the whole variable when `w`
    and `g` are pieces of a split one (`lars_norm_terms` names what to measure); by default those of `w` and `g`."""
    if norms is None:
        w_norm = xp.sqrt(squared_l2_norm(xp, w))
        g_norm = xp.sqrt(squared_l2_norm(xp, g))
    else:
        w_norm, g_norm = (_in_dtype(n, w.dtype) for n in norms)
    valid = (w_norm > 0) & (g_norm > 0)
    trust = _guarded_ratio(xp, _f32(lars_coefficient) * w_norm,
                           (_f32(epsilon) + g_norm) + _f32(weight_decay) * w_norm, valid, w.dtype)
    local_lr = _f32(lr) * trust
    decay = (local_lr * _f32(weight_decay)) * w if weight_decay != 0 else None
    m *= _f32(momentum_beta)
    m -= local_lr * g
    w += m
    if decay is not None:
        w -= decay


def lars_norm_terms(xp, w, g):
    """The arrays whose whole-variable norms LARS reads, in `lars_update`'s `norms` order."""
    return [w, g]


def lamb_update(xp, w, m, v, beta1_t, beta2_t, g, *, lr, beta1, beta2, epsilon, weight_decay=0.0):
    """LAMB as OneFlow v0.3/v0.4 ran it. `beta1_t`, `beta2_t` are the step-power states (initialized to β1, β2);
    they are multiplied by β *before* use, so the first step corrects with β² (off by one vs. the paper):
    `u = (m/(1−β1_t)) / √(v/(1−β2_t) + ε)` (ε inside the root, as in OneFlow's LambGradFunctor),
    `r = ‖w‖/‖u‖` (1 if either is 0), `w ← w − lr·r·(u + wd·w)`. The two halves, `lamb_direction` and
    `lamb_apply`, run apart on the pieces of a split variable, with the whole variable's norms between them."""
    direction = lamb_direction(xp, m, v, beta1_t, beta2_t, g, beta1=beta1, beta2=beta2, epsilon=epsilon)
    lamb_apply(xp, w, direction, (xp.sqrt(squared_l2_norm(xp, w)), xp.sqrt(squared_l2_norm(xp, direction))),
               lr=lr, weight_decay=weight_decay)


def lamb_direction(xp, m, v, beta1_t, beta2_t, g, *, beta1, beta2, epsilon):
    """LAMB's first half: the step powers and moments advanced in place; returns the direction u (a new array)."""
    b1, b2 = _f32(beta1), _f32(beta2)
    beta1_t *= b1
    beta2_t *= b2
    # OneFlow's beta_t states have shape (1,); a state of the variable's shape (all entries equal) works too.
    b1_t = beta1_t.reshape(()) if beta1_t.size == 1 else beta1_t
    b2_t = beta2_t.reshape(()) if beta2_t.size == 1 else beta2_t
    _adam_moments(m, v, g, b1, b2)
    direction = m / (_ONE - b1_t)
    root = v / (_ONE - b2_t)
    root += _f32(epsilon)
    xp.sqrt(root, out=root)
    direction /= root
    return direction


def lamb_apply(xp, w, direction, norms, *, lr, weight_decay=0.0):
    """LAMB's second half: `norms` = (‖w‖, ‖u‖) of the whole variable; `direction` is consumed."""
    w_norm, u_norm = (_in_dtype(n, w.dtype) for n in norms)
    trust = _guarded_ratio(xp, w_norm, u_norm, (w_norm > 0) & (u_norm > 0), w.dtype)
    # OneFlow keeps the trust-scaled learning rate in a C++ float.
    local_lr = (_f32(lr) * trust).astype(np.float32)
    if weight_decay != 0:
        direction += _f32(weight_decay) * w
    direction *= local_lr
    w -= direction
