"""The SBP signature validator: every declared signature of every op with examples reproduces the one-device
result on 2, 3 and 4 devices, every op with signatures has examples, and wrong signatures are caught."""
import numpy as np
import pytest

import oneflow_compat  # noqa: F401  (registers the ops)
from oneflow_compat.tools import validate
from oneflow_compat.ir import dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ops import registry, sbp_rules

validate.load_all_ops()


def test_every_op_with_signatures_has_examples():
    missing = validate.missing_examples()
    assert missing == [], ("ops with SBP signatures but no example rows in oneflow_compat/ops/examples.py "
                           "(add them with each new op): %s" % missing)


def test_examples_name_registered_ops():
    registered = set(registry.all_types())
    assert set(validate.EXAMPLES) <= registered, sorted(set(validate.EXAMPLES) - registered)
    assert not set(validate.EXAMPLES) & set(validate.WITHOUT_EXAMPLES)


# Core bugs the validator found (see the report of the consistent-view issue): op type -> (why, the exact failing
# (example index, signature, devices) set). A test fails when the failures differ from this set, in either direction,
# so a fix shows up as a failure asking to remove its entry here.
KNOWN_CORE_BUGS = {}  # op type -> (reason, {failing checks}) for bugs found and not fixed yet


@pytest.mark.parametrize("op_type", sorted(validate.EXAMPLES))
def test_declared_signatures_match_one_device(op_type):
    checks = validate.check_examples(op_type)
    assert checks, "no checks ran for %s" % op_type
    failed = {(c.example.split(":")[0], c.signature, c.devices) for c in checks if not c.ok}
    reason, known = KNOWN_CORE_BUGS.get(op_type, ("", set()))
    assert failed == known, "\n".join(str(c) for c in checks if not c.ok) or "fixed: remove %s from " \
        "KNOWN_CORE_BUGS" % op_type
    if known:
        pytest.xfail(reason)
    # every declared multi-device signature was exercised, not just the 1-device run
    assert any(c.devices > 1 for c in checks)


def test_split_input_pieces_reassemble():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 7))
    for n in (2, 3, 4):
        rows = validate.split_input(x, S.S(0), n, rng)
        # balanced: 5 rows over 3 devices -> 2, 2, 1
        assert [p.shape[0] for p in rows] == [len(range(*r)) for r in S.balanced_ranges(5, n)]
        np.testing.assert_array_equal(np.concatenate(rows, 0), x)
        cols = validate.split_input(x, S.S(1), n, rng)
        np.testing.assert_array_equal(np.concatenate(cols, 1), x)
        parts = validate.split_input(x, S.P, n, rng)
        assert not any(np.allclose(p, x) for p in parts)  # addends, not copies
        np.testing.assert_allclose(sum(parts), x, rtol=1e-12, atol=1e-12)
        ints = np.arange(12, dtype=np.int32).reshape(3, 4)
        np.testing.assert_array_equal(sum(validate.split_input(ints, S.P, n, rng)), ints)
        for p in validate.split_input(x, S.B, n, rng):
            np.testing.assert_array_equal(p, x)


def test_validate_op_direct_call():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 6)), rng.standard_normal((6, 7))
    assert validate.validate_op("matmul", [a, b], {"transpose_a": False, "transpose_b": False}) == []
    checks = validate.check_op("matmul", [a, b], {"transpose_a": False, "transpose_b": False}, device_counts=(3,))
    sigs = {c.signature for c in checks}
    assert "(S(1), S(0))->(P)" in sigs and "(B, S(1))->(S(1))" in sigs and all(c.ok for c in checks)


# --- the validator catches wrong declarations ---------------------------------------------------------------------
class _TempOp:
    """Registers an op for one test and removes it afterwards."""

    def __init__(self, defn):
        self.defn = defn

    def __enter__(self):
        registry.register(self.defn)
        return self.defn.type

    def __exit__(self, *exc):
        registry._REGISTRY.pop(self.defn.type, None)


def _same_meta(op):
    x = op.inputs[0]
    return [TensorMeta(x.shape, x.dtype)]


def test_wrong_partial_signature_is_caught():
    # square is not linear: claiming P->P must fail on every device count
    defn = registry.OpDef("validate_test_bogus_square", infer=_same_meta, kernel=lambda xp, x: x * x,
                          sbp=sbp_rules.unary_linear)
    x = np.random.default_rng(2).standard_normal((5, 7))
    with _TempOp(defn) as t:
        bad = validate.validate_op(t, [x], {})
    line = [c for c in bad if c.mesh is None]
    assert sorted((c.signature, c.devices) for c in line) == [("(P)->(P)", 2), ("(P)->(P)", 3), ("(P)->(P)", 4)]
    # on the 2 x 2 mesh: every derived signature with P on some mesh axis (a 1-D P on each group of that axis)
    names = {S.S(0): "S(0)", S.S(1): "S(1)", S.B: "B", S.P: "P"}
    want = sorted("((%s, %s))->((%s, %s))" % (names[a], names[b], names[a], names[b])
                  for a in names for b in names if S.P in (a, b))
    assert sorted(c.signature for c in bad if c.mesh == (2, 2)) == want
    assert all("differs from 1 device" in c.message for c in bad)


def test_split_along_reduced_axis_is_caught():
    # softmax normalizes along axis 1: splitting that axis gives each device its own normalization
    def sigs(op):
        return [((S.S(0),), (S.S(0),)), ((S.S(1),), (S.S(1),)), ((S.B,), (S.B,))]

    def softmax(xp, x):
        e = xp.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    defn = registry.OpDef("validate_test_bogus_softmax", infer=_same_meta, kernel=softmax, sbp=sigs)
    x = np.random.default_rng(4).standard_normal((5, 7))
    with _TempOp(defn) as t:
        bad = validate.validate_op(t, [x], {})
    assert sorted((c.signature, c.devices) for c in bad if c.mesh is None) == [("(S(1))->(S(1))", n)
                                                                               for n in (2, 3, 4)]
    # on the 2 x 2 mesh: every derived signature that splits axis 1 on some mesh axis
    names = {S.S(0): "S(0)", S.S(1): "S(1)", S.B: "B"}
    want = sorted("((%s, %s))->((%s, %s))" % (names[a], names[b], names[a], names[b])
                  for a in names for b in names if S.S(1) in (a, b))
    assert sorted(c.signature for c in bad if c.mesh == (2, 2)) == want


def test_wrong_local_shape_and_unequal_broadcast_are_caught():
    # a source op that ignores its piece's shape (no local_attrs) and one whose B copies differ per device
    def const_meta(op):
        return [TensorMeta((5, 3), dtypes.float64)]

    full = registry.OpDef("validate_test_bogus_const", infer=const_meta,
                          kernel=lambda xp: xp.ones((5, 3)), sbp=sbp_rules.source)
    with _TempOp(full) as t:
        bad = validate.validate_op(t, [], {}, device_counts=(2,))
    assert [c.signature for c in bad] == ["()->(S(0))", "()->(S(1))"]
    assert "the plan expects (3, 3)" in bad[0].message

    per_device = registry.OpDef("validate_test_bogus_index", infer=_same_meta,
                                kernel=lambda xp, x, index: x + index,
                                local_attrs=lambda op, dev: {"index": float(dev.index)},
                                sbp=lambda op: [((S.B,), (S.B,))])
    with _TempOp(per_device) as t:
        bad = validate.validate_op(t, [np.zeros((2, 2))], {}, device_counts=(3,))
    assert len(bad) == 1 and "differs between device 0 and device 1" in bad[0].message


def test_kernel_output_disagreeing_with_infer_is_caught():
    defn = registry.OpDef("validate_test_bogus_dtype", infer=_same_meta,
                          kernel=lambda xp, x: x.astype("float32"), sbp=sbp_rules.unary)
    with _TempOp(defn) as t:
        bad = validate.validate_op(t, [np.ones((4, 4))], {})
    assert len(bad) == 1 and "infer says" in bad[0].message


def test_kernel_writing_its_input_is_caught():
    def scale_in_place(xp, x):
        x *= 2
        return x

    defn = registry.OpDef("validate_test_bogus_inplace", infer=_same_meta, kernel=scale_in_place,
                          sbp=sbp_rules.unary)
    with _TempOp(defn) as t:
        bad = validate.validate_op(t, [np.ones((4, 4))], {})
    assert len(bad) == 1 and bad[0].devices == 1 and "modified its input 0 in place" in bad[0].message


def test_cli_table(capsys):
    assert validate.main(["matmul", "relu"]) == 0
    out = capsys.readouterr().out
    assert "matmul" in out and "(S(1), S(0))->(P)" in out and " 0 failed" in out
    assert validate.main(["no_such_op"]) == 2
