"""Results that lie in the members' arenas (`shm.Arena`): the collectives that copy straight into the others'
results (all-gather, joined all-to-all, gather with sizes) or read the root's copy from its arena (bcast), against
numpy, on ranks of one host; then the arena's bookkeeping and the errors of a push.

Run as `mpiexec -n N python -m mpi4py tests/mpi_scripts/comm_arena.py` (N >= 2). Rank 0 prints
`arena OK: <checks> checks, <pushed> results in arenas over <N> ranks`.
"""
import gc
import sys

import numpy as np

from oneflow_compat.comm import balanced_offsets, get_process_comm
from oneflow_compat.comm.shm import ARENA_MIN

comm = get_process_comm()
rank, size = comm.rank, comm.size
everyone = tuple(range(size))
checks, pushed = [0], [0]


def data(owner, shape, dtype=np.float64, tag=0):
    return np.random.default_rng(1000 * tag + owner).integers(-50, 50, size=shape).astype(dtype)


def check(got, want, what):
    if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
        raise AssertionError("rank %d: %s: got %s %s, want %s %s" % (rank, what, got.dtype, got.shape, want.dtype,
                                                                      want.shape))
    checks[0] += 1


def arena(ranks=everyone):
    return comm._subsets[ranks].board.arena


def in_arena(array, ranks=everyone):
    return arena(ranks).locate(array) is not None


# round 0 makes the arena (the first results find none: through the slots), rounds 1 and 2 push
for round_ in range(3):
    tag = 10 * round_
    cols = [200 + 9 * r for r in everyone]  # uneven: 700 x 200.. float64 pieces, > ARENA_MIN joined
    mine = data(rank, (700, cols[rank]), np.float64, tag)
    got = comm.allgatherv(mine, everyone, axis=1, sizes=cols)
    check(got, np.concatenate([data(r, (700, cols[r]), np.float64, tag) for r in everyone], axis=1),
          "all-gather along axis 1, round %d" % round_)
    pushed[0] += in_arena(got)
    got = comm.allgatherv(data(rank, (cols[rank], 300), np.float32, tag + 1), everyone, axis=0, sizes=cols)
    check(got, np.concatenate([data(r, (cols[r], 300), np.float32, tag + 1) for r in everyone], axis=0),
          "all-gather along axis 0, round %d" % round_)
    # S(0) -> S(1) and S(1) -> S(0) joined on arrival, uneven both ways
    rows, width = [400 + 13 * r for r in everyone], 600
    bounds = balanced_offsets(width, size)
    block = data(rank, (rows[rank], width), np.float64, tag + 2)
    got = comm.alltoallv([block[:, bounds[j]:bounds[j + 1]] for j in everyone], everyone, axis=0, recv_sizes=rows,
                         concat=True)
    check(got, np.concatenate([data(r, (rows[r], width), np.float64, tag + 2)[:, bounds[rank]:bounds[rank + 1]]
                               for r in everyone], axis=0), "all-to-all S(0) -> S(1), round %d" % round_)
    pushed[0] += in_arena(got)
    height = 601
    hb = balanced_offsets(height, size)
    block = data(rank, (height, cols[rank]), np.float32, tag + 3)
    got = comm.alltoallv([block[hb[j]:hb[j + 1]] for j in everyone], everyone, axis=1, concat=True)
    check(got, np.concatenate([data(r, (height, cols[r]), np.float32, tag + 3)[hb[rank]:hb[rank + 1]]
                               for r in everyone], axis=1), "all-to-all S(1) -> S(0), round %d" % round_)
    # gather with sizes to the last rank: the others copy into its result
    got = comm.gatherv(mine, size - 1, everyone, axis=1, sizes=cols)
    if rank == size - 1:
        check(got, np.concatenate([data(r, (700, cols[r]), np.float64, tag) for r in everyone], axis=1),
              "gather with sizes, round %d" % round_)
        pushed[0] += in_arena(got)
    else:
        assert got is None
    # bcast: the root's copy (in its arena) is what the others read; its buffer stays its own
    big = data(0, (500, 300), np.float64, tag + 4) if rank == 0 else np.zeros((500, 300), np.float64)
    got = comm.bcast(big, 0, everyone)
    check(got, data(0, (500, 300), np.float64, tag + 4), "bcast, round %d" % round_)
    assert (got is big) == (rank != 0) and not (rank == 0 and np.may_share_memory(got, big)), rank
    if rank == 0:
        pushed[0] += in_arena(got)

if size > 1:
    assert pushed[0] >= 2 * (2 + (rank == size - 1) + (rank == 0)), (rank, pushed[0])

# results of several sizes: on some members small (private memory), on others large: every member goes through
# the slots alike, and the values are right
height = [10 if r == 0 else 700 for r in everyone]  # rank 0 receives a few rows from each member only
assert size * 10 * 100 * 8 < ARENA_MIN < 700 * 100 * 8
got = comm.alltoallv([data(rank, (height[r], 100), np.float64, 50 + r) for r in everyone], everyone, axis=0,
                     recv_sizes=[height[rank]] * size, concat=True)
check(got, np.concatenate([data(r, (height[rank], 100), np.float64, 50 + rank) for r in everyone]),
      "mixed all-to-all")
assert in_arena(got) == (rank != 0) and not comm._subsets[everyone].board.pushing(), rank

# a view keeps its result's block: later results never land in it
got = comm.allgatherv(data(rank, (300, 300), np.float64, 60), everyone, axis=0, sizes=[300] * size)
view = got[1:, ::2]
kept = view.copy()
del got
for t in range(3):
    comm.allgatherv(data(rank, (300, 300), np.float64, 61 + t), everyone, axis=0, sizes=[300] * size)
check(view, kept, "a view of a dropped result after later results")
del view
gc.collect()
# every block returned: each window's free list is the whole segment again
arena().take_back()
for w, ranges in enumerate(arena().free):
    assert ranges == [arena().spans[w]], (rank, w, ranges)
checks[0] += 1

# the errors of a push: an all-to-all piece of the wrong size fails on its receiver only, naming the sender
# (the others' calls complete); a gather whose members give different sizes fails on every member
wide = 8192  # float64 rows of 64 KB: any 4 rows are past ARENA_MIN
rows = [4] * size
sending = [data(rank, (5 if (rank == 1 and j == 0) else 4, wide), np.float64, 70) for j in everyone]
try:
    got = comm.alltoallv(sending, everyone, axis=0, recv_sizes=rows, concat=True)
    assert rank != 0, "no error on rank 0"
    check(got, np.concatenate([data(r, (4, wide), np.float64, 70) for r in everyone]), "all-to-all beside a wrong one")
except ValueError as e:
    assert rank == 0 and str(e) == "alltoallv on rank 0: rank 1 sends %d bytes, %d expected for float64 (4, %d)" % (
        5 * wide * 8, 4 * wide * 8, wide), (rank, str(e))
    checks[0] += 1
assert comm._subsets[everyone].board.pushing(), "the wrong piece met in a push"
sizes = [2 + (r == 0) - (r == 1) for r in everyone] if rank == 0 else [2] * size
try:
    comm.gatherv(data(rank, (sizes[rank], wide), np.float64, 80), 0, everyone, sizes=sizes)
    raise AssertionError("no error on rank %d" % rank)
except ValueError as e:
    assert str(e).startswith("gatherv on rank %d: the members hold " % rank), str(e)
    checks[0] += 1
assert comm._subsets[everyone].board.pushing([0]), "the different sizes met in a push"
# the board goes on
got = comm.allgatherv(np.full((1, 2), rank), everyone, sizes=[1] * size)
assert got.tolist() == [[r, r] for r in everyone], got

total = comm.allgather_object((checks[0], pushed[0]))
if rank == 0:
    print("arena OK: %d checks, %d results in arenas over %d ranks" % (sum(c for c, _ in total),
                                                                      sum(p for _, p in total), size))
    sys.stdout.flush()
