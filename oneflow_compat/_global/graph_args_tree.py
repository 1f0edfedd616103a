"""`oneflow.nn.graph.util.ArgsTree` / `NamedArg`: a nested argument (lists, tuples, dicts of tensors and other
leaves) walked as a tree, as OneFlow 0.9 exposes it for graph inputs and outputs (python/oneflow/nn/graph/util.py
@ v0.9.0, whose behaviour this follows: depth-first pre-order nodes, containers included; names built from the
position path, "0.1.2", dict entries named by their key; `map_leaf` keeps the structure).

Only exact list / tuple / dict / OrderedDict are containers (a subclass, e.g. a named tuple, is a leaf), except
OneFlow's `oneflow.return_types.*` named tuples, which count as tuples."""
from collections import OrderedDict

__all__ = ["ArgsTree", "NamedArg"]


def _container_kind(value):
    kind = type(value)
    if kind in (list, tuple, dict, OrderedDict):
        return kind
    if isinstance(value, tuple) and kind.__module__ in ("oneflow.return_types", "oneflow_compat.return_types"):
        return tuple
    return None


def _children(value):
    kind = _container_kind(value)
    if kind in (dict, OrderedDict):
        return list(value.values())
    if kind is not None:
        return list(value)
    return []


class NamedArg:
    """One node of the tree: its value, prefix (the position path), name and index in construction order."""

    def __init__(self, prefix="", name=None, global_index=0):
        self._prefix = prefix
        self._name = str(global_index) if name is None else name
        self._global_index = global_index
        self._has_value = False
        self._value = None

    def prefix(self):
        return self._prefix

    def name(self):
        return self._name

    def global_index(self):
        return self._global_index

    def value(self):
        if not self._has_value:
            raise AssertionError("NamedArg %r: its value is not set yet" % self._name)
        return self._value

    def set_value(self, value):
        if type(value) is NamedArg:
            raise AssertionError("NamedArg cannot hold a NamedArg")
        self._value, self._has_value = value, True

    def is_leaf(self):
        return _container_kind(self.value()) is None

    def __repr__(self):
        from oneflow_compat._global.tensor import Tensor

        v = self._value
        kind = _container_kind(v)
        if kind is tuple:
            what = "TUPLE"
        elif kind is list:
            what = "LIST"
        elif kind is not None:
            what = "DICT"
        elif isinstance(v, Tensor):
            what = "TENSOR, value: %s" % _tensor_meta(v)
        elif v is None:
            what = "NONE"
        else:
            what = "OPAQUE, value: %r" % (v,)
        return "(name: %s, idx: %d, type: %s)" % (self._name, self._global_index, what)


def _tensor_meta(t):
    if t.is_global:
        return "tensor(..., placement=%r, sbp=%r, size=%r, dtype=%r)" % (t.placement, t.sbp, tuple(t.shape), t.dtype)
    return "tensor(..., device=%r, size=%r, dtype=%r)" % (str(t.device), tuple(t.shape), t.dtype)


class ArgsTree:
    """`ArgsTree(io_args, gen_name=False, root_prefix="", root_name=None)`."""

    def __init__(self, io_args, gen_name=False, root_prefix="", root_name=None):
        self._io_args = io_args
        self._gen_name = gen_name
        self._next_index = 0
        self._named = self._name_tree(io_args, root_prefix, root_name) if gen_name else None

    def gen_name(self):
        return self._gen_name

    def _root(self):
        return self._named if self._gen_name else self._io_args

    def iter_nodes(self):
        """Every node, depth first, a container before its children (NamedArgs when gen_name is set)."""
        stack = [self._root()]
        while stack:
            node = stack.pop()
            value = node.value() if type(node) is NamedArg else node
            stack.extend(reversed(_children(value)))
            yield node

    def iter_named_nodes(self):
        if not self._gen_name:
            raise AssertionError("ArgsTree.iter_named_nodes needs gen_name=True")
        for node in self.iter_nodes():
            yield node.prefix() + "_" + node.name(), node

    def _name_tree(self, value, prefix, name):
        node = NamedArg(prefix, name, self._next_index)
        self._next_index += 1
        kind = _container_kind(value)

        def child_prefix(i):
            return "%s%s%d" % (prefix, "." if prefix else "", i)

        if kind in (dict, OrderedDict):
            node.set_value(value.__class__((k, self._name_tree(v, child_prefix(i), k))
                                           for i, (k, v) in enumerate(value.items())))
        elif kind is not None:
            node.set_value(value.__class__([self._name_tree(v, child_prefix(i), None) for i, v in enumerate(value)]))
        else:
            node.set_value(value)
        return node

    def map_leaf(self, map_function):
        """The same structure with every leaf `x` replaced by `map_function(x)` (the leaf's NamedArg with
        gen_name)."""
        if map_function is None:
            raise AssertionError("ArgsTree.map_leaf: map function cannot be None")
        return self._map(self._root(), map_function)

    def _map(self, value, fn):
        if type(value) is NamedArg:
            return fn(value) if value.is_leaf() else self._map(value.value(), fn)
        kind = _container_kind(value)
        if kind in (dict, OrderedDict):
            return value.__class__((k, self._map(v, fn)) for k, v in value.items())
        if kind is not None:
            return value.__class__([self._map(v, fn) for v in value])
        return fn(value)
