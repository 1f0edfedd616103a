"""Threads of the CPU kernels: the loaded OpenBLAS's thread count, and work spread over that many threads.

    threads()                             the thread count to spread over (the BLAS's, as the user set it)
    with blas_on_one_thread() as t: ...   the BLAS on one thread inside; t.threads: the count it had before
    spread(n, parts, fn)                  [fn(n0, n1) for `parts` contiguous ranges of range(n)], concurrently
    product_on_threads(product, a, b, out, trans_a, trans_b)   a matrix product cut into blocks over threads
    spreading_lately()                    whether kernels spread work over these threads within the last second
    loaded_openblas(*names)               the OpenBLAS libraries in this process that export these names
    blas_controller()                     threadpoolctl's controller of numpy's OpenBLAS (None without one)

A convolution runs many small products (one per sample) plus compiled loops between them: contiguous ranges of
samples, each on its own thread with the BLAS on one thread, scale (LeNet's conv2 at 2 threads: 1.6x), and so do
the loops. The user's (or the benchmark's) thread setting is the BLAS's: `spread` uses as many threads as the BLAS
had. The work must release the GIL (numba kernels compiled nogil, BLAS products) to run at the same time.

OpenBLAS's own threads, once woken by a threaded product, spin for about 0.1 s (sched_yield loops) before they
sleep: on a LeNet step at 2 threads its worker took 93 ms of CPU per 115 ms step from the kernels' threads, and the
step was slower than at 1 thread. So while kernels spread (`spreading_lately`), matrix products run on these
threads too (`product_on_threads`, used by `blas.gemm`), never on OpenBLAS's.

The BLAS is found and its threads set through threadpoolctl (which finds the libraries a process has loaded on
Linux, macOS and Windows), numpy's OpenBLAS first; without one, the count is 1. Its rule that only the first thread
to set a count takes effect (other threads' calls silently do nothing) does not fit kernels run from whatever
thread calls a job: the sets here are serialised by this module's lock and take control each time
(`clear_controlling_thread(force=True)`, threadpoolctl's own remedy). Measured: 7-13 us per block held at one
thread against 5 us for the former direct ctypes calls, on a LeNet step of tens of milliseconds.
"""
import ctypes
import os
import threading
import time

# (prefix, suffix) of OpenBLAS's exported names: numpy >= 2 wheels (scipy-openblas, 64-bit integers), numpy 1.2x
# wheels (openblas64_), and plain builds
_NAMINGS = (("scipy_", "64_"), ("", "64_"), ("scipy_", ""), ("", ""))

_controllers = []  # [controller or None] once looked up
_lookup_lock = threading.Lock()
_lock = threading.Lock()  # guards _depth (the held count) and every set of the count


def _openblas_controllers():
    """threadpoolctl's controllers of the OpenBLAS libraries loaded now, numpy's first (another library may have
    brought an OpenBLAS of its own)."""
    import numpy  # noqa: F401  (its OpenBLAS is the one the kernels call: loaded before looking)
    from threadpoolctl import ThreadpoolController

    found = ThreadpoolController().select(internal_api="openblas").lib_controllers
    return sorted(found, key=lambda c: ("numpy" not in c.filepath, c.filepath))


def blas_controller():
    """threadpoolctl's controller of numpy's OpenBLAS (looked up once), or None where there is none."""
    if not _controllers:
        with _lookup_lock:
            if not _controllers:
                found = _openblas_controllers()
                _controllers.append(found[0] if found else None)
    return _controllers[0]


def loaded_openblas(*names):
    """(lib, prefix, suffix) for each loaded OpenBLAS (numpy's first) and each naming under which it exports every
    one of `names` (e.g. "cblas_sgemm", called prefix + name + suffix)."""
    for controller in _openblas_controllers():
        try:
            lib = ctypes.CDLL(controller.filepath)
        except OSError:
            continue
        for prefix, suffix in _NAMINGS:
            if all(getattr(lib, prefix + name + suffix, None) is not None for name in names):
                yield lib, prefix, suffix


def _set_blas_threads(controller, n):
    # threadpoolctl lets only one thread set OpenBLAS's (process-wide) count: take control, under _lock
    clear = getattr(type(controller), "clear_controlling_thread", None)
    if clear is not None:
        clear(force=True)
    controller.set_num_threads(n)


def blas_threads():
    """How many threads the loaded OpenBLAS runs a product on now (1 without one)."""
    controller = blas_controller()
    return max(1, controller.get_num_threads() or 1) if controller is not None else 1


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
                    _set_blas_threads(blas_controller(), 1)
            _depth[0] += 1
            self.threads = _depth[1]
        return self

    def __exit__(self, *exc):
        with _lock:
            _depth[0] -= 1
            if _depth[0] == 0 and _depth[1] > 1:
                _set_blas_threads(blas_controller(), _depth[1])


class _Worker:
    """One pool thread: runs the range it is handed (`go`), signals `done`. Plain locks as the hand-off (measured
    per spread of nothing over 2 threads: 85 us with concurrent.futures, 55-60 us with these)."""

    def __init__(self):
        self.go, self.done = threading.Lock(), threading.Lock()
        self.go.acquire()
        self.done.acquire()
        self.task = self.outcome = None
        threading.Thread(target=self._serve, name="oneflow_compat-kernels", daemon=True).start()

    def _serve(self):
        while True:
            self.go.acquire()
            fn, n0, n1 = self.task
            try:
                self.outcome = (True, _in_range(fn, n0, n1))
            except BaseException as e:  # handed to the caller, which raises it
                self.outcome = (False, e)
            self.task = None
            self.done.release()


_workers = []
_pool_busy = threading.Lock()  # one spread at a time uses the pool; another runs its work whole, in its thread
_worker = threading.local()


def _forget_pool():
    global _pool_busy
    del _workers[:]  # a forked child has none of the parent's threads
    _pool_busy = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


_SPREAD_WINDOW_S = 1.0  # "lately": within a train step or so of the last spread
_last_spread = [float("-inf")]  # time.monotonic() of the last spread over more than one thread


def spreading_lately():
    """Whether kernels spread work over their own threads within the last second: products (`product_on_threads`)
    should then run there too, not on OpenBLAS threads that, once woken, spin against them. Programs without such
    kernels (dense layers alone) keep OpenBLAS's own threading."""
    return time.monotonic() - _last_spread[0] < _SPREAD_WINDOW_S


def spread(n, parts, fn):
    """[fn(n0, n1) for `parts` contiguous ranges covering range(n)]: the first on the calling thread, the others on
    pool threads at the same time; all have ended when it returns (then the first error of a range is raised).
    Work inside a range, or while another thread's spread holds the pool, runs whole on its own thread."""
    parts = max(1, min(int(parts), n))
    if parts > 1:
        _last_spread[0] = time.monotonic()
    if parts == 1 or getattr(_worker, "active", False) or not _pool_busy.acquire(blocking=False):
        return [fn(0, n)]
    try:
        while len(_workers) < parts - 1:
            _workers.append(_Worker())
        bounds = [n * i // parts for i in range(parts + 1)]
        helpers = _workers[:parts - 1]
        for i, w in enumerate(helpers, 1):
            w.task = (fn, bounds[i], bounds[i + 1])
            w.go.release()
        try:
            outcomes = [(True, _in_range(fn, bounds[0], bounds[1]))]
        except BaseException as e:
            outcomes = [(False, e)]
        for w in helpers:  # no range may still be writing when the caller gets its arrays
            w.done.acquire()
            outcomes.append(w.outcome)
            w.outcome = None
    finally:
        _pool_busy.release()
    for ok, value in outcomes:
        if not ok:
            raise value
    return [value for _, value in outcomes]


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
    inside = getattr(_worker, "active", False)  # a range of a spread: runs whole (see `spread`)
    parts = threads() if not inside and 2 * m * n * k >= _PRODUCT_MIN_FLOPS else 1
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
