"""The package's layers import only downward, and no import cycle exists — imports inside functions included.

Edges are read from the source (every `import` / `from … import` anywhere in a module, at any depth), not from
`sys.modules`, so an import hidden in a function body counts as much as one at the top. `from pkg import name`
is an edge to `pkg.name` when that is a module, else to `pkg`. Importing a submodule also runs its parent
package's `__init__`; that implicit edge is not counted (the top `oneflow_compat/__init__.py` imports the whole
surface by design), which is why sub-package `__init__` files are kept free of imports from other packages.
"""
import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# bottom to top; a module may import its own layer and the layers below it
LAYERS = [
    ("leaves", ["oneflow_compat.kernels", "oneflow_compat.comm", "oneflow_compat.backend", "oneflow_compat.core",
                "oneflow_compat.datasets"]),
    ("ir", ["oneflow_compat.ir"]),
    ("ops", ["oneflow_compat.ops"]),
    ("compiler", ["oneflow_compat.passes"]),
    ("runtime", ["oneflow_compat.runtime", "oneflow_compat.framework"]),
    ("tools", ["oneflow_compat.tools", "oneflow_compat.__main__"]),
    # everything else under oneflow_compat: the public surface (typing, layers, nn, math, optimizer, …) and _api
]
SURFACE = "surface"
TOP = "top"  # the package's own __init__: assembles the surface and the tools' public names; nothing imports it
ORDER = ["leaves", "ir", "ops", "compiler", "runtime", SURFACE, "tools", TOP]


def package_modules():
    mods = {}
    for base, prefix in ((os.path.join(ROOT, "oneflow_compat"), "oneflow_compat"),
                         (os.path.join(ROOT, "kernels"), "oneflow_compat.kernels")):
        for dirpath, _, files in os.walk(base):
            for f in files:
                if not f.endswith(".py"):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, f), base)[:-3].replace(os.sep, ".")
                name = prefix if rel == "__init__" else prefix + "." + rel
                if name.endswith(".__init__"):
                    name = name[: -len(".__init__")]
                mods[name] = os.path.join(dirpath, f)
    return mods


def _owner(name, mods):
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(mods):
    graph = {}
    for mod, path in mods.items():
        is_pkg = path.endswith("__init__.py")
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        deps = set()
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    src = ".".join(base + ([node.module] if node.module else []))
                else:
                    src = node.module
                for a in node.names:
                    full = src + "." + a.name
                    targets.append(full if full in mods else src)
            for t in targets:
                if t == "kernels" or t.startswith("kernels."):
                    t = "oneflow_compat." + t
                owner = _owner(t, mods) if t.startswith("oneflow_compat") else None
                if owner and owner != mod:
                    deps.add(owner)
        graph[mod] = deps
    return graph


def cycles(graph):
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def layer_of(mod):
    if mod == "oneflow_compat":
        return TOP
    for name, prefixes in LAYERS:
        if any(mod == p or mod.startswith(p + ".") for p in prefixes):
            return name
    return SURFACE


@pytest.fixture(scope="module")
def graph():
    return import_graph(package_modules())


def test_the_scanner_sees_imports_inside_functions():
    g = import_graph(package_modules())
    # the package top imports the surface (module level); tools are reached from the surface only lazily
    assert "oneflow_compat.layers" in g["oneflow_compat"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_in_the_package(graph):
    found = cycles(graph)
    assert found == [], "import cycles (imports inside functions included):\n" + "\n".join(
        " <-> ".join(c) for c in found)


def test_layers_import_only_downward(graph):
    bad = []
    for mod, deps in sorted(graph.items()):
        mine = ORDER.index(layer_of(mod))
        for d in sorted(deps):
            if ORDER.index(layer_of(d)) > mine:
                bad.append("%s (%s) imports %s (%s)" % (mod, layer_of(mod), d, layer_of(d)))
    assert bad == [], "imports that reach up a layer:\n" + "\n".join(bad)


def test_subpackage_inits_import_only_their_own_package(graph):
    mods = package_modules()
    bad = []
    for mod, path in mods.items():
        if mod != "oneflow_compat" and path.endswith("__init__.py"):
            bad.extend("%s imports %s" % (mod, d) for d in graph[mod] if not d.startswith(mod + "."))
    assert bad == []
