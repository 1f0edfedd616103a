"""kernels/cpu_threads.py: work spread over threads (ranges, order, errors, no nesting), the BLAS thread count held
at one and restored, and the convolution and pooling kernels giving the same values on 1 and on several threads."""
import os
import sys
import threading

import numpy as np
import pytest

from oneflow_compat.kernels import cpu_threads
from oneflow_compat.kernels import nn as K

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_kernels_nn import make_conv_case  # noqa: E402


def test_spread_covers_the_range_in_order_on_several_threads():
    seen = {}
    barrier = threading.Barrier(3, timeout=30)  # every range runs at the same time, or this breaks

    def fn(n0, n1):
        seen[(n0, n1)] = threading.get_ident()
        barrier.wait()
        return list(range(n0, n1))

    parts = cpu_threads.spread(10, 3, fn)
    assert parts == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]]
    assert sorted(seen) == [(0, 3), (3, 6), (6, 10)]
    assert seen[(0, 3)] == threading.get_ident()  # the first range on the calling thread
    assert len(set(seen.values())) == 3


def test_spread_never_makes_empty_ranges_or_nests():
    assert cpu_threads.spread(2, 8, lambda n0, n1: (n0, n1)) == [(0, 1), (1, 2)]
    assert cpu_threads.spread(5, 1, lambda n0, n1: (n0, n1)) == [(0, 5)]
    # inside a range (the calling thread's too) an inner spread runs whole: spreading it would wait for the pool
    # threads busy with the sibling ranges
    inner = cpu_threads.spread(4, 2, lambda n0, n1: cpu_threads.spread(n1 - n0, 2, lambda a, b: (a, b)))
    assert inner == [[(0, 2)], [(0, 2)]]
    assert cpu_threads.spread(4, 2, lambda n0, n1: (n0, n1)) == [(0, 2), (2, 4)]  # and outside again


def test_spread_waits_for_every_range_then_raises_the_first_error():
    finished = []

    def fn(n0, n1):
        if n0 == 0:
            raise KeyError("first range")
        threading.Event().wait(0.2)
        finished.append(n0)
        return n0

    with pytest.raises(KeyError, match="first range"):
        cpu_threads.spread(4, 2, fn)
    assert finished == [2]  # the other range had ended before the error reached the caller

    def later(n0, n1):
        if n0:
            raise ValueError("second range")
        return n0

    with pytest.raises(ValueError, match="second range"):
        cpu_threads.spread(4, 2, later)


@pytest.fixture
def blas_at_three():
    """The loaded OpenBLAS set to 3 threads for the test, its count restored after."""
    controller = cpu_threads.blas_controller()
    if controller is None:
        pytest.skip("no OpenBLAS loaded")
    saved = controller.get_num_threads()
    cpu_threads._set_blas_threads(controller, 3)
    yield
    cpu_threads._set_blas_threads(controller, saved)


def _raw_openblas_threads():
    """The count as OpenBLAS itself reports it (its own exported function, not through threadpoolctl)."""
    for lib, prefix, suffix in cpu_threads.loaded_openblas("openblas_get_num_threads"):
        return getattr(lib, prefix + "openblas_get_num_threads" + suffix)()


def test_blas_on_one_thread_nests_and_restores_the_count(blas_at_three):
    before = cpu_threads.blas_threads()
    assert before == 3
    assert _raw_openblas_threads() == 3
    with cpu_threads.blas_on_one_thread() as outer:
        assert outer.threads == before and cpu_threads.blas_threads() == 1 and _raw_openblas_threads() == 1
        assert cpu_threads.threads() == before  # what kernels spread over inside the block
        with cpu_threads.blas_on_one_thread() as inner:
            assert inner.threads == before  # the count the BLAS had, not the one it has inside
        assert cpu_threads.blas_threads() == 1
    assert cpu_threads.blas_threads() == before


def test_blas_on_one_thread_works_from_any_thread(blas_at_three):
    # threadpoolctl lets only the first thread that set a count set it again; kernels run on whatever thread calls
    # a job, and a block entered there must still hold the BLAS at one thread (and restore it)
    seen = []

    def in_thread():
        with cpu_threads.blas_on_one_thread():
            seen.append(_raw_openblas_threads())
        seen.append(_raw_openblas_threads())

    for _ in range(2):
        t = threading.Thread(target=in_thread)
        t.start()
        t.join()
    assert seen == [1, 3, 1, 3]
    with cpu_threads.blas_on_one_thread():
        assert _raw_openblas_threads() == 1
    assert _raw_openblas_threads() == 3


@pytest.fixture
def three_threads(monkeypatch):
    """The kernels' work spread over 3 threads whatever the BLAS has."""
    spread = cpu_threads.spread
    calls = []

    def spread_3(n, parts, fn):
        calls.append(n)
        return spread(n, 3, fn)

    monkeypatch.setattr(cpu_threads, "spread", spread_3)
    return calls


@pytest.mark.parametrize("pixel_major", [False, True])
@pytest.mark.parametrize("jit", [False, True])
def test_convolution_on_three_threads_equals_one(monkeypatch, three_threads, pixel_major, jit):
    if jit and not K.nn_jit.AVAILABLE:
        pytest.skip("numba is not installed")
    monkeypatch.setattr(K.nn_jit, "AVAILABLE", jit)
    monkeypatch.setattr(K, "_PIXEL_MAJOR_RUN", 1 if pixel_major else 10 ** 9)
    x, w, attrs = make_conv_case(((7, 3, 9, 8), 4, (3, 2), (2, 1), ((1, 0), (0, 1)), (1, 1), 1), np.float32, 3)
    b = np.random.default_rng(4).standard_normal(4).astype(np.float32)
    y = K.conv2d_bias_act(np, x, w, b, activation="relu", **attrs)
    dy = np.random.default_rng(5).standard_normal(y.shape).astype(np.float32)
    del three_threads[:]

    def run():
        return (K.conv2d_bias_act(np, x, w, b, activation="relu", **attrs),
                K.conv2d_grad_input(np, dy, w, input_shape=x.shape, **attrs),
                K.conv2d_grad_weight(np, dy, x, weight_shape=w.shape, **attrs))

    spread = run()
    assert three_threads == [7, 7, 7]
    with monkeypatch.context() as m:
        m.setattr(cpu_threads, "spread", lambda n, parts, fn: [fn(0, n)])
        alone = run()
    # samples are independent: the same products, the same values; d weight adds three partial sums
    np.testing.assert_array_equal(spread[0], alone[0])
    np.testing.assert_array_equal(spread[1], alone[1])
    np.testing.assert_allclose(spread[2], alone[2], rtol=1e-5, atol=1e-5)


def test_max_pool_on_three_threads_equals_one(monkeypatch, three_threads):
    if not K.nn_jit.AVAILABLE:
        pytest.skip("numba is not installed")
    r = np.random.default_rng(6)
    x = np.round(r.standard_normal((5, 3, 8, 8)) * 2).astype(np.float32)
    y = K.max_pool2d(np, x, ksize=2, strides=2)
    dy = r.standard_normal(y.shape).astype(np.float32)
    spread = (y, K.max_pool2d_relu_grad(np, dy, x, y, ksize=2, strides=2))
    assert three_threads == [5, 5]
    monkeypatch.setattr(cpu_threads, "spread", lambda n, parts, fn: [fn(0, n)])
    np.testing.assert_array_equal(spread[0], K.max_pool2d(np, x, ksize=2, strides=2))
    np.testing.assert_array_equal(spread[1], K.max_pool2d_relu_grad(np, dy, x, y, ksize=2, strides=2))


def test_lenet_layouts_chosen_by_run_length():
    # conv1 (1 channel: 5-value runs) stays channel-major; conv2 (32 channels: 160-value runs) is pixel-major
    conv1 = K._Geometry(np, np.float32, (100, 1, 28, 28), (32, 1, 5, 5), (1, 1), ((2, 2), (2, 2)), (1, 1), 1,
                        (28, 28))
    conv2 = K._Geometry(np, np.float32, (100, 32, 14, 14), (64, 32, 5, 5), (1, 1), ((2, 2), (2, 2)), (1, 1), 1,
                        (14, 14))
    grouped = K._Geometry(np, np.float32, (100, 32, 14, 14), (64, 16, 5, 5), (1, 1), ((2, 2), (2, 2)), (1, 1), 2,
                          (14, 14))
    assert (conv1.pixel_major, conv2.pixel_major, grouped.pixel_major) == (False, True, False)


@pytest.mark.parametrize("shape", [(300, 40, 50), (40, 300, 50)], ids=["rows", "columns"])
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_product_on_threads_cuts_the_longer_side_into_equal_sums(monkeypatch, shape, trans_a, trans_b):
    m, n, k = shape
    r = np.random.default_rng(7)
    a = r.standard_normal((k, m) if trans_a else (m, k)).astype(np.float32)
    b = r.standard_normal((n, k) if trans_b else (k, n)).astype(np.float32)
    blocks = []

    def product(p, q, o):
        blocks.append(o.shape)
        o[...] = (p.T if trans_a else p) @ (q.T if trans_b else q)

    monkeypatch.setattr(cpu_threads, "threads", lambda: 3)
    monkeypatch.setattr(cpu_threads, "_PRODUCT_MIN_FLOPS", 1)
    out = cpu_threads.product_on_threads(product, a, b, np.empty((m, n), np.float32), trans_a, trans_b)
    whole = np.empty((m, n), np.float32)
    product(a, b, whole)
    # the inner dimension is never cut: the same sums, up to the order within a tile
    np.testing.assert_allclose(out, whole, rtol=1e-5, atol=1e-5)
    assert sorted(blocks[:3]) == ([(100, 40)] * 3 if m > n else [(40, 100)] * 3)
    monkeypatch.setattr(cpu_threads, "_PRODUCT_MIN_FLOPS", 2 * m * n * k + 1)  # too small to cut: one block
    del blocks[:]
    cpu_threads.product_on_threads(product, a, b, np.empty((m, n), np.float32), trans_a, trans_b)
    assert blocks == [(m, n)]


def test_spreading_lately_is_set_by_spreads_over_several_threads_only(monkeypatch):
    monkeypatch.setattr(cpu_threads, "_last_spread", [float("-inf")])
    cpu_threads.spread(4, 1, lambda n0, n1: None)
    assert not cpu_threads.spreading_lately()  # one thread: OpenBLAS's own threading stays
    cpu_threads.spread(4, 2, lambda n0, n1: None)
    assert cpu_threads.spreading_lately()
    monkeypatch.setattr(cpu_threads, "_last_spread", [cpu_threads._last_spread[0] - cpu_threads._SPREAD_WINDOW_S])
    assert not cpu_threads.spreading_lately()


def test_a_second_thread_spreading_meanwhile_runs_its_work_whole():
    inside, outer_running = threading.Event(), threading.Event()
    seen = []

    def outer(n0, n1):
        if n0 == 0:
            outer_running.set()
            inside.wait(30)  # holds the pool until the other thread's spread has run
        return n0

    def other():
        outer_running.wait(30)
        seen.append(cpu_threads.spread(6, 3, lambda n0, n1: (n0, n1)))
        inside.set()

    t = threading.Thread(target=other)
    t.start()
    assert cpu_threads.spread(4, 2, outer) == [0, 2]
    t.join(30)
    assert seen == [[(0, 6)]]  # whole, on its own thread: no waiting for a busy pool, no oversubscription
