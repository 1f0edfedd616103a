"""`oneflow._C`'s SyncBatchNorm pieces and multi-tensor optimizer updates (OneFlow v0.9.0 functional_api.yaml).

Formulas from OneFlow's kernels (v0.9.0 `oneflow/user/kernels/`):
* batch_norm_stats_kernel.cu: per channel (axis) mean and invstd = 1 / sqrt(biased var + eps).
* batch_norm_gather_stats_with_counts_kernel.cu: the ranks' (mean, invstd) rows merged by their counts
  (Chan's update); running_mean / running_var (unbiased) updated in place with `momentum`.
* batch_norm_elemt_kernel.cu: (x - mean) * invstd * weight + bias.
* batch_norm_backward_reduce_kernel.cu: (sum_dy, sum_dy_xmu, grad_weight = sum_dy_xmu * invstd, grad_bias =
  sum_dy).
* batch_norm_backward_elemt_kernel.cu: (dy - sum_dy / N - (x - mean) * invstd^2 * sum_dy_xmu / N) * invstd *
  weight, N the sum of `count`.
* multi_tensor_model_update_kernel_util.cu: SGD, momentum, Adam and YOLOv5's EMA over lists of tensors, in place
  (the gradient scaled by `scale`, plus l2 * model for Adam's `l2`).
"""
from oneflow_compat._global import functional as _F
from oneflow_compat._global import inplace as _inplace
from oneflow_compat._global.tensor import Tensor
from oneflow_compat.runtime import autograd as _autograd


def _tensor(x, fn, arg):
    if not isinstance(x, Tensor):
        raise TypeError("%s(): argument '%s' must be Tensor, not %s" % (fn, arg, type(x).__name__))
    return x


def _channel(x, axis, fn):
    axis = int(axis) % x.ndim
    return axis, [d for d in range(x.ndim) if d != axis]


def _per_channel(v, x, axis):
    """A (C,) tensor shaped to broadcast along x's axis."""
    return _F.reshape(v, tuple(x.shape[axis] if d == axis else 1 for d in range(x.ndim)))


def batch_norm_stats(input, axis, eps):  # noqa: A002
    x = _tensor(input, "batch_norm_stats", "input")
    axis, rest = _channel(x, axis, "batch_norm_stats")
    mean = _F.mean(x, rest)
    var = _F.mean(_F.square(_F.sub(x, _per_channel(mean, x, axis))), rest)
    return mean, _F.rsqrt(_F.add(var, float(eps)))


def batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean=None, running_var=None, momentum=0.1,  # noqa
                                        eps=1e-5, counts=None):
    """(global mean, global invstd) from every rank's (mean, invstd) rows ((world, C)) and `counts` ((world,));
    running_mean / running_var take the update in place."""
    _tensor(input, "batch_norm_gather_stats_with_counts", "input")
    _tensor(mean, "batch_norm_gather_stats_with_counts", "mean")
    _tensor(counts, "batch_norm_gather_stats_with_counts", "counts")
    c = _F.reshape(_F.cast(counts, mean.dtype), (-1, 1))
    n = _F.sum(c)
    g_mean = _F.div(_F.sum(_F.mul(mean, c), 0), n)
    var_i = _F.sub(_F.reciprocal(_F.square(invstd)), float(eps))
    var_n = _F.sum(_F.mul(_F.add(var_i, _F.square(_F.sub(mean, g_mean))), c), 0)
    g_invstd = _F.rsqrt(_F.add(_F.div(var_n, n), float(eps)))
    m = float(momentum)
    if running_mean is not None:
        _set(running_mean, _F.add(_F.mul(running_mean.detach(), 1 - m), _F.mul(g_mean.detach(), m)))
    if running_var is not None:
        unbiased = _F.div(var_n.detach(), _F.sub(n, 1.0))
        _set(running_var, _F.add(_F.mul(running_var.detach(), 1 - m), _F.mul(unbiased, m)))
    return g_mean, g_invstd


def batch_norm_elemt(input, weight, bias, mean, invstd, axis, eps):  # noqa: A002
    x = _tensor(input, "batch_norm_elemt", "input")
    axis, _ = _channel(x, axis, "batch_norm_elemt")
    y = _F.mul(_F.sub(x, _per_channel(mean, x, axis)), _per_channel(invstd, x, axis))
    return _F.add(_F.mul(y, _per_channel(weight, x, axis)), _per_channel(bias, x, axis))


def batch_norm_backward_reduce(grad_out, input, mean, invstd, axis):  # noqa: A002
    """(sum_dy, sum_dy_xmu, grad_weight, grad_bias) per channel."""
    x = _tensor(input, "batch_norm_backward_reduce", "input")
    dy = _tensor(grad_out, "batch_norm_backward_reduce", "grad_out")
    axis, rest = _channel(x, axis, "batch_norm_backward_reduce")
    sum_dy = _F.sum(dy, rest)
    sum_dy_xmu = _F.sum(_F.mul(dy, _F.sub(x, _per_channel(mean, x, axis))), rest)
    return sum_dy, sum_dy_xmu, _F.mul(sum_dy_xmu, invstd), sum_dy


def batch_norm_backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu, count, axis):  # noqa
    x = _tensor(input, "batch_norm_backward_elemt", "input")
    dy = _tensor(grad_out, "batch_norm_backward_elemt", "grad_out")
    axis, _ = _channel(x, axis, "batch_norm_backward_elemt")
    n = _F.sum(_F.cast(count, x.dtype))
    ch = lambda v: _per_channel(v, x, axis)  # noqa: E731
    mean_dy = _F.div(ch(sum_dy), n)
    factor1 = _F.div(_F.mul(_F.square(ch(invstd)), ch(sum_dy_xmu)), n)
    g = _F.sub(_F.sub(dy, mean_dy), _F.mul(_F.sub(x, ch(mean)), factor1))
    return _F.mul(g, _F.mul(ch(invstd), ch(weight)))


# --- multi-tensor updates (in place, returning None as OneFlow's Void functors) -----------------------------------
def _lists(fn, **lists):
    lens = {k: len(list(v)) for k, v in lists.items()}
    if len(set(lens.values())) != 1:
        raise RuntimeError("%s: the tensor lists must be as long, got %s" % (
            fn, ", ".join("%s %d" % kv for kv in lens.items())))
    return [list(v) for v in lists.values()]


def _set(t, value):
    """The optimizer's write into a parameter (a leaf requiring grad too), outside autograd as OneFlow's update
    kernels."""
    with _autograd.no_grad():
        _inplace.rebind(t, value.detach())


def multi_tensor_sgd_update(model, model_diff, scale, weight_decay, learning_rate_val):
    """model -= lr * (diff * scale + weight_decay * model)."""
    for w, g in zip(*_lists("multi_tensor_sgd_update", model=model, model_diff=model_diff)):
        d = _F.add(_F.mul(g.detach(), float(scale)), _F.mul(w.detach(), float(weight_decay)))
        _set(w, _F.sub(w.detach(), _F.mul(d, float(learning_rate_val))))


def multi_tensor_momentum_update(model, model_diff, momentum_buf, scale, weight_decay, learning_rate_val, momentum,
                                 dampening, nesterov, maximize):
    lists = _lists("multi_tensor_momentum_update", model=model, model_diff=model_diff, momentum_buf=momentum_buf)
    for w, g, buf in zip(*lists):
        d = _F.mul(g.detach(), float(scale))
        if weight_decay:
            d = _F.add(d, _F.mul(w.detach(), float(weight_decay)))
        b = _F.add(_F.mul(buf.detach(), float(momentum)), _F.mul(d, 1.0 - float(dampening)))
        _set(buf, b)
        d = _F.add(d, _F.mul(b, float(momentum))) if nesterov else b
        step = float(learning_rate_val) if maximize else -float(learning_rate_val)
        _set(w, _F.add(w.detach(), _F.mul(d, step)))


def multi_tensor_adam_update(model, model_diff, m, v, learning_rate_val, l2, beta1, beta2, bias_correction1_val,
                             bias_correction2_val, do_bias_correction, scale, weight_decay, epsilon):
    lists = _lists("multi_tensor_adam_update", model=model, model_diff=model_diff, m=m, v=v)
    bc1 = float(bias_correction1_val) if do_bias_correction else 1.0
    bc2 = float(bias_correction2_val) if do_bias_correction else 1.0
    lr = float(learning_rate_val)
    for w, g, mt, vt in zip(*lists):
        wv = w.detach()
        d = _F.add(_F.mul(g.detach(), float(scale)), _F.mul(wv, float(l2)))
        m_new = _F.add(_F.mul(mt.detach(), float(beta1)), _F.mul(d, 1.0 - float(beta1)))
        v_new = _F.add(_F.mul(vt.detach(), float(beta2)), _F.mul(_F.square(d), 1.0 - float(beta2)))
        _set(mt, m_new)
        _set(vt, v_new)
        denom = _F.add(_F.div(_F.sqrt(v_new), bc2 ** 0.5), float(epsilon))
        step = _F.mul(_F.div(m_new, denom), lr / bc1)
        _set(w, _F.sub(_F.sub(wv, step), _F.mul(wv, lr * float(weight_decay))))


def multi_tensor_yolov5_weight_update(model, model_update, d):
    """YOLOv5's EMA: model = d * model + (1 - d) * model_update."""
    for w, u in zip(*_lists("multi_tensor_yolov5_weight_update", model=model, model_update=model_update)):
        _set(w, _F.add(_F.mul(w.detach(), float(d)), _F.mul(u.detach(), 1.0 - float(d))))
