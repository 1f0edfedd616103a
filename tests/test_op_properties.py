"""Op properties are fields of the op declaration (`OpDef`), never op-type names compared in the passes, the
runtime, the framework, the tools or the op family modules.

The scan reads the source (AST), like test_layers.py: it fails on a comparison of an op's type (`op.type`,
`defn.type`, a variable named `op_type`) with a string or a collection, and on a table looked up by op type
(`TABLE[op.type]`, `TABLE.get(op.type)`) other than the tables whose key is the op type by design: the
registry (`ops/registry.py`, not scanned), the examples (`ops/examples.py`), and OneFlow's per-op-type tables that
the registry's declarations read (`ops/op_names.py`: OneFlow's op type names; `ops/amp_lists.py`: the
auto-mixed-precision lists, behind `OpDef.amp_color` and its kin). A job's `type` ("train" /
"predict") is not an op type and is allowed.
"""
import ast
import os

import pytest

import oneflow_compat  # noqa: F401  (registers the ops)
from oneflow_compat.ops import registry
from oneflow_compat.tools import validate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "oneflow_compat")
SCANNED = ["passes", "runtime", "framework", "tools", "ops", "_api"]
NOT_SCANNED = {os.path.join(PACKAGE, "ops", "registry.py")}
_PER_OP_TABLES = {"registry", "examples", "EXAMPLES", "WITHOUT_EXAMPLES", "ONEFLOW_OP_NAMES", "_ONEFLOW_TYPE",
                  "NO_CAST_INPUTS", "SHAPE_ONLY_INPUTS", "no_cast_table"}

validate.load_all_ops()


def _is_job(node):
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return "job" in name.lower()


def _is_op_type(node):
    if isinstance(node, ast.Name):
        return node.id == "op_type"
    if isinstance(node, ast.Attribute) and node.attr in ("type", "op_type"):
        return not _is_job(node.value)
    return False


def _is_literal(node):
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_literal(e) for e in node.elts)
    return False


def _is_per_op_table(node):
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name in _PER_OP_TABLES


def _type_switches(tree):
    """(line, source) of every op-type comparison or op-type-keyed lookup under `tree`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left] + node.comparators
            for op, left, right in zip(node.ops, operands, operands[1:]):
                membership = (isinstance(op, (ast.In, ast.NotIn)) and _is_op_type(left)
                              and not _is_per_op_table(right))
                equality = isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)) and (
                    (_is_op_type(left) and _is_literal(right)) or (_is_op_type(right) and _is_literal(left)))
                if membership or equality:
                    found.append(node)
        elif isinstance(node, ast.Subscript) and _is_op_type(node.slice):
            if not _is_per_op_table(node.value):
                found.append(node)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args and _is_op_type(node.args[0])):
            if not _is_per_op_table(node.func.value):
                found.append(node)
    return found


def _scan(path):
    with open(path) as f:
        source = f.read()
    tree = ast.parse(source, path)
    return ["%s:%d: %s" % (os.path.relpath(path, ROOT), n.lineno, ast.get_source_segment(source, n))
            for n in _type_switches(tree)]


def _python_files(folder):
    for base, _, files in os.walk(os.path.join(PACKAGE, folder)):
        for name in sorted(files):
            if name.endswith(".py") and os.path.join(base, name) not in NOT_SCANNED:
                yield os.path.join(base, name)


def test_no_module_switches_on_op_type_names():
    hits = [h for folder in SCANNED for path in _python_files(folder) for h in _scan(path)]
    assert not hits, ("op types compared by name; declare a property on OpDef (ops/registry.py) instead:\n"
                      + "\n".join(hits))


@pytest.mark.parametrize("source", [
    'if op.type == "watch": pass',
    'if x.op.type in ("input", "variable"): pass',
    'if op.type in _CASTS: pass',
    'if "boxing" != op.type: pass',
    'if op_type == "crop": pass',
    'f = _BUILDERS.get(op.type)',
    'f = _BUILDERS[op.defn.type]',
    'if op.defn.type in SKIPPED: pass',
])
def test_the_scan_catches_type_switches(source):
    assert _type_switches(ast.parse(source))


@pytest.mark.parametrize("source", [
    'if job.type == "train": pass',
    'if self.job.type != "predict": pass',
    'defn = registry.get(op.type)',
    'rows = examples.EXAMPLES[op_type]',
    'if op_type in examples.EXAMPLES: pass',
    'msg = "%s" % op.type',
    'if op.defn.role == "variable": pass',
])
def test_the_scan_allows_what_is_not_a_type_switch(source):
    assert not _type_switches(ast.parse(source))


def _with(prop):
    return {t for t in registry.all_types() if getattr(registry.get(t), prop)}


def test_declared_properties():
    roles = {t: registry.get(t).role for t in registry.all_types() if registry.get(t).role != "compute"}
    assert roles == {"input": "input", "variable": "variable"}
    casts = {t: registry.get(t).view_cast for t in registry.all_types() if registry.get(t).view_cast}
    assert casts == {"cast_to_mirrored": "mirrored", "cast_from_mirrored": "consistent"}
    assert _with("boxing") == {"boxing"}
    assert {t: registry.get(t).runtime_hook for t in _with("runtime_hook")} == {"watch": "watch", "boxing": "boxing"}
    assert _with("in_place") == {"optimizer_update", "increment", "moving_average_update", "loss_scale_update",
                                 "matmul_sgd_update", "reduce_sum_sgd_update",
                                 # LARS / LAMB on a split variable (whole norms over the pieces)
                                 "optimizer_update_whole_norms",
                                 # the legacy API's writes to variables (flow.assign, logical_slice_assign)
                                 "assign", "assign_if", "assign_if_not", "logical_slice_assign",
                                 "moving_average_min_max_observer",
                                 # nn.Embedding(max_norm=...)'s renormalisation of the looked-up rows (api-gaps)
                                 "embedding_renorm"}
    assert _with("in_place") <= _with("stateful")
    assert _with("boxing") | _with("runtime_hook") <= _with("collective")
    # their output is a new array: matmul, reductions, sums and scalings (gradients the optimizer may scale in place)
    assert {"matmul", "reduce_sum", "add_n", "conv2d_grad_weight", "scalar_mul"} <= _with("fresh_output")


def test_every_runtime_hook_is_supplied():
    from oneflow_compat.framework import eager
    from oneflow_compat.runtime import executable

    hooks = {registry.get(t).runtime_hook for t in _with("runtime_hook")}
    assert hooks <= set(executable.RUNTIME_HOOKS)
    assert hooks <= set(eager._EAGER_HOOKS)


def test_a_property_value_that_does_not_exist_is_refused():
    with pytest.raises(ValueError, match="role"):
        registry.OpDef("bogus", infer=None, role="source")
    with pytest.raises(ValueError, match="view_cast"):
        registry.OpDef("bogus", infer=None, view_cast="local")
