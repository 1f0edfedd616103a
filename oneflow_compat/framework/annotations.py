"""The annotation classes of job functions (placeholders and return kinds).

They are read by the runtime (signatures, watch handlers) and published by the surface as `oneflow.typing`
(`oneflow_compat/typing.py` re-exports these very objects).
"""
import typing

from oneflow_compat.ir import dtypes

T = typing.TypeVar("T")


class PlaceholderDef:
    """What a parameter annotation describes: one input of a job function."""

    kind = None  # "numpy" | "list_numpy" | "list_list_numpy"

    def __init__(self, shape, dtype=dtypes.float32, batch_axis=0):
        if not (type(shape) is tuple):
            raise AssertionError("shape should be a tuple. %s found" % (shape,))
        for d in shape:
            if not (type(d) is int and d > 0):
                raise AssertionError("dims of shape should be positive ints. %s found" % (shape,))
        self.shape = shape
        self.dtype = dtypes.as_dtype(dtype)
        self.batch_axis = batch_axis

    def __repr__(self):
        return "%s.Placeholder(shape=%s, dtype=%s)" % (type(self).__qualname__.split(".")[0], self.shape,
                                                      self.dtype.name)


class Numpy:
    """Return annotation: the full logical tensor as a numpy.ndarray."""

    class Placeholder(PlaceholderDef):
        kind = "numpy"


class ListNumpy:
    """Return annotation: a list of numpy.ndarray (mirrored: one per device)."""

    class Placeholder(PlaceholderDef):
        kind = "list_numpy"


class ListListNumpy:
    """Return annotation: a list (per device) of lists (tensor list) of numpy.ndarray (v0.2–v0.3.4)."""

    class Placeholder(PlaceholderDef):
        kind = "list_list_numpy"


class OneflowNumpyDef:
    """Base for the legacy `FixedTensorDef`/`MirroredTensorDef` used as parameter *default values*."""


class Callback(typing.Generic[T]):
    pass


class Bundle(typing.Generic[T]):
    """Return annotation: any nesting of tuple/list/dict of T (T is Numpy or ListNumpy)."""


def is_placeholder(x):
    return isinstance(x, PlaceholderDef)


def is_placeholder_class(x):
    return isinstance(x, type) and issubclass(x, PlaceholderDef)
