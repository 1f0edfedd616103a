"""Whether numba compiles the CPU loops of `nn_jit.py` and `dense_jit.py`, and the decorator both use.

`AVAILABLE` is False when numba is not installed (a dependency where its wheels exist; the extra
`oneflow_compat[fast]` asks for it anywhere) or when the environment sets ONEFLOW_COMPAT_JIT=0; the decorated
functions then stay plain Python and the numpy kernels run.
"""
import os

try:
    if os.environ.get("ONEFLOW_COMPAT_JIT", "1") == "0":
        raise ImportError("disabled by ONEFLOW_COMPAT_JIT=0")
    import numba
except ImportError:
    numba = None

AVAILABLE = numba is not None


def compiled(fn):
    # nogil: kernels of different in-process devices may run in threads; cache: compile once per machine
    return numba.njit(cache=True, nogil=True)(fn) if AVAILABLE else fn
