"""`oneflow.utils.global_view` (OneFlow 0.9): `global_mode` / `current_global_mode` (`_global/global_mode.py`), and
`to_global` and `to_local` of a tensor or of every tensor in a nested dict, list or tuple (a state dict, a graph's
state dict with its nested module dicts), as OneFlow 0.9's `utils/global_view/to_global.py` and `to_local.py`
define them.

`to_global(input, placement, sbp)`: local tensors become global ones whose pieces they are (`Tensor.to_global`),
global tensors move to the placement and/or SBP given; `sbp` may be a function `sbp(input, tensor)` choosing each
tensor's SBP. When the input is local and the placement leaves out some ranks, the placement's first rank sends the
input's structure to every rank (its tensors as empty placeholders), so that ranks outside the placement, which
hold nothing (`None` on the ranks that saved no file), take part with the same structure — every rank must call
`to_global` with the same tensors in the same order. Leaves that are not tensors stay as they are, with a warning.
"""
import types
import warnings

from oneflow_compat._global import creation
from oneflow_compat._global.global_mode import current_global_mode, global_mode
from oneflow_compat._global.tensor import Tensor
from oneflow_compat.runtime import global_eager

__all__ = ["to_global", "to_local", "global_mode", "current_global_mode"]


def _map(tree, leaf):
    """`tree` with each leaf (anything but a dict, list or tuple) replaced by `leaf(it)`."""
    if isinstance(tree, dict):
        return type(tree)((k, _map(v, leaf)) for k, v in tree.items())
    if isinstance(tree, (list, tuple)):
        mapped = [_map(v, leaf) for v in tree]
        return type(tree)(*mapped) if hasattr(tree, "_fields") else type(tree)(mapped)
    return leaf(tree)


def _leaves(tree):
    if isinstance(tree, dict):
        for v in tree.values():
            yield from _leaves(v)
    elif isinstance(tree, (list, tuple)):
        for v in tree:
            yield from _leaves(v)
    else:
        yield tree


def _warn_kept(node):
    warnings.warn("Non-Tensor type: {} encountered, it will remain the same.".format(type(node)))


def _is_global(input):
    """Whether the input's tensors are global (all of them, or none: mixing them is an error)."""
    kinds = {t.is_global for t in _leaves(input) if isinstance(t, Tensor)}
    assert len(kinds) <= 1, "Tensor(s) in the input must be all local or all global."
    return kinds == {True}


def _on_all_ranks(placement):
    return placement.rank_list == tuple(range(global_eager.world_size()))


def _structure_from_first_rank(input, placement, warn_on_non_tensor_leaf):
    """The input's structure as the placement's first rank holds it, on every rank: that rank's own input there
    and on the placement's other ranks, its structure with empty tensors in place of its tensors elsewhere."""
    first = placement.rank_list[0]
    me = global_eager.rank()
    shape = None
    if me == first:
        def placeholder(node):
            if isinstance(node, Tensor):
                return creation.empty(0, 1)  # (every rank gets a tensor object: sbp functions compare by identity)
            if warn_on_non_tensor_leaf and node is not None:
                _warn_kept(node)
            return node
        shape = None if isinstance(input, Tensor) or input is None else _map(input, placeholder)
    received = global_eager.comm().bcast_object(shape, root=first)
    return input if me in placement.rank_list else received


def _tensor_to_global(node, placement, sbp, kwargs):
    if node is None:
        return None
    if not node.is_global:
        kwargs = {k: v for k, v in kwargs.items() if k != "grad_sbp"}
    return node.to_global(placement=placement, sbp=sbp, **kwargs)


def to_global(input, placement=None, sbp=None, warn_on_non_tensor_leaf=True, **kwargs):  # noqa: A002
    """`input` (a tensor, None, or a dict / list / tuple of them) with its tensors made global on `placement` with
    `sbp` (a SBP, a list of them, or `sbp(input, tensor)`); see the module docstring."""
    if input is not None and not isinstance(input, (Tensor, dict, tuple, list)):
        if warn_on_non_tensor_leaf:
            _warn_kept(input)
        return input
    if placement is not None and not _is_global(input) and not _on_all_ranks(placement):
        input = _structure_from_first_rank(input, placement, warn_on_non_tensor_leaf)
    choose = sbp if isinstance(sbp, types.FunctionType) else None

    def leaf(node):
        if isinstance(node, Tensor) or node is None:
            return _tensor_to_global(node, placement, choose(input, node) if choose else sbp, kwargs)
        if warn_on_non_tensor_leaf:
            _warn_kept(node)
        return node

    return _map(input, leaf)


def to_local(input, *, copy=False):  # noqa: A002
    """`input` (a tensor, or a dict / list / tuple of them) with each global tensor replaced by its local piece
    (a copy with `copy=True`); local tensors stay, with a warning, as OneFlow's."""

    def leaf(node):
        if isinstance(node, Tensor):
            if not node.is_global:
                warnings.warn("The tensor should be global, local tensor will remain the same.")
                return node
            return node.to_local(copy=copy)
        _warn_kept(node)
        return node

    if isinstance(input, (Tensor, dict, tuple, list)):
        return _map(input, leaf)
    _warn_kept(input)
    return input
