"""Object collectives that different functions reach on 2 ranks (tests/test_comm_mpi.py runs it: `object_mismatch.py
bcast|allgather`): rank 0 broadcasts (or gathers) in `save_step`, rank 1 in `load_step`. The objects travel with
the functions' names, so rank 1 (bcast) or both ranks (allgather) fail naming both, where the two calls would pair
up and hand rank 1 rank 0's object. Before that, one matched call of each kind passes its object."""
import sys

from oneflow_compat.comm import get_process_comm

comm = get_process_comm()
kind = sys.argv[1]


def save_step():
    obj = {"saved": comm.rank}
    return comm.bcast_object(obj, root=0) if kind == "bcast" else comm.allgather_object(obj)


def load_step():
    return comm.bcast_object(None, root=0) if kind == "bcast" else comm.allgather_object(None)


got = save_step()  # every rank in the same function
assert got == ({"saved": 0} if kind == "bcast" else [{"saved": 0}, {"saved": 1}]), got
print("OK matched", flush=True)
got = save_step() if comm.rank == 0 else load_step()
print("PAIRED rank %d got %r" % (comm.rank, got), flush=True)
