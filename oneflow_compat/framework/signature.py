"""Job function signatures: parameter annotations (placeholders) and return annotations, with the legacy checks
and the conversion of fetched values into what the annotation promises."""
import inspect
import typing

import numpy as np

from oneflow_compat.framework import annotations as tp


# ----------------------------------------------------------------------------------------------- parameters
class ParamSpec:
    """One parameter: a placeholder, or a tuple of placeholders (typing.Tuple[P1, P2])."""

    def __init__(self, name, placeholder=None, tuple_of=None):
        self.name = name
        self.placeholder = placeholder
        self.tuple_of = tuple_of

    def flat(self):
        return list(self.tuple_of) if self.tuple_of is not None else [self.placeholder]


def parse_params(func):
    sig = inspect.signature(func)
    params = list(sig.parameters.values())
    annotated = [p for p in params if p.annotation is not inspect.Parameter.empty]
    specs = []
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise NotImplementedError("no parameters like *args or **kwargs supported")
        ann = p.annotation
        if ann is inspect.Parameter.empty:
            if annotated:
                raise NotImplementedError("All parameters of global function should be annotated")
            if isinstance(p.default, tp.PlaceholderDef):  # legacy FixedTensorDef/MirroredTensorDef defaults
                specs.append(ParamSpec(p.name, placeholder=p.default))
                continue
            raise NotImplementedError("parameter '%s' of global function '%s' has neither a placeholder "
                                      "annotation nor a legacy tensor-def default" % (p.name, func.__name__))
        if isinstance(ann, tp.PlaceholderDef):
            specs.append(ParamSpec(p.name, placeholder=ann))
        elif typing.get_origin(ann) is tuple and all(isinstance(a, tp.PlaceholderDef) for a in typing.get_args(ann)):
            specs.append(ParamSpec(p.name, tuple_of=typing.get_args(ann)))
        else:
            raise NotImplementedError("invalid parameter annotation %s found" % (ann,))
    return specs


def _describe(job_name, pname, ph, idx=None):
    where = "parameter '%s'" % pname if idx is None else "parameter '%s'[%d]" % (pname, idx)
    return "placeholder %s %s of job '%s'" % (where, ph, job_name)


def check_feed(job_name, spec, value, ndev):
    """Validates one argument against its ParamSpec; returns the list of per-placeholder prepared values.

    Nothing is copied into the job before *all* arguments passed (the caller checks every argument first)."""
    if spec.tuple_of is not None:
        if not isinstance(value, (tuple, list)):
            raise TypeError("parameter '%s' of job '%s' expects a tuple of %d arrays, got type(arg_ndarray): %s"
                            % (spec.name, job_name, len(spec.tuple_of), type(value)))
        if len(value) != len(spec.tuple_of):
            raise AssertionError("parameter '%s' of job '%s': %s v.s. %s arrays" % (
                spec.name, job_name, len(value), len(spec.tuple_of)))
        return [_check_one(job_name, spec.name, ph, v, ndev, i) for i, (ph, v) in enumerate(zip(spec.tuple_of, value))]
    return [_check_one(job_name, spec.name, spec.placeholder, value, ndev)]


class _What:
    """The placeholder's description for error messages, formatted only when an error is raised."""

    __slots__ = ("args",)

    def __init__(self, *args):
        self.args = args

    def __str__(self):
        return _describe(*self.args)


def _check_one(job_name, pname, ph, value, ndev, idx=None):
    what = _What(job_name, pname, ph, idx)
    if ph.kind == "numpy":
        if type(value) is np.ndarray and value.shape == ph.shape and value.dtype == ph.dtype.np:
            return np.ascontiguousarray(value)  # the common case, checked in one line
        if not isinstance(value, np.ndarray):
            raise AssertionError("%s expects a numpy.ndarray, got %s" % (what, type(value).__name__))
        if value.shape != ph.shape:
            raise AssertionError("%s: fed array of shape %s, but the placeholder's shape is %s" % (
                what, value.shape, ph.shape))
        return _as_dtype(value, ph, what)
    if ph.kind == "list_numpy":
        if not isinstance(value, (list, tuple)):
            raise AssertionError("%s expects a list with one numpy.ndarray per device, got %s" % (
                what, type(value).__name__))
        if len(value) != ndev:
            raise AssertionError("%s expects a list of %d arrays (one per device), got %d" % (what, ndev, len(value)))
        out = []
        for d, x in enumerate(value):
            if type(x) is not np.ndarray:
                raise AssertionError("%s: element %d is %s, expected numpy.ndarray" % (what, d, type(x).__name__))
            if x.ndim != len(ph.shape) or x.size > int(np.prod(ph.shape)):
                raise AssertionError("%s: element %d has shape %s, which does not fit the placeholder's maximum "
                                     "shape %s (same rank, at most as many elements)" % (what, d, x.shape, ph.shape))
            out.append(_as_dtype(x, ph, what))
        return out
    if ph.kind == "list_list_numpy":
        if not isinstance(value, (list, tuple)) or len(value) != ndev:
            raise AssertionError("%s expects a list (one per device) of lists of arrays" % what)
        out = []
        for d, per_dev in enumerate(value):
            if not isinstance(per_dev, (list, tuple)):
                raise AssertionError("%s: element %d is %s, expected a list of numpy.ndarray (the device's tensor "
                                     "list)" % (what, d, type(per_dev).__name__))
            rows = 0
            for k, x in enumerate(per_dev):
                if type(x) is not np.ndarray or x.ndim != len(ph.shape) or any(
                        a > b for a, b in zip(x.shape[1:], ph.shape[1:])):
                    raise AssertionError("%s: tensor %d of device %d has shape %s, which does not fit the "
                                         "placeholder's static shape %s (same rank, each axis after the first at "
                                         "most as long)" % (what, k, d, getattr(x, "shape", type(x).__name__),
                                                            ph.shape))
                rows += x.shape[0]
            if rows > ph.shape[0]:
                raise AssertionError("%s: the tensors of device %d have %d rows together, more than the "
                                     "placeholder's first dimension %d" % (what, d, rows, ph.shape[0]))
            tensors = np.empty(len(per_dev), dtype=object)  # an object array: numpy would unpack the arrays
            for k, x in enumerate(per_dev):
                tensors[k] = _as_dtype(x, ph, what)
            out.append(tensors)
        return out
    raise AssertionError("unknown placeholder kind %r" % ph.kind)


def _as_dtype(x, ph, what):
    want = ph.dtype.np
    if x.dtype == want:
        # no copy: a call consumes its inputs before it returns (legacy copied because it ran asynchronously)
        return np.ascontiguousarray(x)
    if x.dtype.kind not in "biuf" or (want.kind in "iu" and x.dtype.kind == "f"):
        # v0.3.x cast silently through pybind11; a float into an int placeholder or a non-numeric array would
        # silently corrupt the batch, so those stay errors.
        raise TypeError("%s: array of dtype %s cannot be fed into a placeholder of dtype %s" % (
            what, x.dtype, ph.dtype.name))
    cast = np.ascontiguousarray(x, dtype=want)
    if x.dtype.kind in "biu" and not np.can_cast(x.dtype, want):
        # a narrowing cast of integers must not change a value (a uint64 label 2**32+1 would become 1 in int32)
        changed = cast.astype(x.dtype) != x
        if changed.any():
            index = tuple(int(i) for i in np.argwhere(changed)[0])
            raise ValueError("%s: value %s at index %s of the fed %s array does not fit the placeholder's dtype %s "
                             "(it would become %s)" % (what, x[index], index, x.dtype, ph.dtype.name, cast[index]))
    return cast


# --------------------------------------------------------------------------------------------------- returns
class ReturnSpec:
    """Tree: kind in {'none', 'future', 'numpy', 'list_numpy', 'list_list_numpy', 'tuple', 'list', 'dict',
    'callback', 'bundle'}."""

    def __init__(self, kind, children=(), key_type=None, leaf=None):
        self.kind = kind
        self.children = list(children)
        self.key_type = key_type
        self.leaf = leaf  # for bundle: the leaf kind

    def __repr__(self):
        return "ReturnSpec(%s)" % self.kind


_LEAVES = {tp.Numpy: "numpy", tp.ListNumpy: "list_numpy", tp.ListListNumpy: "list_list_numpy"}


def parse_return(func):
    ann = inspect.signature(func).return_annotation
    if ann is inspect.Signature.empty:
        return ReturnSpec("future")
    return _parse_ann(ann, top=True)


def _parse_ann(ann, top=False):
    if ann is None or ann is type(None):
        if not top:
            raise NotImplementedError("invalid return annotation %s found" % (ann,))
        return ReturnSpec("none")
    if ann in _LEAVES:
        return ReturnSpec(_LEAVES[ann])
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if ann is tp.Callback or origin is tp.Callback:
        if not args or isinstance(args[0], typing.TypeVar):
            raise TypeError("T in oneflow.typing.Callback[T] cannot be omitted")
        if not top:
            raise NotImplementedError("invalid return annotation %s found" % (ann,))
        return ReturnSpec("callback", [_parse_ann(args[0])])
    if ann is tp.Bundle or origin is tp.Bundle:
        if not args or args[0] not in _LEAVES:
            raise NotImplementedError("invalid return annotation %s found" % (ann,))
        return ReturnSpec("bundle", leaf=_LEAVES[args[0]])
    if origin is tuple:
        return ReturnSpec("tuple", [_parse_ann(a) for a in args])
    if origin is list:
        if len(args) != 1:
            raise NotImplementedError("invalid return annotation %s found" % (ann,))
        return ReturnSpec("list", [_parse_ann(args[0])])
    if origin is dict:
        if len(args) != 2:
            raise NotImplementedError("invalid return annotation %s found" % (ann,))
        return ReturnSpec("dict", [_parse_ann(args[1])], key_type=args[0])
    raise NotImplementedError("invalid return annotation %s found" % (ann,))


def flatten_returned(spec, value, job_name):
    """Checks what the body returned against the annotation; returns (flat blob list, structure template)."""
    from oneflow_compat.ir.graph import LazyBlob

    flat = []

    def mismatch(v, s):
        return TypeError("%s does not matched return annotation %s of global_function %s." % (v, s, job_name))

    def leaf(v, kind):
        if not isinstance(v, LazyBlob):
            raise mismatch(v, kind)
        if getattr(v, "ticks", None) is not None:
            raise TypeError("global_function %s returns a blob with a time shape (after flow.unpack / flow.repeat): "
                            "pack or acc it first" % job_name)
        if kind == "numpy" and v.is_dynamic:
            raise TypeError("only fixed shaped blob compatible to oneflow.typing.Numpy. "
                            "you can change annotation to oneflow.typing.ListNumpy ")
        flat.append((v, kind))
        return ("leaf", len(flat) - 1, kind)

    def walk(v, s):
        k = s.kind
        if k in ("numpy", "list_numpy", "list_list_numpy"):
            return leaf(v, k)
        if k == "tuple":
            if type(v) is not tuple:
                raise mismatch(v, "Tuple")
            if len(v) != len(s.children):
                raise TypeError("%s length compare: %s v.s. %s" % (job_name, len(v), len(s.children)))
            return ("tuple", [walk(a, c) for a, c in zip(v, s.children)])
        if k == "list":
            if type(v) is not list:
                raise mismatch(v, "List")
            return ("list", [walk(a, s.children[0]) for a in v])
        if k == "dict":
            if type(v) is not dict:
                raise mismatch(v, "Dict")
            for key in v:
                if s.key_type is not typing.Any and type(key) is not s.key_type:
                    raise TypeError("key %r of the dict returned by %s is not of type %s" % (key, job_name, s.key_type))
            return ("dict", [(key, walk(a, s.children[0])) for key, a in v.items()])
        if k == "bundle":
            if isinstance(v, (tuple, list)):
                return ("tuple" if isinstance(v, tuple) else "list", [walk(a, s) for a in v])
            if isinstance(v, dict):
                return ("dict", [(key, walk(a, s)) for key, a in v.items()])
            return leaf(v, s.leaf)
        if k == "callback":
            return walk(v, s.children[0])
        if k == "future":
            if isinstance(v, LazyBlob):
                return leaf(v, "local_blob")
            if isinstance(v, (tuple, list)):
                return ("tuple" if isinstance(v, tuple) else "list", [walk(a, s) for a in v])
            if isinstance(v, dict):
                return ("dict", [(key, walk(a, s)) for key, a in v.items()])
            if v is None:
                return ("none",)
            raise mismatch(v, "a blob or a container of blobs")
        if k == "none":
            if v is not None:
                raise mismatch(v, "None")
            return ("none",)
        raise AssertionError(k)

    template = walk(value, spec)
    return flat, template


def build_value(template, leaves):
    """Rebuilds the returned structure from the converted leaf values."""
    tag = template[0]
    if tag == "leaf":
        return leaves[template[1]]
    if tag == "tuple":
        return tuple(build_value(t, leaves) for t in template[1])
    if tag == "list":
        return [build_value(t, leaves) for t in template[1]]
    if tag == "dict":
        return {k: build_value(t, leaves) for k, t in template[1]}
    return None
