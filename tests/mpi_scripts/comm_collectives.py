"""Every process-comm collective against a numpy reference, on rank subsets with uneven sizes.

Run as `mpiexec -n N python -m mpi4py tests/mpi_scripts/comm_collectives.py` (N >= 2). Every rank can compute
every other rank's input (seeded by rank), so each rank checks its own result against a local numpy reference.
Rank 0 prints `collectives OK: <n> checks over <N> ranks` at the end. `main(comm)` is the whole check, so that
tests/test_comm_simulated.py runs the same script on ranks simulated in one process.
"""
import itertools
import sys

import numpy as np

from oneflow_compat.comm import balanced_offsets, get_process_comm
from oneflow_compat.comm import shm


def main(comm):
    rank, size = comm.rank, comm.size
    assert size >= 2, "run this under mpiexec -n N with N >= 2"
    checks = [0]



    def data(owner, shape, dtype=np.float64, tag=0):
        """Rank `owner`'s input for test `tag`: integers, so float sums are exact in any order."""
        rng = np.random.default_rng(1000 * tag + owner)
        if np.dtype(dtype) == np.bool_:
            return rng.integers(0, 2, size=shape).astype(bool)
        return rng.integers(-50, 50, size=shape).astype(dtype)


    def check(got, want, what):
        got, want = np.asarray(got), np.asarray(want)
        if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
            raise AssertionError("rank %d: %s: got %s %s\n%s\nwant %s %s\n%s"
                                 % (rank, what, got.dtype, got.shape, got, want.dtype, want.shape, want))
        checks[0] += 1


    def subsets():
        """The world, every pair and every triple containing the last rank, and singletons: uneven group shapes."""
        everyone = tuple(range(size))
        chosen = [everyone]
        for k in (2, 3):
            chosen += [c for c in itertools.combinations(everyone, k) if c != everyone]
        chosen += [(r,) for r in everyone]
        return chosen


    tag = 0
    for ranks in subsets():
        tag += 1
        if rank not in ranks:
            continue
        k, me = len(ranks), ranks.index(rank)

        # allreduce_ in several dtypes, and on a non-contiguous view (the sum must land in the parent array).
        for dtype in (np.float32, np.float64, np.int64, np.float16, np.bool_):
            buf = data(rank, (5, 3), dtype, tag)
            want = data(ranks[0], (5, 3), dtype, tag)
            for r in ranks[1:]:
                want = want + data(r, (5, 3), dtype, tag)
            result = comm.allreduce_(buf, ranks)
            assert result is buf
            check(buf, want, "allreduce_ %s over %s" % (np.dtype(dtype), ranks))
        parent = data(rank, (4, 6), np.float32, tag + 500)
        view = parent[:, ::2]
        want_parent = parent.copy()
        want_parent[:, ::2] = sum(data(r, (4, 6), np.float32, tag + 500)[:, ::2] for r in ranks)
        comm.allreduce_(view, ranks)
        check(parent, want_parent, "allreduce_ on a strided view over %s" % (ranks,))

        # allreduce (out of place): a new array with the sum, the addend untouched; small (MPI's all-reduce) and
        # large enough for shared memory's, read from a strided view
        for shape in ((5, 3), (300, 600)):
            parent = data(rank, shape, np.float32, tag + 550)
            before = parent.copy()
            got = comm.allreduce(parent[:, ::2], ranks)
            check(got, sum(data(r, shape, np.float32, tag + 550)[:, ::2] for r in ranks),
                  "allreduce %s over %s" % (shape, ranks))
            check(parent, before, "allreduce's addend after it")

        # allgatherv along axis 0 and 1 with uneven sizes (member i contributes i % 3 rows: some contribute none).
        for axis in (0, 1):
            def piece(r):
                shape = [3, 2]
                shape[axis] = ranks.index(r) % 3
                return data(r, tuple(shape), np.float32, tag + 100 * axis)
            want = np.concatenate([piece(r) for r in ranks], axis=axis)
            check(comm.allgatherv(piece(rank), ranks, axis=axis), want, "allgatherv axis %d over %s" % (axis, ranks))
            sizes = [ranks.index(r) % 3 for r in ranks]
            check(comm.allgatherv(piece(rank), ranks, axis=axis, sizes=sizes), want,
                  "allgatherv axis %d with sizes over %s" % (axis, ranks))

        # reduce_scatter: rows not divisible by the member count, and fewer rows than members.
        for axis, n in ((0, 7), (1, 5), (0, 1)):
            shape = (n, 3) if axis == 0 else (2, n)
            total = sum(data(r, shape, np.float64, tag + 200) for r in ranks)
            bounds = balanced_offsets(n, k)
            want = np.take(total, np.arange(bounds[me], bounds[me + 1]), axis=axis)
            check(comm.reduce_scatter(data(rank, shape, np.float64, tag + 200), ranks, axis=axis), want,
                  "reduce_scatter axis %d n=%d over %s" % (axis, n, ranks))

        # reduce_scatter streamed in many chunks (shared memory: each member sums a chunk of its block as soon as
        # every member has written it, in member order): the same bits as numpy's sum in member order
        saved = shm.CHUNK
        shm.CHUNK = 64
        try:
            for axis, shape in ((0, (37, 11)), (1, (13, 29))):
                total = sum(data(r, shape, np.float32, tag + 270 + axis) for r in ranks)
                bounds = balanced_offsets(shape[axis], k)
                want = np.take(total, np.arange(bounds[me], bounds[me + 1]), axis=axis)
                check(comm.reduce_scatter(data(rank, shape, np.float32, tag + 270 + axis), ranks, axis=axis), want,
                      "reduce_scatter in chunks axis %d over %s" % (axis, ranks))
            # reduce_ streamed in chunks to the first and to the last member (in place or not): member order
            for root in (ranks[0], ranks[-1]):
                buf = data(rank, (37, 11), np.float32, tag + 280)
                before = buf.copy()
                want = sum(data(r, (37, 11), np.float32, tag + 280) for r in ranks)
                assert comm.reduce_(buf, root, ranks) is buf
                check(buf, want if rank == root else before, "reduce_ in chunks to %d over %s" % (root, ranks))
        finally:
            shm.CHUNK = saved

        # reduce_scatter with given sizes (uneven, one member gets no row)
        shape = (7, 3)
        total = sum(data(r, shape, np.float32, tag + 250) for r in ranks)
        sizes = [(i * 5) % 4 for i in range(k - 1)]
        sizes.append(7 - sum(sizes))
        start = sum(sizes[:me])
        check(comm.reduce_scatter(data(rank, shape, np.float32, tag + 250), ranks, axis=0, sizes=sizes),
              total[start:start + sizes[me]], "reduce_scatter with sizes %s over %s" % (sizes, ranks))

        # reduce_ to the last member, in several dtypes; the other members' buffers stay as they were
        for dtype in (np.float64, np.int32, np.bool_):
            root = ranks[-1]
            buf = data(rank, (4, 3), dtype, tag + 260)
            before = buf.copy()
            want = data(ranks[0], (4, 3), dtype, tag + 260)
            for r in ranks[1:]:
                want = want + data(r, (4, 3), dtype, tag + 260)
            assert comm.reduce_(buf, root, ranks) is buf
            check(buf, want if rank == root else before, "reduce_ %s to %d over %s" % (np.dtype(dtype), root, ranks))

        # gatherv to the first member along axis 1, with and without sizes (member i contributes i % 3 columns)
        def columns(r):
            return data(r, (2, ranks.index(r) % 3), np.int64, tag + 270)
        want = np.concatenate([columns(r) for r in ranks], axis=1)
        for sizes in (None, [ranks.index(r) % 3 for r in ranks]):
            got = comm.gatherv(columns(rank), ranks[0], ranks, axis=1, sizes=sizes)
            if rank == ranks[0]:
                check(got, want, "gatherv with sizes %s over %s" % (sizes, ranks))
            else:
                assert got is None

        # alltoallv as an S(0) -> S(1) re-split of a logical (A, B) tensor, with and without recv_sizes.
        A, B = 7, 5
        logical = data(0, (A, B), np.int64, tag + 300)
        rows, cols = balanced_offsets(A, k), balanced_offsets(B, k)
        local = logical[rows[me]:rows[me + 1]]
        pieces = [local[:, cols[j]:cols[j + 1]] for j in range(k)]
        want = logical[:, cols[me]:cols[me + 1]]
        got = comm.alltoallv(pieces, ranks, axis=0)
        check(np.concatenate(got, axis=0), want, "alltoallv S(0)->S(1) over %s" % (ranks,))
        row_sizes = [rows[j + 1] - rows[j] for j in range(k)]
        got = comm.alltoallv(pieces, ranks, axis=0, recv_sizes=row_sizes)
        check(np.concatenate(got, axis=0), want, "alltoallv with recv_sizes over %s" % (ranks,))
        # and the reverse, S(1) -> S(0), received pieces concatenated along axis 1
        local = logical[:, cols[me]:cols[me + 1]]
        pieces = [local[rows[j]:rows[j + 1]] for j in range(k)]
        got = comm.alltoallv(pieces, ranks, axis=1)
        check(np.concatenate(got, axis=1), logical[rows[me]:rows[me + 1]], "alltoallv S(1)->S(0) over %s" % (ranks,))
        # joined on arrival (concat=True), both ways, and from pieces that are separate arrays
        check(comm.alltoallv(pieces, ranks, axis=1, concat=True), logical[rows[me]:rows[me + 1]],
              "alltoallv S(1)->S(0) joined over %s" % (ranks,))
        local = logical[rows[me]:rows[me + 1]]
        check(comm.alltoallv([local[:, cols[j]:cols[j + 1]] for j in range(k)], ranks, axis=0, concat=True),
              logical[:, cols[me]:cols[me + 1]], "alltoallv S(0)->S(1) joined over %s" % (ranks,))
        check(comm.alltoallv([local[:, cols[j]:cols[j + 1]].copy() for j in range(k)], ranks, axis=0, concat=True),
              logical[:, cols[me]:cols[me + 1]], "alltoallv of separate arrays joined over %s" % (ranks,))
        # a re-split where some members hold no rows (2 rows over k members): their pieces are empty, the others'
        # strided; and pieces that are separate arrays on one member only
        few = data(0, (2, B), np.float64, tag + 320)
        fr = balanced_offsets(2, k)
        held = few[fr[me]:fr[me + 1]]
        parts = [held[:, cols[j]:cols[j + 1]] for j in range(k)]
        if me == k - 1:
            parts = [p.copy() for p in parts]
        check(comm.alltoallv(parts, ranks, axis=0, concat=True), few[:, cols[me]:cols[me + 1]],
              "alltoallv with empty members over %s" % (ranks,))
        check(comm.allgatherv(few[:, cols[me]:cols[me + 1]], ranks, axis=1), few,
              "allgatherv along axis 1 with members of no column over %s" % (ranks,))
        # a 3-d re-split S(2) -> S(1), the pieces strided in two dimensions
        cube = data(0, (3, A, B), np.float32, tag + 310)
        mine = cube[:, :, cols[me]:cols[me + 1]]
        check(comm.alltoallv([mine[:, rows[j]:rows[j + 1], :] for j in range(k)], ranks, axis=2, concat=True),
              cube[:, rows[me]:rows[me + 1], :], "alltoallv 3-d S(2)->S(1) over %s" % (ranks,))

        # bcast_ from the last member, into a fresh buffer and into a strided view.
        root = ranks[-1]
        buf = data(rank, (3, 4), np.float32, tag + 400) if rank == root else np.zeros((3, 4), np.float32)
        comm.bcast_(buf, root, ranks)
        check(buf, data(root, (3, 4), np.float32, tag + 400), "bcast_ from %d over %s" % (root, ranks))
        parent = np.zeros((3, 8), np.float32)
        if rank == root:
            parent[:, ::2] = data(root, (3, 4), np.float32, tag + 401)
        comm.bcast_(parent[:, ::2], root, ranks)
        check(parent[:, ::2], data(root, (3, 4), np.float32, tag + 401), "bcast_ into a view over %s" % (ranks,))

    # Point to point around a ring: even ranks send first, odd ranks receive first (no reliance on buffering).
    nxt, prv = (rank + 1) % size, (rank - 1) % size
    outgoing = data(rank, (64, 1024), np.float32, 9000)   # 256 KB: past the eager limit
    for step in ("send", "recv") if rank % 2 == 0 else ("recv", "send"):
        if step == "send":
            comm.send(outgoing, nxt)
        else:
            got = comm.recv((64, 1024), prv, dtype=np.float32)
    check(got, data(prv, (64, 1024), np.float32, 9000), "recv from %d" % prv)
    if size % 2 == 0:  # receive into a given buffer as well (an odd ring would need a third phase)
        buf = np.empty((2, 2), np.int64)
        if rank % 2 == 0:
            comm.send(np.full((2, 2), rank, np.int64), rank + 1)
        else:
            assert comm.recv(buf, rank - 1) is buf
            check(buf, np.full((2, 2), rank - 1, np.int64), "recv into a buffer")

    # exchange: every rank sends to every other rank at once (no order could make blocking sends safe), two messages
    # to each, one of them large and strided; the pairs' messages match in list order.
    big = data(rank, (64, 2048), np.float32, 9100)[:, ::2]   # 256 KB, not contiguous
    sends, recvs = [], []
    for peer in range(size):
        if peer != rank:
            sends += [(peer, big), (peer, np.full((3,), rank * 10 + peer, np.int16))]
            recvs += [(peer, np.empty((64, 1024), np.float32)), (peer, np.empty((3,), np.int16))]
    got = comm.exchange(sends, recvs)
    for i, peer in enumerate(p for p in range(size) if p != rank):
        check(got[2 * i], data(peer, (64, 2048), np.float32, 9100)[:, ::2], "exchange from %d" % peer)
        check(got[2 * i + 1], np.full((3,), peer * 10 + rank, np.int16), "exchange small from %d" % peer)

    # Shared buffers (MPI: memory shared by the ranks of this host, summed in place), reused: every dtype, the world
    # and a subset of uneven chunks (7 elements over 3 ranks); started all-reduces complete in the order they were
    # started even with another collective between (`iallreduce_`), and a buffer keeps summing correctly when reused.
    for ranks in [tuple(range(size)), tuple(range(1, size)) if size > 2 else (0, 1)]:
        if rank not in ranks:
            continue
        tag += 1
        bufs = {dtype: comm.shared_buffer((7,), dtype, ranks) for dtype in (np.float32, np.int64, np.bool_)}
        for dtype, buf in bufs.items():
            check(buf, np.zeros(7, dtype), "shared_buffer %s is zeroed" % np.dtype(dtype).name)
        for round_ in range(3):
            for dtype, buf in bufs.items():
                buf[...] = data(rank, (7,), dtype, 100 * tag + round_)
            started = [(dtype, comm.iallreduce_(buf, ranks)) for dtype, buf in bufs.items()]
            between = np.full(3, rank + 1.0)
            comm.allreduce_(between, ranks)
            check(between, np.full(3, float(sum(r + 1 for r in ranks))), "allreduce between started ones")
            for dtype, pending in started:
                got = pending.wait()
                want = data(ranks[0], (7,), dtype, 100 * tag + round_)
                for r in ranks[1:]:
                    want = want + data(r, (7,), dtype, 100 * tag + round_)
                check(got, want, "shared %s all-reduce, round %d, ranks %s" % (np.dtype(dtype).name, round_, ranks))
                assert got is bufs[dtype]
        matrix = comm.shared_buffer((4, 5), np.float64, ranks)
        matrix[...] = rank
        check(comm.allreduce_(matrix, ranks), np.full((4, 5), float(sum(ranks))), "shared 2-d all-reduce")

    # Arrays of several MB (MPI, one host: streamed through shared memory in 1 MB chunks while the readers copy out),
    # along axis 1 (strided places and pieces) and of uneven sizes, twice (the slots' halves alternate).
    everyone = tuple(range(size))
    for round_ in range(2):
        tag = 5000 + 10 * round_  # the same on every rank (the loop above counts only on its members)
        cols = [300 + 7 * r for r in everyone]
        mine = data(rank, (700, cols[rank]), np.float64, tag)
        check(comm.allgatherv(mine, everyone, axis=1, sizes=cols),
              np.concatenate([data(r, (700, cols[r]), np.float64, tag) for r in everyone], axis=1),
              "large all-gather along axis 1, round %d" % round_)
        gathered = comm.gatherv(mine, size - 1, everyone, axis=1)  # streamed in chunks to the last rank
        if rank == size - 1:
            check(gathered, np.concatenate([data(r, (700, cols[r]), np.float64, tag) for r in everyone], axis=1),
                  "large gather along axis 1, round %d" % round_)
        else:
            assert gathered is None
        big = data(0, (900, 500), np.float32, tag) if rank == 0 else np.zeros((900, 500), np.float32)
        check(comm.bcast_(big, 0, everyone), data(0, (900, 500), np.float32, tag), "large broadcast")
        # bcast: the root keeps its buffer and gets a copy of its own (in chunks from its slot: > 1 MB here)
        got = comm.bcast(big, 0, everyone)
        check(got, data(0, (900, 500), np.float32, tag), "large bcast")
        assert (got is big) == (rank != 0) and not (rank == 0 and np.may_share_memory(got, big)), rank
        # S(0) -> S(1) of a (rows x 600) block: member j gets columns bounds[j]:bounds[j+1] of every member's rows
        rows, width = [400 + 13 * r for r in everyone], 600
        bounds = balanced_offsets(width, size)
        block = data(rank, (rows[rank], width), np.float64, tag + 1)
        got = comm.alltoallv([block[:, bounds[j]:bounds[j + 1]] for j in everyone], everyone, axis=0,
                             recv_sizes=rows, concat=True)
        check(got, np.concatenate([data(r, (rows[r], width), np.float64, tag + 1)[:, bounds[rank]:bounds[rank + 1]]
                                   for r in everyone], axis=0), "large strided all-to-all")
        total = sum(data(r, (600, 500), np.float64, tag + 2) for r in everyone)
        check(comm.reduce_scatter(data(rank, (600, 500), np.float64, tag + 2), everyone, axis=1),
              total[:, balanced_offsets(500, size)[rank]:balanced_offsets(500, size)[rank + 1]],
              "large reduce-scatter along axis 1")
        check(comm.allreduce_(data(rank, (600, 500), np.float64, tag + 2), everyone), total, "large all-reduce")
        # reduce-scatters of two members along axis 1 (on shared memory each pushes the other's block into its
        # result and adds its own in place): uneven columns, floats (the sum in member order, bit for bit), ints and
        # bools (logical or), over the first two ranks and over the last two
        for pair in sorted({(0, 1), (size - 2, size - 1)}) if size >= 2 else ():
            if rank not in pair:
                continue
            for dtype, cols in ((np.float32, 401), (np.int32, 357), (np.bool_, 1001)):
                shape = (600 if dtype == np.bool_ else 400, cols)
                total = data(pair[0], shape, dtype, tag + 3)
                total = (total | data(pair[1], shape, dtype, tag + 3)) if dtype == np.bool_ else \
                    total + data(pair[1], shape, dtype, tag + 3)
                bounds = balanced_offsets(cols, 2)
                me = pair.index(rank)
                got = comm.reduce_scatter(data(rank, shape, dtype, tag + 3), pair, axis=1)
                check(got, total[:, bounds[me]:bounds[me + 1]], "large %s reduce-scatter of ranks %s along axis 1"
                      % (np.dtype(dtype).name, pair))

    # Control data over the world.
    check(np.array(comm.bcast_object({"from": size - 1, "list": [1, 2]} if rank == size - 1 else None,
                                     root=size - 1)["from"]), np.array(size - 1), "bcast_object")
    gathered = comm.allgather_object(("rank", rank, "x" * rank))
    assert gathered == [("rank", r, "x" * r) for r in range(size)], gathered
    checks[0] += 1
    comm.check_same(["op a", "op b", "op c"], "plan of job 'same'")
    comm.barrier()

    total = comm.allgather_object(checks[0])
    if rank == 0:
        print("collectives OK: %d checks over %d ranks" % (sum(total), size))
        sys.stdout.flush()
    return sum(total)


if __name__ == "__main__":
    main(get_process_comm())
