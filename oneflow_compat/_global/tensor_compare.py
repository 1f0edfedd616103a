"""`Tensor == None` is False (a Python bool), as OneFlow 0.9's tp_richcompare has it (api/python/framework/
tensor_functions.cpp: `if (self == Py_None || other == Py_None) return Py_False`), so `None in [t0, t1]` works;
anything else compares elementwise."""
from oneflow_compat._global import functional as F


def eq(self, other):
    if other is None:
        return False
    return F.eq(self, other)
