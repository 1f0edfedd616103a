"""CTC on both surfaces: the kernel against a brute-force sum over every alignment (numpy, written here), legacy
`flow.ctc_loss` in jobs on 1 and 2 devices (OneFlow v0.4.0's reductions and zero_infinity), OneFlow 0.9's
`nn.CTCLoss` / `flow._C.ctc_loss` eagerly and in nn.Graph with padded and concatenated targets, against PyTorch
where installed (forward and the gradient, float32 and float64), and `nn.functional.ctc_greedy_decoder`."""
import itertools
import os
import sys

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp
from oneflow_compat.kernels import ctc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nn_reference as ref  # noqa: E402


# --- independent references ----------------------------------------------------------------------------------------
def _log_softmax(z):
    m = z.max(axis=-1, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=-1, keepdims=True))


def _collapse(path, blank):
    out, prev = [], None
    for c in path:
        if c != prev and c != blank:
            out.append(c)
        prev = c
    return out


def brute_force(log_probs, targets, input_lengths, target_lengths, blank=0):
    """(losses (N,), d sum(losses · w) / d logits for log_probs = log_softmax(logits), as a function of w) by
    enumerating every path of every sequence: p = Σ over paths collapsing to the target of Π probabilities."""
    t_max, n, c = log_probs.shape
    probs = np.exp(log_probs)
    losses = np.empty(n)
    post = np.zeros_like(probs)  # Σ over the target's paths through (t, class), / p
    for b in range(n):
        tl, il = int(target_lengths[b]), int(input_lengths[b])
        target = list(targets[b][:tl]) if targets.ndim == 2 else \
            list(targets[int(np.sum(target_lengths[:b])):int(np.sum(target_lengths[:b])) + tl])
        total = 0.0
        through = np.zeros((t_max, c))
        for path in itertools.product(range(c), repeat=il):
            if _collapse(path, blank) == target:
                p = np.prod([probs[t, b, k] for t, k in enumerate(path)])
                total += p
                for t, k in enumerate(path):
                    through[t, k] += p
        losses[b] = -np.log(total) if total > 0 else np.inf
        if total > 0:
            post[:, b] = through / total

    def grad(w):
        g = (probs - post) * w[None, :, None]
        for b in range(n):
            g[int(input_lengths[b]):, b] = 0
        return g
    return losses, grad


def _case(seed, t, n, c, s, input_lengths, target_lengths, flat=False, dtype=np.float64):
    r = np.random.default_rng(seed)
    z = r.standard_normal((t, n, c))
    targets = r.integers(1, c, (n, s)).astype(np.int64)
    tl = np.array(target_lengths, dtype=np.int64)
    if flat:
        targets = np.concatenate([targets[b, :tl[b]] for b in range(n)])
    return z.astype(dtype), targets, np.array(input_lengths, dtype=np.int64), tl


BRUTE = [(0, 5, 3, 3, 2, [5, 4, 3], [2, 1, 2], False),
         (1, 4, 2, 3, 3, [4, 4], [2, 3], False),  # the second: repeated labels need a blank between
         (2, 5, 3, 3, 2, [5, 3, 5], [2, 0, 1], True)]


@pytest.mark.parametrize("k", range(len(BRUTE)))
def test_kernel_equals_the_sum_over_every_alignment(k):
    seed, t, n, c, s, il, tl, flat = BRUTE[k]
    z, targets, il, tl = _case(seed, t, n, c, s, il, tl, flat)
    if k == 1:
        targets[1] = [1, 1, 2]  # "1 1 2" in 4 steps: only 1 _ 1 2
    lp = _log_softmax(z)
    want, want_grad = brute_force(lp, targets, il, tl)
    loss, alpha = ctc.ctc_loss(np, lp, targets, il, tl, blank=0, max_target_length=s)
    np.testing.assert_allclose(loss, want, rtol=1e-12)
    w = np.random.default_rng(9).uniform(0.5, 1.5, n)
    g = ctc.ctc_loss_grad(np, w, lp, targets, il, tl, loss, alpha, blank=0, zero_infinity=False,
                          max_target_length=s)
    np.testing.assert_allclose(g, want_grad(w), rtol=1e-10, atol=1e-13)


def test_global_ctc_loss_gradient_through_log_softmax_equals_brute_force():
    seed, t, n, c, s, il, tl, flat = BRUTE[0]
    z, targets, il, tl = _case(seed, t, n, c, s, il, tl, flat)
    logits = flow.tensor(z, requires_grad=True)
    loss = flow.nn.CTCLoss(reduction="none")(flow.nn.functional.log_softmax(logits, dim=2), flow.tensor(targets),
                                             flow.tensor(il), flow.tensor(tl))
    w = np.array([0.5, -1.0, 2.0])
    (loss * flow.tensor(w)).sum().backward()
    want, want_grad = brute_force(_log_softmax(z), targets, il, tl)
    np.testing.assert_allclose(loss.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(logits.grad.numpy(), want_grad(w), rtol=1e-10, atol=1e-13)


def test_impossible_alignment_is_infinite_and_zero_infinity_zeroes_loss_and_gradient():
    z, targets, il, tl = _case(3, 4, 2, 4, 3, [4, 2], [2, 3])  # 3 labels cannot fit in 2 steps
    lp = flow.tensor(_log_softmax(z), requires_grad=True)
    loss = flow.nn.CTCLoss(reduction="none")(lp, flow.tensor(targets), flow.tensor(il), flow.tensor(tl))
    assert np.isfinite(loss.numpy()[0]) and loss.numpy()[1] == np.inf
    lp2 = flow.tensor(_log_softmax(z), requires_grad=True)
    zeroed = flow.nn.CTCLoss(reduction="sum", zero_infinity=True)(lp2, flow.tensor(targets), flow.tensor(il),
                                                                   flow.tensor(tl))
    assert zeroed.numpy() == pytest.approx(loss.numpy()[0], rel=1e-12)
    zeroed.backward()
    g = lp2.grad.numpy()
    assert np.all(g[:, 1] == 0) and np.all(np.isfinite(g)) and np.abs(g[:, 0]).sum() > 0


# --- OneFlow's documented numbers --------------------------------------------------------------------------------------
DOC_LOG_PROBS = np.array([
    [[-1.1031, -0.7998, -1.5200], [-0.9808, -1.1363, -1.1908]],
    [[-1.2258, -1.0665, -1.0153], [-1.1135, -1.2331, -0.9671]],
    [[-1.3348, -0.6611, -1.5118], [-0.9823, -1.2355, -1.0941]],
    [[-1.3850, -1.3273, -0.7247], [-0.8235, -1.4783, -1.0994]],
    [[-0.9049, -0.8867, -1.6962], [-1.4938, -1.3630, -0.6547]]], dtype=np.float32)
DOC_TARGETS = np.array([[1, 2, 2], [1, 2, 2]], dtype=np.int32)


def _legacy_job(reduction, zero_infinity=False, shape=(5, 2, 3), s=3):
    @flow.global_function()
    def ctc_loss_job(log_probs: tp.Numpy.Placeholder(shape=shape),
                     targets: tp.Numpy.Placeholder(shape=(shape[1], s), dtype=flow.int32),
                     input_lengths: tp.Numpy.Placeholder(shape=(shape[1],), dtype=flow.int32),
                     target_lengths: tp.Numpy.Placeholder(shape=(shape[1],), dtype=flow.int32)) -> tp.Numpy:
        return flow.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=reduction,
                             zero_infinity=zero_infinity)
    return ctc_loss_job


def test_legacy_docstring_example():
    """v0.4.0 loss_ops.py's example: loss [3.918017 2.907672]; "mean" divides by the target lengths first."""
    flow.clear_default_session()
    il = np.array([5, 5], np.int32)
    tl = np.array([3, 3], np.int32)
    none = _legacy_job("none")(DOC_LOG_PROBS, DOC_TARGETS, il, tl)
    np.testing.assert_allclose(none, [3.918017, 2.907672], rtol=1e-6)
    flow.clear_default_session()
    mean = _legacy_job("mean")(DOC_LOG_PROBS, DOC_TARGETS, il, tl)
    np.testing.assert_allclose(mean, [np.mean(none / 3)], rtol=1e-6)
    flow.clear_default_session()
    total = _legacy_job("sum")(DOC_LOG_PROBS, DOC_TARGETS, il, tl)
    np.testing.assert_allclose(total, [none.sum()], rtol=1e-6)


def test_legacy_zero_infinity_and_mean_clip_target_lengths_at_one():
    flow.clear_default_session()
    il = np.array([5, 1], np.int32)   # the second cannot align its 3 labels
    tl = np.array([3, 3], np.int32)
    none = _legacy_job("none", zero_infinity=True)(DOC_LOG_PROBS, DOC_TARGETS, il, tl)
    assert none[1] == 0 and np.isfinite(none[0])
    flow.clear_default_session()
    tl0 = np.array([3, 0], np.int32)  # an empty target: divided by 1, not 0
    none = _legacy_job("none")(DOC_LOG_PROBS, DOC_TARGETS, np.array([5, 5], np.int32), tl0)
    flow.clear_default_session()
    mean = _legacy_job("mean")(DOC_LOG_PROBS, DOC_TARGETS, np.array([5, 5], np.int32), tl0)
    np.testing.assert_allclose(mean, [(none[0] / 3 + none[1] / 1) / 2], rtol=1e-6)
    # the empty target's loss: minus the log probability of blank at every step
    np.testing.assert_allclose(none[1], -DOC_LOG_PROBS[:, 1, 0].sum(), rtol=1e-6)


@pytest.mark.parametrize("devices", [1, 2])
def test_legacy_train_gradient_on_devices_equals_brute_force(devices):
    """flow.ctc_loss on logits through flow.nn.logsoftmax in a train job, batch split on 2 devices."""
    seed, t, n, c, s, il, tl, _ = BRUTE[0]
    z, targets, il, tl = _case(seed, t, n, c, s, il, tl)

    def body(logits, targets, il, tl):
        return flow.ctc_loss(flow.nn.logsoftmax(logits, axis=2), targets, il, tl, reduction="none")

    outs, grads, rs = ref.legacy(body, [z, targets.astype(np.int32), il.astype(np.int32), tl.astype(np.int32)],
                             devices=devices, splits=[1, 0, 0, 0], wrt=[0])
    want, want_grad = brute_force(_log_softmax(z), targets, il, tl)
    np.testing.assert_allclose(outs[0], want, rtol=1e-10)
    np.testing.assert_allclose(grads[0], want_grad(rs[0]), rtol=1e-8, atol=1e-12)


def test_legacy_ctc_loss_errors():
    flow.clear_default_session()
    with pytest.raises(ValueError, match="reduction must be one of"):
        _legacy_job("average")(DOC_LOG_PROBS, DOC_TARGETS, np.array([5, 5], np.int32), np.array([3, 3], np.int32))
    flow.clear_default_session()
    with pytest.raises(ValueError, match=r"input_lengths \[6, 5\] must lie in \[0, 5\]"):
        _legacy_job("none")(DOC_LOG_PROBS, DOC_TARGETS, np.array([6, 5], np.int32), np.array([3, 3], np.int32))
    flow.clear_default_session()


def test_device_lengths_are_checked_with_the_results_in_the_hosts_words():
    """On a device the lengths' checks are read with the step's results (no wait in the kernel), and say what the
    host says (the first GPU run named only the first offending length: test_legacy_ctc_loss_errors failed there);
    until then the kernels read valid positions (the strict fake refuses an index out of bounds, where CuPy wraps
    it around)."""
    import strict_device
    from oneflow_compat.kernels import checks

    xp = strict_device.module()
    lp, targets = xp.asarray(DOC_LOG_PROBS), xp.asarray(DOC_TARGETS)
    il, tl = xp.asarray(np.array([6, 5], np.int32)), xp.asarray(np.array([3, 4], np.int32))
    loss, alpha = ctc.ctc_loss(xp, lp, targets, il, tl, blank=0, max_target_length=3)
    ctc.ctc_loss_grad(xp, xp.ones_like(loss), lp, targets, il, tl, loss, alpha, blank=0, zero_infinity=False,
                      max_target_length=3)
    with pytest.raises(ValueError, match=r"^ctc_loss: input_lengths \[6, 5\] must lie in \[0, 5\] \(the length of "
                                         r"log_probs\)$"):
        checks.raise_failed()
    ctc.ctc_loss(xp, lp, targets, xp.asarray(np.array([5, 5], np.int32)), tl, blank=0, max_target_length=3)
    with pytest.raises(ValueError, match=r"^ctc_loss: target_lengths \[3, 4\] must lie in \[0, 3\] "
                                         r"\(max_target_length\)$"):
        checks.raise_failed()
    ctc.ctc_greedy_decoder(xp, lp, xp.asarray(np.array([5, -1], np.int32)))
    with pytest.raises(ValueError, match=r"^ctc_greedy_decoder: input_lengths \[5, -1\] must lie in \[0, 5\]"):
        checks.raise_failed()
    with pytest.raises(ValueError, match=r"^ctc_greedy_decoder: input_lengths \[5, -1\] must lie in \[0, 5\]"):
        ctc.ctc_greedy_decoder(np, DOC_LOG_PROBS, np.array([5, -1], np.int32))  # the host's, at once


def test_ctc_loss_module_docstring_example():
    """OneFlow 0.9 nn.CTCLoss's example: mean 1.1376, sum 6.8257."""
    lp = flow.tensor(DOC_LOG_PROBS)
    args = (lp, flow.tensor(DOC_TARGETS), flow.tensor(np.array([5, 5], np.int32)),
            flow.tensor(np.array([3, 3], np.int32)))
    mean = flow.nn.CTCLoss()(*args)
    total = flow.nn.CTCLoss(blank=0, reduction="sum")(*args)
    assert mean.shape == () and mean.dtype == flow.float32
    assert float(mean.numpy()) == pytest.approx(1.1376, abs=1e-4)
    assert float(total.numpy()) == pytest.approx(6.8257, abs=1e-4)
    assert repr(flow.nn.CTCLoss()) == "CTCLoss()"
    from oneflow_compat.nn.modules import loss as loss_modules

    assert loss_modules.CTCLoss is flow.nn.CTCLoss


def test_c_ctc_loss_and_its_errors():
    args = (flow.tensor(DOC_LOG_PROBS), flow.tensor(DOC_TARGETS), flow.tensor(np.array([5, 5])),
            flow.tensor(np.array([3, 3])))
    out = flow._C.ctc_loss(*args, 3, 0, False, "none")
    np.testing.assert_allclose(out.numpy(), [3.918017, 2.907672], rtol=1e-6)
    with pytest.raises(RuntimeError, match="Reduction should be none, sum or mean."):
        flow._C.ctc_loss(*args, 3, 0, False, "average")
    with pytest.raises(ValueError, match="blank 3 must lie in"):
        flow._C.ctc_loss(*args, 3, 3, False, "none")
    with pytest.raises(ValueError, match=r"targets hold labels outside \[0, 3\)"):
        flow._C.ctc_loss(args[0], flow.tensor(DOC_TARGETS + 1), *args[2:], 3, 0, False, "none")
    with pytest.raises(ValueError, match=r"target_lengths \[3, 4\] must lie in \[0, 3\]"):
        flow._C.ctc_loss(*args[:3], flow.tensor(np.array([3, 4])), 3, 0, False, "none")


def test_ctc_loss_in_a_graph_equals_eager_with_both_target_forms():
    z, targets, il, tl = _case(4, 6, 3, 5, 3, [6, 5, 4], [3, 1, 2])
    flat = np.concatenate([targets[b, :tl[b]] for b in range(3)])
    loss_fn = flow.nn.CTCLoss(reduction="mean")

    class Forward(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.loss = loss_fn

        def build(self, lp, targets, il, tl):
            return self.loss(lp, targets, il, tl)

    lp = flow.tensor(_log_softmax(z))
    eager = loss_fn(lp, flow.tensor(targets), flow.tensor(il), flow.tensor(tl)).numpy()
    eager_flat = loss_fn(lp, flow.tensor(flat), flow.tensor(il), flow.tensor(tl)).numpy()
    graph = Forward()(lp, flow.tensor(targets), flow.tensor(il), flow.tensor(tl)).numpy()
    graph_flat = Forward()(lp, flow.tensor(flat), flow.tensor(il), flow.tensor(tl)).numpy()
    want, _ = brute_force(_log_softmax(z), targets, il, tl)
    np.testing.assert_allclose(eager, np.mean(want / tl), rtol=1e-12)
    for got in (eager_flat, graph, graph_flat):
        np.testing.assert_allclose(got, eager, rtol=1e-12)


# --- against PyTorch ---------------------------------------------------------------------------------------------
TORCH_CASES = [
    # (seed, T, N, C, S, input_lengths, target_lengths, flat, blank, reduction, zero_infinity)
    (10, 12, 4, 6, 5, [12, 10, 7, 12], [5, 3, 0, 4], False, 0, "none", False),
    (11, 10, 3, 5, 4, [10, 9, 8], [4, 2, 3], False, 4, "mean", False),
    (12, 9, 4, 5, 3, [9, 9, 6, 8], [3, 2, 3, 1], True, 0, "sum", False),
    (13, 8, 3, 4, 5, [8, 3, 8], [2, 5, 3], False, 0, "mean", True),
    (14, 7, 2, 4, 3, [7, 2], [2, 3], True, 0, "none", True),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", range(len(TORCH_CASES)))
def test_ctc_loss_matches_torch(k, dtype):
    torch = pytest.importorskip("torch")
    seed, t, n, c, s, il, tl, flat, blank, reduction, zero_inf = TORCH_CASES[k]
    r = np.random.default_rng(seed)
    lp = _log_softmax(r.standard_normal((t, n, c))).astype(dtype)
    targets = r.integers(0, c - 1, (n, s))
    targets = np.where(targets >= blank, targets + 1, targets) % c  # never the blank
    assert not (targets == blank).any()
    tl = np.array(tl)
    if flat:
        targets = np.concatenate([targets[b, :tl[b]] for b in range(n)])
    il = np.array(il)

    def ours(x):
        return flow.nn.CTCLoss(blank=blank, reduction=reduction, zero_infinity=zero_inf)(
            x, flow.tensor(targets), flow.tensor(il), flow.tensor(tl))

    def theirs(x):
        return torch.nn.functional.ctc_loss(x, torch.tensor(targets), torch.tensor(il), torch.tensor(tl),
                                            blank=blank, reduction=reduction, zero_infinity=zero_inf)

    outs, grads, rs = ref.eager(ours, [lp])
    t_outs, t_grads = ref.torch_ref(theirs, [lp], rs)
    ref.assert_close(outs + grads, t_outs + t_grads, dtype, "ctc case %d" % k)


# --- the greedy decoder ------------------------------------------------------------------------------------------
def _greedy_reference(log_probs, input_lengths, merge_repeated=True):
    """Per sequence, step by step: the first maximal class; emitted unless it is the last class (the blank) or,
    merging, equal to the previous step's class."""
    t_max, n, c = log_probs.shape
    decoded = np.zeros((n, t_max), np.int64)
    neg = np.zeros((n, 1), log_probs.dtype)
    for b in range(n):
        out, prev = [], -1
        for t in range(int(input_lengths[b])):
            k = int(np.argmax(log_probs[t, b]))
            neg[b, 0] -= log_probs[t, b, k]
            if k != c - 1 and not (merge_repeated and k == prev):
                out.append(k)
            prev = k
        decoded[b, :len(out)] = out
    return decoded, neg


def test_ctc_greedy_decoder_docstring_example():
    log_probs = flow.tensor([
        [[-1.54, -1.20, -1.95, -1.65, -1.81], [-1.84, -1.74, -1.58, -1.55, -1.12]],
        [[-1.68, -1.48, -1.89, -1.30, -2.07], [-1.13, -1.45, -1.24, -1.61, -1.66]],
        [[-1.56, -1.40, -2.83, -1.67, -1.48], [-1.20, -2.01, -2.05, -1.95, -1.24]],
        [[-2.09, -1.76, -1.36, -1.67, -1.45], [-1.85, -1.48, -1.34, -2.16, -1.55]]])
    decoded, neg_sum_logits = flow.nn.functional.ctc_greedy_decoder(log_probs, flow.tensor([4, 4]))
    assert decoded.dtype == flow.int64 and neg_sum_logits.dtype == flow.float32
    np.testing.assert_array_equal(decoded.numpy(), [[1, 3, 1, 2], [0, 2, 0, 0]])
    np.testing.assert_allclose(neg_sum_logits.numpy(), [[5.26], [4.79]], rtol=1e-6)
    assert flow._C.ctc_greedy_decoder is flow.nn.functional.ctc_greedy_decoder


@pytest.mark.parametrize("merge_repeated", [True, False])
def test_ctc_greedy_decoder_matches_a_stepwise_reference(merge_repeated):
    r = np.random.default_rng(7)
    lp = _log_softmax(r.standard_normal((9, 5, 4)) * 0.3)
    lp[2:5, 0] = lp[1, 0]  # repeats to merge
    il = np.array([9, 7, 0, 4, 9])
    decoded, neg = flow.nn.functional.ctc_greedy_decoder(flow.tensor(lp), flow.tensor(il), merge_repeated)
    want, want_neg = _greedy_reference(lp, il, merge_repeated)
    np.testing.assert_array_equal(decoded.numpy(), want)
    np.testing.assert_allclose(neg.numpy(), want_neg, rtol=1e-12)


def test_ctc_loss_takes_lengths_as_tuples_and_the_decoder_runs_in_a_graph():
    lp = flow.tensor(DOC_LOG_PROBS)
    loss = flow.nn.CTCLoss(reduction="none")(lp, flow.tensor(DOC_TARGETS), (5, 5), (3, 3))
    np.testing.assert_allclose(loss.numpy(), [3.918017, 2.907672], rtol=1e-6)

    class Decode(flow.nn.Graph):
        def build(self, log_probs, lengths):
            return flow.nn.functional.ctc_greedy_decoder(log_probs, lengths)

    lengths = flow.tensor(np.array([5, 3]))
    got = Decode()(lp, lengths)
    want = flow.nn.functional.ctc_greedy_decoder(lp, lengths)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    want_decoded, want_neg = _greedy_reference(DOC_LOG_PROBS, [5, 3])
    np.testing.assert_array_equal(want[0].numpy(), want_decoded)
    np.testing.assert_allclose(want[1].numpy(), want_neg, rtol=1e-6)
