"""What each rank does for one `to_global` of every transition that communicates (the rows of
benchmarks/bench_boxing.py), counted, not timed: bytes written by copies and by sums of array data in the
shared-memory collectives (`shm.PASSES`), arrivals (meetings of the members on a board) and process-comm calls
(collectives and point-to-point exchanges, `collectives_issued`), on a warm call (arenas and boards grown), against
the least each row needs; and every result against numpy, bit for bit.

B is the tensor's bytes and k the ranks. The figures pinned here, per rank:
- a reduction sums the first two addends in one pass when both are contiguous (P -> S0: (k-1)/k B copied, the
  addend blocks written for the others; a reduce's root copies nothing: its own addend is summed in place);
- a row whose first communication is a collective carries the operation's identity check in it: 1 call, 1 arrival
  (the all-reduce: 2 arrivals, its own);
- slice-boxing (stage -> stage, rank -> rank, 1 -> 2 S0) moves its pieces through the members' board in the one
  arrival that carries the check: each sender copies its bytes straight into its receiver's result once, 1 call,
  no MPI message; a sender with several receivers (1 -> 4 S0) keeps MPI's messages, after the same arrival, and
  so do the members of an operation that communicated before its exchange (P on two ranks -> S elsewhere: the
  reduce-scatter over the source ranks made their check on its own, in the board call where the others make
  theirs with their exchange);
- every result that lies in the members' arenas is written once (all-gather, all-to-all, gather: the bytes each
  rank's piece lands in, B/k per destination);
- the private memory a call allocates (numpy's, traced): none where results lie in the arenas; a reduce's root
  none (its sum in its arena, its own addend read where it lies: it was copied into a buffer of its own first).

Run as `mpiexec -n N python -m mpi4py tests/mpi_scripts/boxing_passes.py` (N = 2 or 4). Rank 0 prints
`passes OK: <rows> rows over <N> ranks` (13 rows on 2 ranks, 14 on 4).
"""
import functools
import os
import tracemalloc

import numpy as np

import oneflow_compat as flow
from oneflow_compat.comm import cross_memory, shm
from oneflow_compat.runtime import global_eager

if os.environ.get("ONE_RANK_REFUSES_READS") == "1" and int(os.environ.get("PMI_RANK", "0")) == 1:
    # one member alone may not read (as if its platform refused): every member learns it in the probe and none reads
    os.environ[cross_memory.READ_ENV] = "0"
comm = global_eager.comm()
rank, k = comm.rank, comm.size
SHAPE = (1024, 1024)  # float32, 4 MB: every piece (B / k) is large enough for the arenas (shm.ARENA_MIN)
B = SHAPE[0] * SHAPE[1] * 4
SBP = {"S0": flow.sbp.split(0), "S1": flow.sbp.split(1), "B": flow.sbp.broadcast, "P": flow.sbp.partial_sum}
every, half, other = list(range(k)), list(range(k // 2)), list(range(k // 2, k))


def addend(r):
    """Rank r's local tensor of a partial sum: floats, whose sum in member order ((a0 + a1) + a2) + ... is what one
    device computes (N devices == 1 device, bit for bit)."""
    return np.random.default_rng(r).standard_normal(SHAPE).astype(np.float32)


LOGICAL = np.random.default_rng(99).integers(-8, 8, SHAPE).astype(np.float32)


def expected(name, reads):
    """{rank: (copied, summed, arrivals, calls)} of one warm call of the row, for this world of k ranks; `reads`:
    the members read each other's memory (`comm/cross_memory.py`: where the platform allows it, and
    ONEFLOW_COMPAT_SHM_READ is not 0)."""
    piece = B // k
    if reads and name in READ_ROWS:
        return {r: (read_bytes(name)[r], 0, 1, 1) if name != "rank -> rank" or r in (0, k - 1) else (0, 0, 0, 0)
                for r in range(k)}
    rows = {
        "P -> B": lambda r: (2 * B, (k - 1) * piece, 2, 1),  # addend into the slot, the sum back; one chunk each
        "P -> S0": lambda r: ((k - 1) * piece, (k - 1) * piece, 1, 1),
        # (the own block is strided, a strided addend numpy adds several times slower as a sum's first operand: on
        # 4 ranks copied first; on 2 the other's block is pushed into the result and the own one added to it in
        # place, a1 + a0 being a0 + a1 bit for bit: each byte copied once)
        "P -> S1": lambda r: (B if k > 2 else piece, (k - 1) * piece, 1, 1),
        "S0 -> B": lambda r: (B, 0, 1, 1),
        "S1 -> B": lambda r: (B, 0, 1, 1),
        "S0 -> S1": lambda r: (piece, 0, 1, 1),
        "S1 -> S0": lambda r: (piece, 0, 1, 1),
        "1 -> k B": lambda r: (B, 0, 1, 1),  # the root's own copy, which the others read behind it
        "1 -> k S0": lambda r: ((B - piece if r == 0 else 0, 0, 1, 1) if k == 2 else (0, 0, 1, 2)),
        "k -> 1 S0": lambda r: (piece, 0, 1, 1),
        "k -> 1 P": lambda r: ((0, (k - 1) * B, 1, 1) if r == 0 else (B, 0, 1, 1)),
        "stage": lambda r: ((B // len(half) if r in half else 0), 0, 1, 1),
        "rank -> rank": lambda r: ((B if r == 0 else 0, 0, 1, 1) if r in (0, k - 1) else (0, 0, 0, 0)),
        # (4 ranks) a reduce-scatter over the source ranks first, which makes their check on its own on the board of
        # all four, where the destination ranks make it with their exchange: the rows then go over MPI
        "P stage": lambda r: ((B // 2, B // 2, 2, 3) if r in half else (0, 0, 1, 2)),
    }
    return {r: rows[name](r) for r in range(k)}


# slice-boxing rows whose receivers read their pieces out of the senders' memory (each piece one contiguous run)
# where the members may read each other's: one copy of each byte, made by its receiver, the receivers of one sender
# all at once (1 -> k S0: the root copies nothing for the others, where it pushed every piece in turn, or sent
# them over MPI on 4 ranks: 2 calls), 1 call, no MPI message
READ_ROWS = ("1 -> k S0", "stage", "rank -> rank")


def read_bytes(name):
    """{rank: bytes it reads out of another rank's memory} of one warm call of a row of `READ_ROWS`."""
    rows = {
        "1 -> k S0": lambda r: 0 if r == 0 else B // k,
        "stage": lambda r: B // len(other) if r in other else 0,
        "rank -> rank": lambda r: B if r == k - 1 else 0,
    }
    return {r: rows[name](r) if name in rows else 0 for r in range(k)}


def allocated(name):
    """{rank: bytes of private (numpy) memory one warm call of the row allocates}: results in the members' arenas
    (shared memory) allocate none."""
    piece = B // k
    rows = {
        "P -> B": lambda r: B,  # the sum, out of place (the all-reduce's slots are shared)
        "P -> S0": lambda r: piece,
        # (a strided addend after the first two is copied into a scratch chunk: here one chunk is the block)
        # (2 ranks: the result in the arena)
        "P -> S1": lambda r: piece * (2 if r >= 2 else 1) if k > 2 else 0,
        "1 -> k B": lambda r: 0 if r == 0 else B,  # (the root's copy lies in its arena, the others read it there)
        # the root keeps its own piece as a copy (a to_global's result owns its storage); a receiver's buffer the
        # exchange did not need (its result lies in its arena; never touched: no page is faulted in)
        "1 -> k S0": lambda r: piece,
        "k -> 1 P": lambda r: 0,  # the root's sum in its arena, its addend read in place (never copied first)
        "stage": lambda r: 0 if r in half else B // len(other),
        "rank -> rank": lambda r: B if r == k - 1 else 0,
        "P stage": lambda r: B // 2,  # the reduce-scatter's rows; a receiver's buffer MPI fills
    }
    return {r: rows[name](r) if name in rows else 0 for r in range(k)}


CASES = [("P -> B", (every, "P"), (every, "B")), ("P -> S0", (every, "P"), (every, "S0")),
         ("P -> S1", (every, "P"), (every, "S1")), ("S0 -> B", (every, "S0"), (every, "B")),
         ("S1 -> B", (every, "S1"), (every, "B")), ("S0 -> S1", (every, "S0"), (every, "S1")),
         ("S1 -> S0", (every, "S1"), (every, "S0")), ("1 -> k B", ([0], "B"), (every, "B")),
         ("1 -> k S0", ([0], "B"), (every, "S0")), ("k -> 1 S0", (every, "S0"), ([0], "B")),
         ("k -> 1 P", (every, "P"), ([0], "B")), ("stage", (half, "S0"), (other, "S0")),
         ("rank -> rank", ([0], "B"), ([k - 1], "B"))] + ([("P stage", (half, "P"), (other, "S0"))] if k == 4 else [])


def source(ranks, sbp):
    if sbp == "P":
        local, value = addend(rank), functools.reduce(np.add, [addend(r) for r in ranks])
    else:
        value = LOGICAL
        local = np.array_split(LOGICAL, len(ranks), axis=int(sbp[1]))[ranks.index(rank)] \
            if sbp != "B" and rank in ranks else LOGICAL
    x = flow.tensor(np.ascontiguousarray(local)).to_global(placement=flow.placement("cpu", ranks), sbp=SBP[sbp])
    return x, value


def local_of(value, ranks, sbp):
    if rank not in ranks:
        return None
    return value if sbp == "B" else np.array_split(value, len(ranks), axis=int(sbp[1]))[ranks.index(rank)]


# whether the members read each other's memory: where the platform allows it (probed once per board, alike on every
# member) unless the environment turns it off; the test runs this script both ways where it is allowed
READS = os.environ.get("EXPECT_READS", "1" if cross_memory.wanted() else "0") == "1"
rows = 0
for name, (src_ranks, src), (dst_ranks, dst) in CASES:
    x, value = source(src_ranks, src)
    dst_pl = flow.placement("cpu", dst_ranks)
    for call in range(3):  # two warm-up calls: the boards and arenas grow to the row's sizes
        shm.PASSES.clear()
        before = comm.collectives_issued()
        tracemalloc.start()
        start = tracemalloc.get_traced_memory()[0]
        y = x.to_global(placement=dst_pl, sbp=SBP[dst])
        peak = tracemalloc.get_traced_memory()[1] - start
        tracemalloc.stop()
        got = (shm.PASSES["copied"], shm.PASSES["summed"], shm.PASSES["arrivals"], comm.collectives_issued() - before)
        read = shm.PASSES["read"]
        want = local_of(value, dst_ranks, dst)
        if want is not None:
            have = y.to_local().numpy()
            assert have.dtype == want.dtype and np.array_equal(have, want), "rank %d %s: wrong values" % (rank, name)
        del y
    members = sorted(set(src_ranks) | set(dst_ranks))
    if rank in members and len(members) > 1 and comm.reads_between(members) != READS:
        raise AssertionError("rank %d: reads between ranks %s: %s, expected %s"
                             % (rank, members, comm.reads_between(members), READS))
    reads = READS
    counts = comm.allgather_object(got)
    want = [expected(name, reads)[r] for r in range(k)]
    if counts != want:
        raise AssertionError("%s on %d ranks: (copied, summed, arrivals, calls) per rank %s, the least it needs %s"
                             % (name, k, counts, want))
    read = comm.allgather_object(read)
    want = [read_bytes(name)[r] if reads else 0 for r in range(k)]
    if read != want:
        raise AssertionError("%s on %d ranks: bytes read out of other ranks' memory per rank %s, expected %s"
                             % (name, k, read, want))
    memory = comm.allgather_object(peak)
    want = allocated(name)
    if any(abs(memory[r] - want[r]) > B // 64 for r in range(k)):  # (the Python objects of a call: kilobytes)
        raise AssertionError("%s on %d ranks: private bytes allocated per rank %s, expected %s"
                             % (name, k, memory, [want[r] for r in range(k)]))
    rows += 1

if rank == 0:
    print("passes OK: %d rows over %d ranks" % (rows, k), flush=True)
