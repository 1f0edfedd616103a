"""Threads of the CPU kernels: the loaded OpenBLAS's thread count, and work spread over that many threads.

    threads()                             the thread count to spread over (the BLAS's, as the user set it)
    with blas_on_one_thread() as t: ...   the BLAS on one thread inside; t.threads: the count it had before
    spread(n, parts, fn)                  [fn(n0, n1) for `parts` contiguous ranges of range(n)], concurrently

A convolution runs many small products (one per sample): OpenBLAS splitting each of them over its threads costs
more in hand-offs than it gains (measured: a LeNet conv2 step 10x slower at 2 threads than at 1), while contiguous
ranges of samples, each on its own thread with the BLAS on one thread, scale. The user's (or the benchmark's)
thread setting is the BLAS's: `spread` uses as many threads as the BLAS had. The work must release the GIL (numba
kernels compiled nogil, BLAS products) for the threads to run at the same time.

The BLAS is found in /proc/self/maps (Linux) by its exported thread functions; without one, the count is 1.
"""
import concurrent.futures
import ctypes
import os
import re
import threading
import time

# (prefix, suffix) of OpenBLAS's exported names: numpy's wheels rename them, a system build does not
_NAMINGS = (("scipy_", "64_"), ("", "64_"), ("scipy_", ""), ("", ""))

_functions = []  # [(get, set)] once looked up: empty list = not yet, [None] = no OpenBLAS
_lookup_lock = threading.Lock()
_lock = threading.Lock()  # the saved count and the pool


def _thread_functions():
    if not _functions:
        with _lookup_lock:
            if not _functions:
                _functions.append(_lookup())
    return _functions[0]


def _lookup():
    try:
        with open("/proc/self/maps") as f:
            paths = sorted(set(re.findall(r"(/\S*openblas\S*\.so[\w.]*)", f.read())))
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in _NAMINGS:
            get = getattr(lib, "%sopenblas_get_num_threads%s" % (prefix, suffix), None)
            set_ = getattr(lib, "%sopenblas_set_num_threads%s" % (prefix, suffix), None)
            if get is not None and set_ is not None:
                get.restype, get.argtypes = ctypes.c_int, []
                set_.restype, set_.argtypes = None, [ctypes.c_int]
                return get, set_
    return None


def blas_threads():
    """How many threads the loaded OpenBLAS runs a product on now (1 without one)."""
    fns = _thread_functions()
    return max(1, fns[0]()) if fns is not None else 1


def threads():
    """How many threads the kernels spread their work over: the BLAS's count, the one it had before an enclosing
    `blas_on_one_thread` block held it at one."""
    with _lock:
        if _depth[0]:
            return _depth[1]
    return blas_threads()


_depth = [0, 1]  # blocks inside blas_on_one_thread now, the count saved by the first


class blas_on_one_thread:
    """The BLAS on one thread inside the block, its count restored after. Nested and concurrent blocks share one
    saved count, restored when the last one ends; `threads` is that saved count."""

    def __enter__(self):
        with _lock:
            if _depth[0] == 0:
                _depth[1] = blas_threads()
                if _depth[1] > 1:
                    _thread_functions()[1](1)
            _depth[0] += 1
            self.threads = _depth[1]
        return self

    def __exit__(self, *exc):
        with _lock:
            _depth[0] -= 1
            if _depth[0] == 0 and _depth[1] > 1:
                _thread_functions()[1](_depth[1])


_pool = [None, 0]  # the executor and its number of threads
_worker = threading.local()


def _forget_pool():
    _pool[:] = [None, 0]  # a forked child has none of the parent's threads


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


_last_spread = [float("-inf")]  # when work last ran on the pool threads (time.monotonic)
_SPIN_SECONDS = 0.25  # more than OpenBLAS's threads spin once woken (2^28 cycles by default: ~0.1 s)


def spreading_lately():
    """Whether work ran on the pool threads within the time OpenBLAS's threads would spin if woken now: a product
    then runs on the pool threads too (`product_on_threads`) rather than wake them against it. A process whose
    kernels never spread (dense layers alone) keeps OpenBLAS's own threading, as numpy's products have it."""
    return time.monotonic() - _last_spread[0] < _SPIN_SECONDS


def spread(n, parts, fn):
    """[fn(n0, n1) for `parts` contiguous ranges covering range(n)]: the first on the calling thread, the others on
    pool threads at the same time; all have ended when it returns (or raises the first range's error). Work inside a
    range does not spread again."""
    parts = max(1, min(int(parts), n))
    if parts == 1 or getattr(_worker, "active", False):
        return [fn(0, n)]
    _last_spread[0] = time.monotonic()
    bounds = [n * i // parts for i in range(parts + 1)]
    with _lock:
        if _pool[1] < parts - 1:
            if _pool[0] is not None:
                _pool[0].shutdown(wait=False)
            _pool[:] = [concurrent.futures.ThreadPoolExecutor(parts - 1, "oneflow_compat-kernels"), parts - 1]
        pool = _pool[0]
    futures = [pool.submit(_in_range, fn, bounds[i], bounds[i + 1]) for i in range(1, parts)]
    try:
        first = _in_range(fn, bounds[0], bounds[1])
    finally:
        concurrent.futures.wait(futures)  # no range may still be writing when the caller gets its arrays
    return [first] + [f.result() for f in futures]


def _in_range(fn, n0, n1):
    # every range runs its inner work whole, the calling thread's too: spreading it would wait for pool threads
    # busy with the sibling ranges
    _worker.active = True
    try:
        return fn(n0, n1)
    finally:
        _worker.active = False


_PRODUCT_MIN_FLOPS = 1 << 22  # below this a product runs whole: the hand-off costs more than half of it


def product_on_threads(product, a, b, out, trans_a=False, trans_b=False):
    """product(a_part, b_part, out_part) over blocks of the 2-D output `out` = op(a) @ op(b) (op: transpose where
    asked), the BLAS held at one thread: the longer side of out cut into `threads()` blocks (rows take op(a)'s rows,
    columns op(b)'s columns; the inner dimension is never cut, so values differ from the whole product's only by
    the rounding of the BLAS's edge tiles).
    Small products run whole, on one BLAS thread too: OpenBLAS's own threads, once woken, spin for a while
    (~0.1 s) and take a core from the work spread over threads here. Returns out."""
    m, n = out.shape
    k = a.shape[0] if trans_a else a.shape[1]
    parts = threads() if 2 * m * n * k >= _PRODUCT_MIN_FLOPS else 1
    with blas_on_one_thread():
        if parts == 1:
            product(a, b, out)
        elif m >= n:
            def rows(r0, r1):
                product(a[:, r0:r1] if trans_a else a[r0:r1], b, out[r0:r1])
            spread(m, parts, rows)
        else:
            def cols(c0, c1):
                product(a, b[c0:c1] if trans_b else b[:, c0:c1], out[:, c0:c1])
            spread(n, parts, cols)
    return out
