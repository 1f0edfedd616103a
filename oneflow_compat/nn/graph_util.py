"""`oneflow.nn.graph.util.ArgsTree` and `NamedArg` (OneFlow 0.9, python/oneflow/nn/graph/util.py): a nested
structure of arguments (tuples, lists, dicts of tensors and other values) walked as a tree, depth first, its
leaves mapped, and, with `gen_name=True`, every node named by its path ("prefix_name")."""
import collections

from oneflow_compat._global.tensor import Tensor

__all__ = ["ArgsTree", "NamedArg"]


def _is_container(value):
    # exact types only, as OneFlow's _is_raw_type (a namedtuple is a leaf, but oneflow.return_types are tuples)
    t = type(value)
    if t in (list, tuple, dict, collections.OrderedDict):
        return True
    return isinstance(value, tuple) and t.__module__ == "oneflow.return_types"


def _children(value):
    if isinstance(value, dict):
        return list(value.values())
    return list(value) if _is_container(value) else []


class NamedArg:
    """One node of the tree: its value, its prefix (the path of indices to it), its name (the dict key, or its
    global index) and its global index (the order of construction, depth first)."""

    def __init__(self, prefix="", name=None, global_index=0):
        self._prefix = prefix
        self._name = name if name is not None else str(global_index)
        self._global_index = global_index
        self._value = None
        self._is_value_set = False

    def prefix(self):
        return self._prefix

    def name(self):
        return self._name

    def global_index(self):
        return self._global_index

    def value(self):
        assert self._is_value_set, "self._value is not set yet"
        return self._value

    def set_value(self, value):
        assert not isinstance(value, NamedArg), "cannot accept value of type NamedArg"
        self._value, self._is_value_set = value, True

    def is_leaf(self):
        assert self._is_value_set, "self._value is not set yet"
        return not _is_container(self._value)

    def __repr__(self):
        v = self._value
        if type(v) is tuple:
            kind = "TUPLE"
        elif type(v) is list:
            kind = "LIST"
        elif isinstance(v, dict) and _is_container(v):
            kind = "DICT"
        elif isinstance(v, Tensor):
            kind = "TENSOR"
        elif v is None:
            kind = "NONE"
        else:
            kind = "OPAQUE"
        text = "(name: %s, idx: %d, type: %s" % (self._name, self._global_index, kind)
        if isinstance(v, Tensor):
            text += ", value: tensor(shape=%s, dtype=%s)" % (tuple(v.shape), v.dtype)
        elif not _is_container(v):
            text += ", value: " + repr(v)
        return text + ")"


class ArgsTree:
    def __init__(self, io_args, gen_name=False, root_prefix="", root_name=None):
        self._io_args = io_args
        self._gen_name = gen_name
        self._next_index = 0
        self._named = self._name_tree(io_args, root_prefix, root_name) if gen_name else None

    def gen_name(self):
        return self._gen_name

    def _name_tree(self, value, prefix, name):
        node = NamedArg(prefix, name, self._next_index)
        self._next_index += 1
        if isinstance(value, dict) and _is_container(value):
            node.set_value(type(value)((k, self._name_tree(v, prefix + ("." if prefix else "") + str(i), k))
                                       for i, (k, v) in enumerate(value.items())))
        elif _is_container(value):
            items = [self._name_tree(v, prefix + ("." if prefix else "") + str(i), None) for i, v in enumerate(value)]
            node.set_value(type(value)(items) if type(value) in (list, tuple) else type(value)(*items))
        else:
            node.set_value(value)
        return node

    def iter_nodes(self):
        """The nodes depth first, each before its children (NamedArg nodes when gen_name is set)."""
        stack = [self._named if self._gen_name else self._io_args]
        while stack:
            node = stack.pop()
            value = node.value() if isinstance(node, NamedArg) else node
            stack.extend(reversed(_children(value)))
            yield node

    def iter_named_nodes(self):
        assert self._gen_name, "Only use this if gen_name is set!"
        for node in self.iter_nodes():
            yield node.prefix() + "_" + node.name(), node

    def map_leaf(self, map_function):
        """The same structure with each leaf replaced by map_function(leaf) (the NamedArg of the leaf when
        gen_name is set)."""
        assert map_function is not None, "map function cannot be None"
        return self._map(self._named if self._gen_name else self._io_args, map_function)

    def _map(self, value, fn):
        if isinstance(value, NamedArg):
            return fn(value) if value.is_leaf() else self._map(value.value(), fn)
        if isinstance(value, dict) and _is_container(value):
            return type(value)((k, self._map(v, fn)) for k, v in value.items())
        if _is_container(value):
            items = [self._map(v, fn) for v in value]
            return type(value)(items) if type(value) in (list, tuple) else type(value)(*items)
        return fn(value)
