"""`flow.set_num_threads(n)`: the number of threads CPU kernels use within one op (OneFlow v0.9.0
`oneflow/api/python/multiprocessing/init.cpp`: below 1 becomes 1 and above the logical cores becomes their number,
each with a printed warning).

What it controls here: the BLAS libraries numpy's matrix products run on, and OpenMP pools loaded in the process
(through threadpoolctl, a dependency), and numba's thread pool where numba is installed (capped at its
NUMBA_NUM_THREADS; the compiled kernels of `kernels/*_jit.py` are single-threaded loops today, so this bounds only
parallel numba code). Elementwise numpy kernels are single-threaded whatever the setting.
"""
import os

_STATE = {"threads": None}  # the count the last call applied


def _logical_cores():
    return os.cpu_count() or 1


def set_num_threads(num):
    """Sets the number of threads of intra-op parallelism on CPU; returns None as OneFlow's does."""
    if isinstance(num, bool) or not isinstance(num, int):
        raise TypeError("set_num_threads(): expected an int, got %s" % type(num).__name__)
    cores = _logical_cores()
    if num < 1:
        print("Warning : ", num, " less than 1 will be set to 1.")
        num = 1
    elif num > cores:
        print("Warning : ", num, " is greater than the number of logical cores and will be set to the maximum "
              "number of logical cores ", cores)
        num = cores
    _set_pools(num)
    _STATE["threads"] = num


def get_num_threads_set():
    """The count the last `set_num_threads` applied (None before any call)."""
    return _STATE["threads"]


def _set_pools(num):
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        ThreadpoolController = None
    if ThreadpoolController is not None:
        controller = ThreadpoolController()
        for lib in controller.lib_controllers:
            if lib.user_api not in ("blas", "openmp"):
                continue
            clear = getattr(type(lib), "clear_controlling_thread", None)  # OpenBLAS: take control first
            if clear is not None:
                clear(force=True)
            lib.set_num_threads(num)
    try:
        import numba
    except ImportError:
        return
    numba.set_num_threads(min(num, numba.config.NUMBA_NUM_THREADS))
