"""Every registered op with a gradient rule: for each of its gradient rows in oneflow_compat/ops/examples.py, its
gradient through the whole framework equals central differences in float64, and on 2 and 3 devices (inputs split
as the row lists) outputs and gradients equal the single-device ones.

An op that has a grad rule but no gradient row (and no check of its own in SEPARATE) makes
`test_every_op_with_a_grad_rule_has_rows` fail: a new op must come with its rows.
"""
import os
import sys

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat.ops import examples, registry
from oneflow_compat.tools import validate

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gradcheck as gc  # noqa: E402

validate.load_all_ops()

def grad_rows(op_type):
    return [(k, ex) for k, ex in enumerate(examples.EXAMPLES.get(op_type, ())) if ex.grad]


def cases(op_type, rng):
    """The gradient check's cases of an op: one per gradient row, its inputs drawn from `rng`."""
    return [gc.Case(op_type, ex.make(rng), ex.attrs, wrt=ex.wrt, outputs=ex.outputs, splits=ex.splits,
                    layouts=ex.layouts, eps=ex.eps, rtol=ex.rtol, atol=ex.atol,
                    label="row %d%s" % (k, ": " + ex.note if ex.note else ""))
            for k, ex in grad_rows(op_type)]


def _mirrored_square(blobs):
    x = blobs[0]
    with flow.scope.mirrored_view():
        y = registry.apply("square", [x])  # cast_to_mirrored is inserted before it
    # back in the consistent view (cast_from_mirrored is inserted); reshape_like with the static input gives a
    # fixed-shape blob that a job may return as a numpy array
    return [registry.apply("reshape_like", [y, x])]


# Ops whose gradient needs a check of its own (named here, so the coverage test knows where it is)
SEPARATE = {
    "dropout": "test_dropout_gradient_is_the_mask (random per call: finite differences across calls do not apply)",
    "reduce_max_device_stage": "tests/test_legacy_math.py::test_two_stage_reduce (its logical output has one entry "
                               "per device)",
    "reduce_min_device_stage": "tests/test_legacy_math.py::test_two_stage_reduce (its logical output has one entry "
                               "per device)",
    "distributed_partial_fc_sample": "tests/test_legacy_experimental.py (a new random sample every call)",
    "fake_quantization": "tests/test_legacy_quantization.py (a step function: its straight-through gradient is not "
                         "a derivative finite differences can see)",
    "ctc_loss": "test_ctc_loss_gradient_through_log_softmax (OneFlow's gradient is the one through log_softmax)",
    "cast_to_mirrored": "test_view_casts (they exist only inside a mirrored-view construct)",
    "cast_from_mirrored": "test_view_casts (they exist only inside a mirrored-view construct)",
    "normalization_batch_stats": "tests/test_zoo_kernels.py (its gradient is the whole batch norm's, statistics "
                                 "included: finite differences with fixed statistics do not apply)",
    # the leftovers helper: a sum over ranks, each running its own copy of a local graph
    "eager_ccl_all_reduce": "tests/mpi_scripts/sync_batchnorm.py under mpiexec (SyncBatchNorm in a local graph: "
                            "the step's parameter moves summed over ranks == the whole batch's gradient step)",
}
# one-embedding team: the lookup's gradient updates the embedding's key-value store (its "gradient" for the
# shadow parameter is zero by design): tests/test_one_embedding.py trains it against torch's dense embedding
SEPARATE.update({
    "one_embedding_fused_lookup": "tests/test_one_embedding.py (nn.Graph and eager training == torch's dense "
                                  "nn.Embedding with SGD, momentum, Adam, Adagrad; Ftrl == numpy)",
})


def _ops_with_grad():
    return [t for t in registry.all_types() if registry.get(t).grad is not None]


def _without_rows():
    return [t for t in _ops_with_grad() if not grad_rows(t) and t not in SEPARATE]


def test_every_op_with_a_grad_rule_has_rows():
    missing = _without_rows()
    assert not missing, "ops with a grad rule but no gradient row in oneflow_compat/ops/examples.py: %s" % (
        ", ".join(missing))
    both = [t for t in SEPARATE if grad_rows(t)]
    assert not both, "ops with gradient rows and a separate check: %s" % ", ".join(both)


def test_a_new_differentiable_op_without_rows_is_caught():
    defn = registry.OpDef("gradcheck_test_new_op", infer=lambda op: [op.inputs[0].meta],
                          kernel=lambda xp, x: x, grad=lambda op, dys: [dys[0]])
    registry.register(defn)
    try:
        assert _without_rows() == ["gradcheck_test_new_op"]
    finally:
        registry._REGISTRY.pop(defn.type)


@pytest.mark.parametrize("op_type", sorted(t for t in _ops_with_grad() if grad_rows(t)))
def test_gradient(op_type):
    rng = np.random.default_rng(sum(map(ord, op_type)))
    for case in cases(op_type, rng):
        reference = gc.check_op(case)
        for devices in (2, 3):
            gc.compare_devices(case, devices, reference)


def test_view_casts():
    case = gc.Case("cast_to_mirrored", [np.random.default_rng(0).standard_normal((4, 3))], body=_mirrored_square,
                   label="mirrored square")
    reference = gc.check_op(case)
    for devices in (2, 3):
        gc.compare_devices(case, devices, reference)


def _ctc_of_logits(attrs):
    def body(blobs):
        z, targets, il, tl = blobs
        log_probs = registry.apply("log", [registry.apply("softmax", [z], {"axis": 2})])
        return [registry.apply("ctc_loss", [log_probs, targets, il, tl], attrs)[0]]
    return body


def test_ctc_loss_gradient_through_log_softmax():
    """OneFlow's ctc_loss gradient (v0.4.0 ctc_loss_kernel_util.cpp) is exp(lp) - posterior, the derivative with
    respect to the logits of log_softmax: checked as such against central differences, and on 2 and 3 devices."""
    rng = np.random.default_rng(5)
    for k, ex in enumerate(examples.EXAMPLES["ctc_loss"]):
        lp, targets, il, tl = ex.make(rng)
        z = rng.standard_normal(lp.shape)
        case = gc.Case("ctc_loss", [z, targets, il, tl], ex.attrs, wrt=[0], splits=[1, None, None, None],
                       layouts=[[1, 0, 0, 0]] if targets.ndim == 2 else (), body=_ctc_of_logits(ex.attrs),
                       rtol=1e-5, label="row %d: %s" % (k, ex.note))
        reference = gc.check_op(case)
        for devices in (2, 3):
            gc.compare_devices(case, devices, reference)


def test_dropout_gradient_is_the_mask():
    """d loss / dx = r · mask / (1 - rate) with the mask the same call used, on 1, 2 and 3 devices."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 10))
    rate = 0.3
    case = gc.Case("dropout", [x], {"rate": rate, "seed": 7}, outputs=[0])
    ref = None
    for devices in (1, 2, 3):
        sel, rs = gc.loss_weights(case, [x, x.astype(np.int8)])
        (y, mask), (g,) = gc.framework_grads(case, sel, rs, devices)
        assert mask.dtype == np.int8 and set(np.unique(mask)) <= {0, 1}
        np.testing.assert_allclose(y, x * mask / (1 - rate), rtol=1e-15)
        np.testing.assert_allclose(g, rs[0] * mask / (1 - rate), rtol=1e-15)
        if ref is None:
            ref = mask
        np.testing.assert_array_equal(mask, ref)


def test_gradcheck_catches_a_wrong_gradient(monkeypatch):
    """The checker itself: a grad rule that is off by 1% must fail."""
    defn = registry.get("sin")
    right = defn.grad

    def wrong(op, dys):
        return [registry.apply("scalar_mul", [right(op, dys)[0]], {"value": 1.01})]

    monkeypatch.setattr(defn, "grad", wrong)
    with pytest.raises(AssertionError, match="central differences"):
        gc.check_op(gc.Case("sin", [np.linspace(-1.0, 1.0, 12).reshape(3, 4)]))
