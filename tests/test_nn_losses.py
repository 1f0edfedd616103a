"""The nn ops family's losses on both surfaces: the legacy `flow.nn.*Loss` functions, `flow.smooth_l1_loss`,
`flow.combined_margin_loss`, `flow.nn.sparse_cross_entropy` and the model-parallel softmax cross entropy in jobs on
1 and 2 devices; OneFlow 0.9's functional forms and loss modules eagerly; each forward and backward against PyTorch
(or numpy written here where torch has no such loss), float32 and float64."""
import os
import sys

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nn_reference as ref  # noqa: E402

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _rng(seed=0):
    return np.random.default_rng(seed)


def _probs(dtype, shape=(6, 5), seed=0):
    return _rng(seed).uniform(0.05, 0.95, shape).astype(dtype)


def _normal(dtype, shape=(6, 5), seed=1):
    return _rng(seed).standard_normal(shape).astype(dtype)


def _signs(dtype, shape=(6,), seed=2):
    return _rng(seed).choice([-1.0, 1.0], shape).astype(dtype)


def _cases(dtype):
    """name -> (legacy body, torch function, inputs, differentiated inputs)."""
    p, t, w = _probs(dtype), _probs(dtype, seed=3), _probs(dtype, seed=4)
    x, y = _normal(dtype), _normal(dtype, seed=5)
    pw = _probs(dtype, (5,), seed=6) * dtype(3)
    a, b, c = _normal(dtype, (6, 4), 7), _normal(dtype, (6, 4), 8), _normal(dtype, (6, 4), 9)
    logp = np.log(_probs(dtype, seed=10) / _probs(dtype, seed=10).sum(1, keepdims=True)).astype(dtype)
    tgt = _probs(dtype, seed=11)
    tgt[0, 0] = 0  # a zero target: its term is 0
    return {
        "L1Loss": (lambda i, j: flow.nn.L1Loss(i, j), lambda i, j: TF.l1_loss(i, j), [x, y], [0, 1]),
        "L1Loss_none": (lambda i, j: flow.nn.L1Loss(i, j, reduction="none"),
                        lambda i, j: TF.l1_loss(i, j, reduction="none"), [x, y], [0, 1]),
        "BCELoss": (lambda i, j, k: flow.nn.BCELoss(i, j, k, reduction="sum"),
                    lambda i, j, k: TF.binary_cross_entropy(i, j, k, reduction="sum"), [p, t, w], [0, 1]),
        "BCEWithLogitsLoss": (lambda i, j, k: flow.nn.BCEWithLogitsLoss(i, j, pos_weight=k),
                              lambda i, j, k: TF.binary_cross_entropy_with_logits(i, j, pos_weight=k),
                              [x, t, pw], [0, 1]),
        "MSELoss": (lambda i, j: flow.nn.MSELoss(i, j, reduction="sum"),
                    lambda i, j: TF.mse_loss(i, j, reduction="sum"), [x, y], [0, 1]),
        "MarginRankingLoss": (lambda i, j, k: flow.nn.MarginRankingLoss(i, j, k, margin=0.3),
                              lambda i, j, k: TF.margin_ranking_loss(i, j, k, margin=0.3),
                              [x[:, 0], y[:, 0], _signs(dtype)], [0, 1]),
        "TripletMarginLoss": (lambda i, j, k: flow.nn.TripletMarginLoss(i, j, k, margin=2.0),
                              lambda i, j, k: TF.triplet_margin_loss(i, j, k, margin=2.0), [a, b, c], [0, 1, 2]),
        "TripletMarginLoss_p3": (lambda i, j, k: flow.nn.TripletMarginLoss(i, j, k, margin=2.0, p=3.0,
                                                                            reduction="sum"),
                                 lambda i, j, k: TF.triplet_margin_loss(i, j, k, margin=2.0, p=3.0, reduction="sum"),
                                 [a, b, c], [0, 1, 2]),
        "KLDivLoss": (lambda i, j: flow.nn.KLDivLoss(i, j, reduction="sum"),
                      lambda i, j: TF.kl_div(i, j, reduction="sum"), [logp, tgt], [0]),
        "KLDivLoss_log_target": (lambda i, j: flow.nn.KLDivLoss(i, j, log_target=True),
                                 lambda i, j: TF.kl_div(i, j, log_target=True), [logp, np.log(tgt + dtype(0.1))],
                                 [0, 1]),
        "smooth_l1_loss": (lambda i, j: flow.smooth_l1_loss(i, j, beta=0.7),
                           lambda i, j: TF.smooth_l1_loss(i, j, reduction="none", beta=0.7), [x, y], [0, 1]),
    }


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides:UserWarning")  # torch on kl_div's 'mean'
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(_cases(np.float64)))
def test_legacy_loss_matches_torch_on_one_and_two_devices(name, dtype):
    body, tfn, inputs, wrt = _cases(dtype)[name]
    outs, grads, rs = ref.legacy(body, inputs, wrt=wrt)
    t_outs, t_grads = ref.torch_ref(tfn, inputs, rs, wrt=wrt)
    ref.assert_close(outs, t_outs, dtype, name)
    ref.assert_close(grads, t_grads, dtype, name + " grad")
    outs2, grads2, _ = ref.legacy(body, inputs, devices=2, splits=[0] * len(inputs), wrt=wrt)
    ref.assert_close(outs2, outs, dtype, name + " on 2 devices")
    ref.assert_close(grads2, grads, dtype, name + " grad on 2 devices")


def test_legacy_loss_errors_are_oneflows():
    x = _normal(np.float32)
    with pytest.raises(AssertionError, match="The Input shape must be the same as Target shape"):
        ref.predict(lambda i, j: flow.nn.L1Loss(i, j), [x, x[:3]])
    with pytest.raises(AssertionError, match="is not a valid value for reduction"):
        ref.predict(lambda i, j: flow.nn.MSELoss(i, j, reduction="avg"), [x, x])
    with pytest.raises(AssertionError, match="only support `swap=True`"):
        ref.predict(lambda i, j: flow.nn.TripletMarginLoss(i, j, j, swap=True), [x, x])


def test_shared_names_are_legacy_functions_on_blobs():
    x = _normal(np.float32)
    out = ref.predict(lambda i, j: flow.nn.L1Loss(i, j, "sum"), [x, x * 2])[0]
    np.testing.assert_allclose(out, np.abs(x).sum(), rtol=1e-5)


def test_shared_names_are_modules_without_blobs():
    m = flow.nn.L1Loss(reduction="sum")
    assert isinstance(m, flow.nn.Module) and repr(m) == "L1Loss()"


def _cml_numpy(x, labels, m1, m2, m3):
    y = x.copy()
    rows = np.arange(len(labels))
    y[rows, labels] = np.cos(m1 * np.arccos(x[rows, labels]) + m2) - m3
    return y


@pytest.mark.parametrize("split", [0, 1])
def test_combined_margin_loss_matches_numpy_and_splits_by_class(split):
    x = _rng(3).uniform(-0.9, 0.9, (6, 7))
    labels = _rng(4).integers(0, 7, 6).astype(np.int32)

    def body(v, lab):
        return flow.combined_margin_loss(v, lab, m1=1.0, m2=0.5, m3=0.1)

    outs, grads, rs = ref.legacy(body, [x, labels], wrt=[0])
    np.testing.assert_allclose(outs[0], _cml_numpy(x, labels, 1.0, 0.5, 0.1), rtol=1e-12)
    tx = torch.tensor(x, requires_grad=True)
    rows = torch.arange(6)
    picked = torch.cos(torch.acos(tx[rows, labels]) + 0.5) - 0.1
    ty = tx.clone()
    ty[rows, labels] = picked
    (ty * torch.tensor(rs[0])).sum().backward()
    ref.assert_close(grads, [tx.grad.numpy()], np.float64, "combined_margin_loss grad")
    outs2, grads2, _ = ref.legacy(body, [x, labels], devices=2, splits=[split, None if split else 0], wrt=[0])
    ref.assert_close(outs2 + grads2, outs + grads, np.float64, "on 2 devices")


def test_sparse_cross_entropy_and_its_class_split_form():
    prob = _probs(np.float64, (6, 7))
    labels = _rng(5).integers(0, 7, (6, 1)).astype(np.int32)

    def body(p, lab):
        return flow.nn.sparse_cross_entropy(lab, p)

    def body_ms(p, lab):
        return flow.nn.sparse_cross_entropy(lab, p.with_distribute(flow.distribute.split(1)))

    outs, grads, rs = ref.legacy(body, [prob, labels], wrt=[0])
    t_outs, t_grads = ref.torch_ref(lambda p: -torch.log(p)[torch.arange(6), labels[:, 0]], [prob], rs)
    ref.assert_close(outs + grads, t_outs + t_grads, np.float64, "sparse_cross_entropy")
    outs2, grads2, _ = ref.legacy(body_ms, [prob, labels], devices=2, splits=[1, None], wrt=[0])
    ref.assert_close(outs2 + grads2, outs + grads, np.float64, "sparse_cross_entropy_ms on 2 devices")


def _model_parallel_job(devices, split_classes, dtype=np.float64):
    """A model-parallel classifier: dense weights split by class (model_distribute=split(0)), logits read split
    along the classes, the sparse softmax cross entropy; one SGD step."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    fdt = flow.double if dtype == np.float64 else flow.float
    weights = {"fc-weight": _rng(8).standard_normal((9, 4)).astype(dtype) * 0.5}

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((6, 4), dtype=fdt),
              labels: tp.Numpy.Placeholder((6,), dtype=flow.int32)) -> tp.Numpy:
        logits = flow.layers.dense(x, 9, use_bias=False, name="fc",
                                   kernel_initializer=flow.zeros_initializer(),
                                   model_distribute=flow.distribute.split(0) if split_classes
                                   else flow.distribute.broadcast())
        if split_classes:
            logits = logits.with_distribute(flow.distribute.split(1))
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum=0).minimize(loss)
        return loss

    flow.load_variables(weights)
    x = _rng(9).standard_normal((6, 4)).astype(dtype)
    labels = _rng(10).integers(0, 9, 6).astype(np.int32)
    loss = train(x, labels)
    return loss, flow.get_all_variables()["fc-weight"].numpy(), train, (x, labels, weights["fc-weight"])


def test_model_parallel_softmax_cross_entropy_splits_the_classes_and_equals_one_device():
    loss1, w1, _, (x, labels, w0) = _model_parallel_job(1, False)
    tw = torch.tensor(w0, requires_grad=True)
    tl = TF.cross_entropy(torch.tensor(x) @ tw.T, torch.tensor(labels).long(), reduction="none")
    tl.mean().backward()
    np.testing.assert_allclose(loss1, tl.detach().numpy(), rtol=1e-10)
    # (the legacy 1/N scaling of a loss of N instances is a float32 constant)
    np.testing.assert_allclose(w1, w0 - 0.5 * tw.grad.numpy(), rtol=1e-6)
    loss2, w2, job, _ = _model_parallel_job(2, True)
    np.testing.assert_allclose(loss2, loss1, rtol=1e-10)
    np.testing.assert_allclose(w2, w1, rtol=1e-10)
    # the classes stay split: the logits and the weights are never gathered, only per-row statistics travel
    report = flow.explain(job)
    by_type = {o.type: o for o in report.ops}
    assert [repr(s) for s in by_type["reduce_max_chunks"].sbp_in] == ["S(1)"]
    assert [repr(s) for s in by_type["sparse_cross_entropy"].sbp_in] == ["S(1)", "B"]
    moved = {tuple(b.shape) for b in report.boxing}
    assert (6, 9) not in moved and (9, 4) not in moved, moved
    assert moved, "the per-row maxima and sums cross the devices"


# --- OneFlow 0.9's functional forms and modules ------------------------------------------------------------------
F = flow.nn.functional


def _global_cases(dtype):
    p, t, w = _probs(dtype), _probs(dtype, seed=3), _probs(dtype, seed=4)
    x, y = _normal(dtype), _normal(dtype, seed=5)
    pw = _probs(dtype, (5,), seed=6) * dtype(3)
    a, b, c = _normal(dtype, (6, 4), 7), _normal(dtype, (6, 4), 8), _normal(dtype, (6, 4), 9)
    logp = np.log(_probs(dtype, seed=10) / _probs(dtype, seed=10).sum(1, keepdims=True)).astype(dtype)
    tgt = _probs(dtype, seed=11)
    tgt[1, 2] = 0
    cls = _rng(12).integers(0, 5, 6).astype(np.int64)
    cls[2] = -100
    cls3 = _rng(13).integers(0, 5, (6, 3)).astype(np.int64)
    x3 = _normal(dtype, (6, 5, 3), 14)
    cw = _probs(dtype, (5,), 15)
    return {
        "bce": (lambda i, j: F.binary_cross_entropy(i, j), lambda i, j: TF.binary_cross_entropy(i, j), [p, t]),
        "bce_weight_none": (lambda i, j, k: F.binary_cross_entropy(i, j, k, reduction="none"),
                            lambda i, j, k: TF.binary_cross_entropy(i, j, k, reduction="none"), [p, t, w], [0, 1]),
        "bce_logits": (lambda i, j, k: F.binary_cross_entropy_with_logits(i, j, pos_weight=k, reduction="sum"),
                       lambda i, j, k: TF.binary_cross_entropy_with_logits(i, j, pos_weight=k, reduction="sum"),
                       [x, t, pw], [0, 1]),
        "bce_logits_weight": (lambda i, j, k: F.binary_cross_entropy_with_logits(i, j, k),
                              lambda i, j, k: TF.binary_cross_entropy_with_logits(i, j, k), [x, t, w], [0, 1]),
        "l1": (lambda i, j: F.l1_loss(i, j, reduction="sum"), lambda i, j: TF.l1_loss(i, j, reduction="sum"),
               [x, y]),
        "smooth_l1": (lambda i, j: F.smooth_l1_loss(i, j, beta=0.5), lambda i, j: TF.smooth_l1_loss(i, j, beta=0.5),
                      [x, y]),
        "smooth_l1_none": (lambda i, j: F.smooth_l1_loss(i, j, reduction="none"),
                           lambda i, j: TF.smooth_l1_loss(i, j, reduction="none"), [x, y]),
        "kl_div": (lambda i, j: F.kl_div(i, j, reduction="batchmean"),
                   lambda i, j: TF.kl_div(i, j, reduction="batchmean"), [logp, tgt], [0]),  # torch: nan at t=0
        "kl_div_log_target": (lambda i, j: F.kl_div(i, j, reduction="none", log_target=True),
                              lambda i, j: TF.kl_div(i, j, reduction="none", log_target=True),
                              [logp, np.log(tgt + dtype(0.1))]),
        "margin_ranking": (lambda i, j, k: F.margin_ranking_loss(i, j, k, 0.2),
                           lambda i, j, k: TF.margin_ranking_loss(i, j, k, 0.2), [x[:, 0], y[:, 0], _signs(dtype)]),
        "triplet": (lambda i, j, k: F.triplet_margin_loss(i, j, k, margin=1.5),
                    lambda i, j, k: TF.triplet_margin_loss(i, j, k, margin=1.5), [a, b, c]),
        "triplet_swap_p1": (lambda i, j, k: F.triplet_margin_loss(i, j, k, margin=3.0, p=1.0, swap=True),
                            lambda i, j, k: TF.triplet_margin_loss(i, j, k, margin=3.0, p=1.0, swap=True),
                            [a, b, c]),
        "nll_ignore_index": (lambda i, j: F.nll_loss(i, j), lambda i, j: TF.nll_loss(i, j), [logp, cls]),
        "nll_weight": (lambda i, j, k: F.nll_loss(i, j, k), lambda i, j, k: TF.nll_loss(i, j, k), [logp, cls, cw],
                       [0]),
        "nll_weight_sum_3d": (lambda i, j, k: F.nll_loss(i, j, k, reduction="sum"),
                              lambda i, j, k: TF.nll_loss(i, j, k, reduction="sum"), [x3, cls3, cw], [0]),
        "ce_weight_ignore": (lambda i, j, k: F.cross_entropy(i, j, k), lambda i, j, k: TF.cross_entropy(i, j, k),
                             [x, cls, cw], [0]),
        "ce_smoothing_weight": (lambda i, j, k: F.cross_entropy(i, j, k, label_smoothing=0.2),
                                lambda i, j, k: TF.cross_entropy(i, j, k, label_smoothing=0.2), [x, cls, cw], [0]),
        "ce_3d_ignore_sum": (lambda i, j: F.cross_entropy(i, j, ignore_index=2, reduction="sum"),
                             lambda i, j: TF.cross_entropy(i, j, ignore_index=2, reduction="sum"), [x3, cls3]),
        "ce_probs_smoothing": (lambda i, j, k: F.cross_entropy(i, j, k, label_smoothing=0.1),
                               lambda i, j, k: TF.cross_entropy(i, j, k, label_smoothing=0.1), [x, t, cw], [0]),
    }


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(_global_cases(np.float64)))
def test_functional_loss_matches_torch(name, dtype):
    fn, tfn, inputs, *wrt = _global_cases(dtype)[name]
    wrt = wrt[0] if wrt else None
    outs, grads, rs = ref.eager(fn, inputs, wrt=wrt)
    t_outs, t_grads = ref.torch_ref(tfn, inputs, rs, wrt=wrt)
    ref.assert_close(outs, t_outs, dtype, name)
    ref.assert_close(grads, t_grads, dtype, name + " grad")


MODULES = [
    (lambda: flow.nn.BCELoss(), lambda: torch.nn.BCELoss(), "BCELoss()", "probs"),
    (lambda: flow.nn.BCEWithLogitsLoss(reduction="sum"), lambda: torch.nn.BCEWithLogitsLoss(reduction="sum"),
     "BCEWithLogitsLoss()", "logits"),
    (lambda: flow.nn.L1Loss(), lambda: torch.nn.L1Loss(), "L1Loss()", "logits"),
    (lambda: flow.nn.SmoothL1Loss(beta=2.0), lambda: torch.nn.SmoothL1Loss(beta=2.0), "SmoothL1Loss()", "logits"),
    (lambda: flow.nn.KLDivLoss(reduction="batchmean"), lambda: torch.nn.KLDivLoss(reduction="batchmean"),
     "KLDivLoss()", "probs"),
    (lambda: flow.nn.NLLLoss(), lambda: torch.nn.NLLLoss(), "NLLLoss()", "classes"),
    (lambda: flow.nn.MSELoss(), lambda: torch.nn.MSELoss(), "MSELoss()", "logits"),
]


@pytest.mark.parametrize("k", range(len(MODULES)))
def test_loss_modules_match_torch_and_print_as_oneflow(k):
    make, tmake, text, kind = MODULES[k]
    m, tm = make(), tmake()
    assert repr(m) == text
    x = _probs(np.float32) if kind == "probs" else _normal(np.float32)
    target = _probs(np.float32, seed=3) if kind != "classes" else _rng(1).integers(0, 5, 6).astype(np.int64)
    outs, grads, rs = ref.eager(m, [x, target])
    t_outs, t_grads = ref.torch_ref(tm, [x, target], rs)
    ref.assert_close(outs, t_outs, np.float32, text)
    ref.assert_close(grads, t_grads, np.float32, text + " grad")


def test_margin_and_combined_modules():
    m = flow.nn.MarginRankingLoss(margin=0.5)
    t = torch.nn.MarginRankingLoss(margin=0.5)
    a, b, s = _normal(np.float64)[:, 0], _normal(np.float64, seed=3)[:, 0], _signs(np.float64)
    outs, grads, rs = ref.eager(m, [a, b, s])
    ref.assert_close(outs + grads, [o for pair in [ref.torch_ref(t, [a, b, s], rs)] for o in pair[0] + pair[1]],
                     np.float64, "MarginRankingLoss")
    x = _rng(3).uniform(-0.9, 0.9, (6, 7))
    labels = _rng(4).integers(0, 7, 6).astype(np.int64)
    y = flow.nn.CombinedMarginLoss(1.0, 0.3, 0.2)(flow.tensor(x), flow.tensor(labels))
    np.testing.assert_allclose(y.numpy(), _cml_numpy(x, labels, 1.0, 0.3, 0.2), rtol=1e-12)
