"""Connectionist Temporal Classification: the loss (Graves et al. 2006) with its alpha (forward) and beta (backward)
recursions in log space, and the greedy (best path) decoder. OneFlow's `ctc_loss` / `ctc_loss_grad` /
`ctc_greedy_decoder` user ops (v0.4.0 and v0.9.0 oneflow/user/kernels/ctc_loss_kernel_util.cpp,
ctc_greedy_decoder.cpp), vectorized over the batch and the extended label positions; time is the only loop.

Layouts as OneFlow's: log_probs (T, N, C); targets (N, S) padded, or 1-D, the N targets concatenated (OneFlow
0.9); alpha (N, T, 2 * max_target_length + 1), the extended label l' = (blank, l1, blank, l2, ..., blank).

The gradient is OneFlow's (and PyTorch's): exp(lp) - exp(log(sum alpha beta over l' = c) + nll - lp), scaled by
the loss's gradient: the derivative with respect to the logits when log_probs = log_softmax(logits), which is how
OneFlow's documentation says to feed the op. Where zero_infinity and the loss is infinite, the gradient is 0.
"""
import numpy as np

from . import checks


def _as_index(xp, a):
    return a.astype(np.int64, copy=False)


def _extended_labels(xp, targets, target_lengths, max_target_length, blank):
    """(N, 2 S + 1) extended labels (blank where a target is absent or padded) and its validity mask."""
    n = target_lengths.shape[0]
    s = max_target_length
    if targets.ndim == 1:
        starts = xp.cumsum(target_lengths) - target_lengths
        pos = starts[:, None] + xp.arange(s)[None, :]
        inside = xp.arange(s)[None, :] < target_lengths[:, None]
        if targets.shape[0]:
            labels = xp.where(inside, targets[xp.minimum(pos, targets.shape[0] - 1)], blank)
        else:
            labels = xp.full((n, s), blank, dtype=np.int64)
    else:
        inside = xp.arange(s)[None, :] < target_lengths[:, None]
        labels = xp.where(inside, targets[:, :s], blank) if s else xp.zeros((n, 0), dtype=np.int64)
    ext = xp.full((n, 2 * s + 1), blank, dtype=np.int64)
    ext[:, 1::2] = labels
    valid = xp.arange(2 * s + 1)[None, :] < (2 * target_lengths + 1)[:, None]
    return ext, valid


def _outside(xp, values, low, high):
    """Whether any of `values` lies outside [low, high] (a 0-d array): for `checks.require`."""
    return xp.any((values < low) | (values > high))


def _valid_lengths(xp, input_lengths, target_lengths, t, max_target_length):
    """The lengths as indices, clipped into range on a device: the step reads valid positions until its checks are
    read (CuPy wraps an index out of bounds around; the host has refused such lengths already)."""
    il, tl = _as_index(xp, input_lengths), _as_index(xp, target_lengths)
    if xp is not np:
        il, tl = xp.clip(il, 0, t), xp.clip(tl, 0, max_target_length)
    return il, tl


def _check_on_device(xp, log_probs, targets, input_lengths, target_lengths, max_target_length, blank):
    """`_check` without waiting for the device: the lengths' checks are read with the step's results (`checks`),
    with the host's words, every length named (the first GPU run's message named only the first offending one): the
    lengths, copied as they are now, come down with the checks' flags (kernels/checks.py)."""
    t, n, c = log_probs.shape
    if tuple(input_lengths.shape) != (n,) or tuple(target_lengths.shape) != (n,):
        raise ValueError("ctc_loss: input_lengths %s and target_lengths %s must have the batch size %d of log_probs"
                         % (tuple(input_lengths.shape), tuple(target_lengths.shape), n))
    if not 0 <= blank < c:
        raise ValueError("ctc_loss: blank %d is not a class of log_probs (%d classes)" % (blank, c))
    if not n:
        return
    checks.require(xp, _outside(xp, input_lengths, 0, t), "ctc_loss: input_lengths %s must lie in [0, %d] (the "
                   "length of log_probs)", input_lengths.reshape(-1).copy(), t)
    checks.require(xp, _outside(xp, target_lengths, 0, max_target_length), "ctc_loss: target_lengths %s must lie "
                   "in [0, %d] (max_target_length)", target_lengths.reshape(-1).copy(), max_target_length)
    if targets.ndim == 1:
        total = xp.sum(target_lengths.astype(np.int64))
        checks.require(xp, total > targets.shape[0], "ctc_loss: the target_lengths sum to %d but the concatenated "
                       "targets hold %d", total, targets.shape[0])


def _check(xp, log_probs, targets, input_lengths, target_lengths, max_target_length, blank):
    if xp is not np:
        return _check_on_device(xp, log_probs, targets, input_lengths, target_lengths, max_target_length, blank)
    t, n, c = log_probs.shape
    il = np.asarray(input_lengths.get() if hasattr(input_lengths, "get") else input_lengths)
    tl = np.asarray(target_lengths.get() if hasattr(target_lengths, "get") else target_lengths)
    if il.shape != (n,) or tl.shape != (n,):
        raise ValueError("ctc_loss: input_lengths %s and target_lengths %s must have the batch size %d of log_probs"
                         % (il.shape, tl.shape, n))
    if (il < 0).any() or (il > t).any():
        raise ValueError("ctc_loss: input_lengths %s must lie in [0, %d] (the length of log_probs)" % (il.tolist(), t))
    if (tl < 0).any() or (tl > max_target_length).any():
        raise ValueError("ctc_loss: target_lengths %s must lie in [0, %d] (max_target_length)"
                         % (tl.tolist(), max_target_length))
    if targets.ndim == 1 and int(tl.sum()) > targets.shape[0]:
        raise ValueError("ctc_loss: the target_lengths sum to %d but the concatenated targets hold %d"
                         % (int(tl.sum()), targets.shape[0]))
    if not 0 <= blank < c:
        raise ValueError("ctc_loss: blank %d is not a class of log_probs (%d classes)" % (blank, c))


def _logsumexp(xp, *terms):
    m = terms[0]
    for a in terms[1:]:
        m = xp.maximum(m, a)
    m = xp.where(xp.isneginf(m), 0, m)
    total = xp.exp(terms[0] - m)
    for a in terms[1:]:
        total = total + xp.exp(a - m)
    return xp.log(total) + m


def _shift(xp, a, k, fill):
    """a shifted right by k along the last axis (a[..., s - k] at s), `fill` in front."""
    out = xp.full(a.shape, fill, dtype=a.dtype)
    if k < a.shape[-1]:
        out[..., k:] = a[..., :a.shape[-1] - k]
    return out


def _unshift(xp, a, k, fill):
    """a shifted left by k (a[..., s + k] at s), `fill` at the end."""
    out = xp.full(a.shape, fill, dtype=a.dtype)
    if k < a.shape[-1]:
        out[..., :a.shape[-1] - k] = a[..., k:]
    return out


def ctc_loss(xp, log_probs, targets, input_lengths, target_lengths, *, blank, max_target_length):
    """Per-sequence negative log likelihoods (N,) and the log alphas (N, T, 2 S + 1)."""
    _check(xp, log_probs, targets, input_lengths, target_lengths, max_target_length, blank)
    t_max, n, _ = log_probs.shape
    dtype = log_probs.dtype
    neginf = dtype.type(-np.inf)
    il, tl = _valid_lengths(xp, input_lengths, target_lengths, t_max, max_target_length)
    ext, valid = _extended_labels(xp, _as_index(xp, targets), tl, max_target_length, blank)
    width = ext.shape[1]
    c = log_probs.shape[2]
    # at once on the host, with the step's results on a device (`checks`)
    checks.require(xp, xp.any((ext < 0) | (ext >= c)), "ctc_loss: targets hold labels outside [0, %d) (the classes "
                   "of log_probs)", c)
    if xp is not np:  # valid reads until the check is read
        ext = xp.clip(ext, 0, c - 1)
    # the skip from s - 2 to s: a label differing from the one two positions back (never onto a blank)
    skip = xp.zeros(ext.shape, dtype=bool)
    skip[:, 2:] = ext[:, 2:] != ext[:, :-2]
    rows = xp.arange(n)[:, None]
    alpha = xp.full((n, t_max, width), neginf, dtype=dtype)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        first = xp.full((n, width), neginf, dtype=dtype)
        first[:, 0] = log_probs[0, :, blank] if t_max else neginf
        if width > 1 and t_max:
            first[:, 1] = xp.where(tl > 0, log_probs[0, xp.arange(n), ext[:, 1]], neginf)
        first = xp.where(valid & (il > 0)[:, None], first, neginf)
        if t_max:
            alpha[:, 0] = first
        prev = first
        for t in range(1, t_max):
            a3 = xp.where(skip, _shift(xp, prev, 2, neginf), neginf)
            cur = _logsumexp(xp, prev, _shift(xp, prev, 1, neginf), a3) + log_probs[t][rows, ext]
            cur = xp.where(valid & (t < il)[:, None], cur, neginf)
            alpha[:, t] = cur
            prev = cur
        last = xp.maximum(il - 1, 0)
        end = alpha[xp.arange(n), last]  # (N, width)
        l1 = end[xp.arange(n), 2 * tl]
        l2 = xp.where(tl > 0, end[xp.arange(n), xp.maximum(2 * tl - 1, 0)], neginf)
        loglik = _logsumexp(xp, l1, l2)
        # an empty input aligns only an empty target (probability 1)
        loglik = xp.where(il > 0, loglik, xp.where(tl > 0, neginf, dtype.type(0)))
    return (-loglik).astype(dtype, copy=False), alpha


def ctc_loss_grad(xp, grad_out, log_probs, targets, input_lengths, target_lengths, loss, alpha, *, blank,
                  zero_infinity, max_target_length):
    """d log_probs (T, N, C) from the loss's gradient (N,), OneFlow's formula (see the module docstring)."""
    t_max, n, c = log_probs.shape
    dtype = log_probs.dtype
    neginf = dtype.type(-np.inf)
    il, tl = _valid_lengths(xp, input_lengths, target_lengths, t_max, max_target_length)
    ext, valid = _extended_labels(xp, _as_index(xp, targets), tl, max_target_length, blank)
    width = ext.shape[1]
    skip_next = xp.zeros(ext.shape, dtype=bool)  # the skip from s + 2 back to s
    skip_next[:, :-2] = ext[:, :-2] != ext[:, 2:]
    rows = xp.arange(n)[:, None]
    log_ab = xp.full((t_max, n, width), neginf, dtype=dtype)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        init = xp.full((n, width), neginf, dtype=dtype)
        last_t = xp.maximum(il - 1, 0)
        lp_last = log_probs[last_t, xp.arange(n)]  # (N, C)
        init[xp.arange(n), 2 * tl] = lp_last[xp.arange(n), xp.full((n,), blank, dtype=np.int64)]
        has = tl > 0
        s1 = xp.maximum(2 * tl - 1, 0)
        init[xp.arange(n), s1] = xp.where(has, lp_last[xp.arange(n), ext[xp.arange(n), s1]],
                                          init[xp.arange(n), s1])
        nxt = xp.full((n, width), neginf, dtype=dtype)
        for t in range(t_max - 1, -1, -1):
            b3 = xp.where(skip_next, _unshift(xp, nxt, 2, neginf), neginf)
            rec = _logsumexp(xp, nxt, _unshift(xp, nxt, 1, neginf), b3) + log_probs[t][rows, ext]
            beta = xp.where((t == il - 1)[:, None], init, xp.where((t < il - 1)[:, None], rec, neginf))
            beta = xp.where(valid, beta, neginf)
            log_ab[t] = alpha[:, t] + beta
            nxt = beta
        # at t = T_b - 1 OneFlow's kernel (v0.9.0 user/kernels/ctc_loss_kernel_util.cpp, as torch's) WRITES the
        # blank's cell from s = 2 S_b, then the cell of label l'(2 S_b - 1) from that position: where a target's
        # last label is the blank itself, the second write replaces the first instead of adding to it
        overwritten = (il > 0) & (tl > 0) & (ext[xp.arange(n), s1] == blank)
        if t_max:
            at_last = log_ab[last_t, xp.arange(n)]  # (N, width)
            at_last[xp.arange(n), 2 * tl] = xp.where(overwritten, neginf, at_last[xp.arange(n), 2 * tl])
            log_ab[last_t, xp.arange(n)] = at_last
        # log sum over the positions s with l'(s) = c of alpha beta, per (t, b, c): the exponentials (shifted by
        # each (t, b)'s maximum) added into their class with one bincount, never a (N, 2 S + 1, C) one-hot table
        m = log_ab.max(axis=2, keepdims=True)
        m = xp.where(xp.isneginf(m), 0, m)
        cells = (xp.arange(t_max * n, dtype=np.int64).reshape(t_max, n, 1) * c + ext[None, :, :]).reshape(-1)
        sums = xp.bincount(cells, weights=xp.exp(log_ab - m).reshape(-1).astype(np.float64),
                           minlength=t_max * n * c)
        lcab = xp.log(sums.reshape(t_max, n, c).astype(dtype, copy=False)) + m
        nll = loss.astype(dtype, copy=False)
        grad = (xp.exp(log_probs) - xp.exp(lcab + nll[None, :, None] - log_probs)) * grad_out[None, :, None]
    keep = (xp.arange(t_max)[:, None] < il[None, :])
    if zero_infinity:
        keep = keep & ~xp.isposinf(nll)[None, :]
    return xp.where(keep[:, :, None], grad, dtype.type(0)).astype(dtype, copy=False)


def ctc_greedy_decoder(xp, log_probs, input_lengths, *, merge_repeated=True):
    """Best path per sequence: the most probable class at each step (the first of ties), repeats merged when
    `merge_repeated`, the last class (num_labels - 1) taken as the blank and dropped, decoded labels packed to the
    front and zero-filled (N, T); and minus the sum of the chosen log probabilities (N, 1)."""
    t_max, n, c = log_probs.shape
    il = _as_index(xp, input_lengths)
    if tuple(il.shape) != (n,):
        raise ValueError("ctc_greedy_decoder: input_lengths of shape %s must have the batch size %d of log_probs"
                         % (tuple(il.shape), n))
    if xp is np:
        if (il < 0).any() or (il > t_max).any():
            raise ValueError("ctc_greedy_decoder: input_lengths %s must lie in [0, %d] (the length of log_probs)"
                             % (il.tolist(), t_max))
    elif n:  # read with the step's results (`checks`), in the host's words; valid reads until then
        checks.require(xp, _outside(xp, il, 0, t_max), "ctc_greedy_decoder: input_lengths %s must lie in [0, %d] "
                       "(the length of log_probs)", il.reshape(-1).copy(), t_max)
        il = xp.clip(il, 0, t_max)
    best = log_probs.argmax(axis=2).T  # (N, T)
    top = log_probs.max(axis=2).T
    inside = xp.arange(t_max)[None, :] < il[:, None]
    neg_sum = -xp.where(inside, top, 0).sum(axis=1, keepdims=True).astype(log_probs.dtype)
    prev = xp.full(best.shape, -1, dtype=best.dtype)
    prev[:, 1:] = best[:, :-1]
    emit = inside & (best != c - 1)
    if merge_repeated:
        emit &= best != prev
    order = xp.argsort(~emit, axis=1, kind="stable")
    packed = xp.take_along_axis(best, order, axis=1)
    count = emit.sum(axis=1)
    decoded = xp.where(xp.arange(t_max)[None, :] < count[:, None], packed, 0)
    return decoded.astype(input_lengths.dtype), neg_sum
