"""`oneflow.typing` (imported by scripts as `tp`): placeholder and return annotations of job functions.

The classes are defined with the runtime that reads them (`framework/annotations.py`); this module is their
public home, so they print as `oneflow_compat.typing.*`.
"""
from oneflow_compat.framework.annotations import (  # noqa: F401
    T, Bundle, Callback, ListListNumpy, ListNumpy, Numpy, OneflowNumpyDef, PlaceholderDef, is_placeholder,
    is_placeholder_class)
from oneflow_compat.ir import dtypes

for _cls in (PlaceholderDef, Numpy, ListNumpy, ListListNumpy, OneflowNumpyDef, Callback, Bundle,
             Numpy.Placeholder, ListNumpy.Placeholder, ListListNumpy.Placeholder):
    _cls.__module__ = __name__


def _deprecated_def(cls, legacy_name):
    class Def(cls):
        def __init__(self, shape, dtype=dtypes.float32, batch_axis=0, name=None):
            print("WARNING: flow.%s is deprecated; annotate the parameter with oneflow.typing instead." % legacy_name)
            super().__init__(tuple(shape), dtype, batch_axis)

    Def.__name__ = Def.__qualname__ = legacy_name
    return Def


FixedTensorDef = _deprecated_def(Numpy.Placeholder, "FixedTensorDef")
MirroredTensorDef = _deprecated_def(ListNumpy.Placeholder, "MirroredTensorDef")
MirroredTensorListDef = _deprecated_def(ListListNumpy.Placeholder, "MirroredTensorListDef")
