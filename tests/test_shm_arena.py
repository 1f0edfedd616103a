"""`shm.Arena` bookkeeping on one process (a window over MPI_COMM_SELF): results take page-rounded blocks first fit,
a block comes back only when no view of its array is left, returned neighbours merge, a full arena says how much
it wants, and growth adds a window. The collectives that use it: tests/mpi_scripts/comm_arena.py."""
import gc

import numpy as np
import pytest

MPI = pytest.importorskip("mpi4py.MPI")
from oneflow_compat.comm import shm  # noqa: E402

MB = 1 << 20


@pytest.fixture(scope="module")
def arena():
    a = shm.Arena(MPI.COMM_SELF)
    a.grow(1)  # the smallest window: ARENA_FIRST (16 MB)
    return a


def free(arena):
    gc.collect()
    arena.take_back()
    return arena.free


def span(arena, w=0):
    """(first byte, end) of window w's segment that blocks are cut from."""
    return arena.spans[w]


def test_small_results_stay_private_and_large_ones_take_page_rounded_blocks(arena):
    assert arena.output((shm.ARENA_MIN // 8 - 1,), np.float64) is None
    assert arena.output((10, 10), object) is None
    lo, hi = span(arena)
    assert hi - lo == shm.ARENA_FIRST == 16 * MB and (arena.bases[0] + lo) % 4096 == 0
    a = arena.output((300, 300), np.float64)  # 720000 bytes: 176 pages
    b = arena.output((MB,), np.uint8)
    assert a.shape == (300, 300) and a.dtype == np.float64 and a.flags.c_contiguous and a.flags.writeable
    assert arena.locate(a) == (0, lo) and arena.locate(b) == (0, lo + 176 * 4096)
    assert a.__array_interface__["data"][0] % 4096 == 0
    assert arena.locate(a[:, 1:]) is None and arena.locate(np.ones(4)) is None
    a[...] = 7
    b[...] = 1
    assert free(arena) == [[(lo + 176 * 4096 + MB, hi)]]
    del a, b
    assert free(arena) == [[(lo, hi)]]


def test_a_block_comes_back_only_when_no_view_is_left_and_neighbours_merge(arena):
    lo, hi = span(arena)
    a, b, c = (arena.output((MB // 8,), np.float64) for _ in range(3))
    view = b[10:20].reshape(2, 5)[:, ::2]
    del b
    assert free(arena) == [[(lo + 3 * MB, hi)]]  # b's block still held by its view
    view[...] = 3
    d = arena.output((MB // 8,), np.float64)  # never b's block while the view lives
    assert arena.locate(d) == (0, lo + 3 * MB)
    del view
    assert free(arena) == [[(lo + MB, lo + 2 * MB), (lo + 4 * MB, hi)]]
    del a
    assert free(arena) == [[(lo, lo + 2 * MB), (lo + 4 * MB, hi)]]  # merged with the block after it
    del c
    assert free(arena) == [[(lo, lo + 3 * MB), (lo + 4 * MB, hi)]]  # ... and with the one before it
    del d
    assert free(arena) == [[(lo, hi)]]


def test_a_full_arena_wants_room_and_grows_a_window(arena):
    lo, hi = span(arena)
    big = arena.output(((hi - lo) // 4,), np.float32)
    assert big is not None and arena.want == 0
    assert arena.output((1000, 1000), np.float32) is None and arena.want == 977 * 4096  # 4e6 bytes in pages
    arena.grow(arena.want)
    assert arena.want == 0 and len(arena.windows) == 2
    lo1, hi1 = span(arena, 1)
    assert hi1 - lo1 == 2 * (hi - lo)  # twice the last window
    more = arena.output((1000, 1000), np.float32)
    assert arena.locate(more) == (1, lo1)
    del big, more
    assert free(arena) == [[(lo, hi)], [(lo1, hi1)]]


def test_an_arena_grows_only_with_room_to_spare_in_shared_memory(arena, monkeypatch):
    """A window's pages are reserved when touched; past a full tmpfs that is SIGBUS: with too little room the
    results stay private (no `want`, so no growth)."""
    class Fs:
        f_frsize = 4096
        f_bavail = 0
    monkeypatch.setattr(shm.os, "statvfs", lambda path: Fs)
    Fs.f_bavail = 4 * 16 * MB // 4096  # twice a 32 MB window, exactly
    assert shm._room_for(32 * MB) and not shm._room_for(32 * MB + 1)
    Fs.f_bavail = 0
    windows = len(arena.windows)
    lo, hi = span(arena, windows - 1)
    fill = arena.output(((hi - lo) // 8,), np.float64)  # the newest window full
    blocked = [arena.output((hi - lo,), np.uint8) for _ in range(len(arena.windows))]
    assert all(b is None for b in blocked) and arena.want == 0
    Fs.f_bavail = 1 << 40
    assert arena.output((hi - lo,), np.uint8) is None and arena.want == hi - lo
    arena.want = 0
    del fill
