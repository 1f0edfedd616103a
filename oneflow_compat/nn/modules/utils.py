"""`oneflow.nn.modules.utils` (OneFlow 0.9): the argument helpers layer code imports — `_single`, `_pair`,
`_triple`, `_quadruple` (an int repeated, an iterable kept as a tuple), `_getint`, `_handle_size_arg`,
`_reverse_repeat_tuple`, `_list_with_default`."""
import collections.abc
from itertools import repeat


def _ntuple(n):
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))

    return parse


def _getint(x):
    if isinstance(x, collections.abc.Iterable):
        return int(x[0])
    return int(x)


_single = _ntuple(1)
_pair = _ntuple(2)
_triple = _ntuple(3)
_quadruple = _ntuple(4)


def _handle_size_arg(size):
    """`f(2, 3)` or `f((2, 3))` -> the shape."""
    if len(size) == 0:
        raise AssertionError("size of tensor doesn't exists")
    if isinstance(size[0], (list, tuple)):
        if len(size) != 1:
            raise AssertionError("shape should be specified by tuple of int size, not tuple of list")
        size = size[0]
    return size


def _reverse_repeat_tuple(t, n):
    """`t` reversed, each element repeated `n` times (conv padding -> `F.pad` padding)."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size, defaults):
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError("Input dimension should be at least {}".format(len(out_size) + 1))
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size):])]
