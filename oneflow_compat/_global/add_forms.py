"""`flow.add` with OneFlow 0.9's forms (functional_api.yaml "add"): `add(input, other, alpha=1)` of tensors and
numbers, and `add(t0, t1, t2, ...)` / `add([t0, t1, ...])` of three or more tensors (or a list), the add_n of
them, checked as its op checks (user/ops/add_n_op.cpp: one shape, one dtype; its words)."""
from oneflow_compat._global import c_bindings_yaml_forms as _yaml_forms
from oneflow_compat._global import functional as F
from oneflow_compat._global import inplace as _inplace
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global.matrix_checks import _DATA_TYPE_NAMES
from oneflow_compat._global.tensor import Tensor


def add(*args, **kwargs):
    inputs = kwargs.pop("inputs", None)
    if inputs is None and len(args) == 1 and isinstance(args[0], (list, tuple)):
        inputs, args = args[0], ()
    if inputs is None and len(args) >= 3 and all(isinstance(a, Tensor) for a in args):
        inputs, args = args, ()
    if inputs is not None:
        if args or set(kwargs) - {"inplace"}:
            raise TypeError("add(): the tensor-list form takes the tensors (and inplace) only")
        out = add_n(list(inputs))
        return _inplace.rebind(inputs[0], out) if kwargs.get("inplace") else out
    # the other forms: functional_api.yaml's Add / ScalarAdd (alpha, inplace), as the _C binding has them
    return _yaml_forms.add(*args, **kwargs)


def add_n(tensors):
    if not tensors or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError("add(): expects a non-empty list of Tensors, got %r" % (tensors,))
    first = tensors[0]
    for t in tensors[1:]:
        if first.ndim > 0 and t.ndim > 0 and tuple(t.shape) != tuple(first.shape):
            raise RuntimeError("inconsistent tensor size, expected all tensor to have the same number of elements, "
                               "but got %d and %d" % (first.numel(), t.numel()))
    for t in tensors[1:]:
        if t.dtype is not first.dtype:
            raise RuntimeError("add_n expected all tenser to have same type, but found %s and %s"
                               % (_DATA_TYPE_NAMES.get(first.dtype.name, first.dtype.name),
                                  _DATA_TYPE_NAMES.get(t.dtype.name, t.dtype.name)))
    if len(tensors) == 1:
        return tensors[0]
    if any(t.ndim == 0 for t in tensors):  # (a 0-dim tensor beside others: added one by one, broadcast)
        out = tensors[0]
        for t in tensors[1:]:
            out = F.add(out, t)
        return out
    return apply_op("add_n", list(tensors))
