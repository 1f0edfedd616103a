"""One kernel set: every kernel a job runs lives in `kernels/` (imported as `oneflow_compat.kernels`), and every
public function there is reached from the framework, not only from tests.

The first check reads the source (AST), like test_layers.py: a public function of a kernels module counts as used
when a module of the package (`oneflow_compat/**`) refers to it, or when a used kernels function does, through an
imported module alias (`nn_k.conv2d`) or an imported name (`from ...kernels.random import derived_seed`).
"""
import ast
import importlib
import os
import pkgutil
import warnings

import numpy as np

import oneflow_compat as flow
import oneflow_compat.ops as ops_pkg
import oneflow_compat.typing as tp
from oneflow_compat.ops import registry

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNELS = os.path.join(ROOT, "kernels")
PACKAGE = os.path.join(ROOT, "oneflow_compat")
KERNELS_PKG = "oneflow_compat.kernels"


def _kernel_modules():
    return sorted(f[:-3] for f in os.listdir(KERNELS) if f.endswith(".py") and f != "__init__.py")


def _parse(path):
    with open(path) as f:
        return ast.parse(f.read(), path)


def _imported_kernels(tree, in_kernels):
    """{alias: module} for kernels modules imported as a whole, {name: (module, function)} for imported names."""
    modules, names = {}, {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(KERNELS_PKG + ".") and alias.asname:
                    modules[alias.asname] = alias.name.rsplit(".", 1)[1]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            relative = in_kernels and node.level == 1
            if base == KERNELS_PKG or (relative and not base):
                for alias in node.names:
                    modules[alias.asname or alias.name] = alias.name
            elif base.startswith(KERNELS_PKG + ".") or (relative and base):
                module = base.rsplit(".", 1)[1] if base.startswith(KERNELS_PKG) else base
                for alias in node.names:
                    names[alias.asname or alias.name] = (module, alias.name)
    return modules, names


def _references(node, modules, names, own_module, own_functions):
    """(module, function) pairs that the code under `node` refers to."""
    refs = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id in modules:
            refs.add((modules[sub.value.id], sub.attr))
        elif isinstance(sub, ast.Name):
            if sub.id in names:
                refs.add(names[sub.id])
            elif sub.id in own_functions:
                refs.add((own_module, sub.id))
    return refs


def _unused_kernel_functions():
    public, edges, roots = set(), {}, set()
    for module in _kernel_modules():
        tree = _parse(os.path.join(KERNELS, module + ".py"))
        modules, names = _imported_kernels(tree, in_kernels=True)
        functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        public |= {(module, name) for name in functions if not name.startswith("_")}
        for name, fn in functions.items():
            edges[(module, name)] = _references(fn, modules, names, module, functions) - {(module, name)}
        # module-level code (tables, constants) runs on import: what it refers to is used by the module itself
        for stmt in tree.body:
            if not isinstance(stmt, ast.FunctionDef):
                for ref in _references(stmt, modules, names, module, functions):
                    edges.setdefault((module, "<module>"), set()).add(ref)
    for dirpath, _, files in os.walk(PACKAGE):
        for f in files:
            if f.endswith(".py"):
                tree = _parse(os.path.join(dirpath, f))
                modules, names = _imported_kernels(tree, in_kernels=False)
                roots |= _references(tree, modules, names, None, {})
    used, todo = set(), list(roots)
    while todo:
        ref = todo.pop()
        if ref in used:
            continue
        used.add(ref)
        todo.extend(edges.get(ref, ()))
        todo.extend(edges.get((ref[0], "<module>"), ()))
    return sorted(public - used)


def test_every_public_kernel_function_has_a_caller_outside_the_tests():
    unused = _unused_kernel_functions()
    assert not unused, ("kernels/ functions no job, pass or surface function reaches (delete them, or wire them "
                        "in): %s" % ", ".join("%s.%s" % ref for ref in unused))


def test_the_scan_sees_kernel_references():
    # guards the scan itself: known uses through an alias, an imported name and an internal call are found
    tree = _parse(os.path.join(PACKAGE, "ops", "nn_ops.py"))
    modules, names = _imported_kernels(tree, in_kernels=False)
    assert ("nn", "conv2d") in _references(tree, modules, names, None, {})
    tree = _parse(os.path.join(KERNELS, "loss.py"))
    modules, names = _imported_kernels(tree, in_kernels=True)
    assert ("activation", "softmax") in _references(tree, modules, names, "loss", {})


def _load_all_ops():
    for info in pkgutil.iter_modules(ops_pkg.__path__):
        importlib.import_module("oneflow_compat.ops." + info.name)


def test_every_op_kernel_is_defined_in_kernels():
    _load_all_ops()
    kernels = {t: registry.get(t).kernel for t in registry.all_types() if registry.get(t).kernel is not None}
    assert len(kernels) > 80
    outside = {t: "%s.%s" % (getattr(k, "__module__", None), getattr(k, "__qualname__", k))
               for t, k in kernels.items() if not str(getattr(k, "__module__", "")).startswith(KERNELS_PKG + ".")}
    assert not outside, "ops whose kernel is not a kernels/ function: %s" % outside


def test_sigmoid_op_saturates_without_overflow_warnings():
    @flow.global_function(type="predict")
    def sigmoid_job(x: tp.Numpy.Placeholder((5,), dtype=flow.float32)) -> tp.Numpy:
        return flow.math.sigmoid(x)

    x = np.array([-800.0, -80.0, 0.0, 100.0, 800.0], dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "overflow encountered in exp" would raise here
        y = sigmoid_job(x)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, [0.0, np.exp(-80.0), 0.5, 1.0, 1.0], rtol=1e-6, atol=0)
