"""The simulated world (`comm/simulated.py`: N ranks as threads of one process) has the MPI comm's semantics — the
very script the MPI tests run passes on 2, 3 and 4 simulated ranks — and never hangs: a missing rank, collectives
issued in different orders, two blocking sends to each other, a rank that raises, each ends in an error naming what
happened. The recording comm (`comm/recording.py`) counts the bytes of each call by the documented rule."""
import os
import sys
import time

import numpy as np
import pytest

from oneflow_compat.comm.process_comm import CollectiveTimeout
from oneflow_compat.comm.recording import RecordingComm
from oneflow_compat.comm.simulated import RankFailed, SimulatedWorld, SimulationMismatch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi_scripts"))
import comm_collectives  # noqa: E402


@pytest.mark.parametrize("n", [2, 3, 4])
def test_the_mpi_collectives_script_passes_on_simulated_ranks(n, capsys):
    totals = SimulatedWorld(n).run(comm_collectives.main)
    assert len(set(totals)) == 1 and totals[0] > 50 * n
    assert "collectives OK: %d checks over %d ranks" % (totals[0], n) in capsys.readouterr().out


def test_arrays_are_copied_as_if_sent():
    def body(comm):
        buf = np.full(3, float(comm.rank + 1))
        got = comm.allgatherv(buf, (0, 1))
        buf[:] = -1  # changing what was sent changes nothing anywhere
        comm.barrier()
        return got

    a, b = SimulatedWorld(2).run(body)
    np.testing.assert_array_equal(a, [1, 1, 1, 2, 2, 2])
    np.testing.assert_array_equal(b, a)
    assert not np.shares_memory(a, b)


def test_a_missing_rank_times_out_naming_the_collective_and_the_rank():
    def body(comm):
        if comm.rank == 0:
            comm.allreduce_(np.zeros(2), (0, 1, 2))
        elif comm.rank == 2:
            time.sleep(1.5)

    started = time.monotonic()
    with pytest.raises(CollectiveTimeout, match=r"rank 0: allreduce #1 over ranks \(0, 1, 2\) did not complete "
                                                r"within .* Missing ranks 1, 2"):
        SimulatedWorld(3, timeout=0.5).run(body)
    assert time.monotonic() - started < 10


def test_a_rank_waiting_elsewhere_is_named():
    def body(comm):
        if comm.rank == 0:
            comm.allreduce_(np.zeros(2), (0, 1))
        else:
            comm.recv((2,), 0)

    with pytest.raises(CollectiveTimeout, match=r"Rank 1 is in a different operation: recv from rank 0|"
                                                r"Rank 0 is in a different operation: allreduce #1 over ranks \(0, 1\)"):
        SimulatedWorld(2, timeout=0.5).run(body)


def test_collectives_in_different_orders_fail_naming_both():
    def body(comm):
        if comm.rank == 0:
            comm.allreduce_(np.zeros(2), (0, 1))
        else:
            comm.bcast_(np.zeros(2), 0, (0, 1))

    with pytest.raises(SimulationMismatch, match=r"rank 0 calls allreduce, rank 1 calls bcast"):
        SimulatedWorld(2, timeout=5).run(body)


def test_two_blocking_sends_to_each_other_time_out_and_exchange_does_not():
    def sends(comm):
        comm.send(np.zeros(4), 1 - comm.rank)
        comm.recv((4,), 1 - comm.rank)

    with pytest.raises(CollectiveTimeout, match=r"send to rank"):
        SimulatedWorld(2, timeout=0.5).run(sends)

    def exchange(comm):
        other = 1 - comm.rank
        (got,) = comm.exchange([(other, np.full(4, float(comm.rank)))], [(other, np.empty(4))])
        return got

    a, b = SimulatedWorld(2, timeout=5).run(exchange)
    np.testing.assert_array_equal(a, np.ones(4))
    np.testing.assert_array_equal(b, np.zeros(4))


def test_a_rank_that_raises_ends_the_others_at_once():
    def body(comm):
        if comm.rank == 1:
            raise KeyError("boom on rank 1")
        comm.barrier()

    started = time.monotonic()
    with pytest.raises(KeyError, match="boom on rank 1") as info:
        SimulatedWorld(3, timeout=30).run(body)
    assert time.monotonic() - started < 5
    assert any("simulated rank 1 of 3" in note for note in getattr(info.value, "__notes__", []))
    # the other ranks saw RankFailed, which is not what the run reports
    assert not isinstance(info.value, RankFailed)


def test_recording_counts_the_bytes_each_rank_sends():
    def body(comm):
        rec = RecordingComm(comm)
        ranks = (0, 1, 2)
        rec.allreduce_(np.zeros(10, np.float32), ranks)                        # chunks 4, 3, 3 of 10 elements
        rec.reduce_scatter(np.zeros((6, 2), np.float64), ranks)                # 2 rows of 16 bytes each
        rec.allgatherv(np.zeros((comm.rank + 1, 2), np.int32), ranks)          # its rows, to the 2 others
        rec.alltoallv([np.zeros((1, j + 1), np.int8) for j in range(3)], ranks, axis=0)
        rec.reduce_(np.zeros(5, np.int64), 2, ranks)
        rec.bcast_(np.zeros(5, np.int64), 0, ranks)
        rec.gatherv(np.zeros((comm.rank, 3), np.float32), 1, ranks, sizes=[0, 1, 2])
        rec.exchange([((comm.rank + 1) % 3, np.zeros(7, np.uint8))], [((comm.rank - 1) % 3, np.empty(7, np.uint8))])
        rec.allgather_object("x")
        return [c.sent for c in rec.calls], rec.bytes_sent(), rec.calls[-1].control

    results = SimulatedWorld(3).run(body)
    for r, (sent, total, control) in enumerate(results):
        chunk = [4, 3, 3][r]
        want = [(10 - chunk + 2 * chunk) * 4, 96 - 32, 2 * (r + 1) * 2 * 4, 6 - (r + 1),
                0 if r == 2 else 40, 80 if r == 0 else 0, 0 if r == 1 else r * 12, 7]
        assert sent[:-1] == want, r
        assert total == sum(want) and control
