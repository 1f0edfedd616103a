"""Rank 1 leaves the program while rank 0 still needs it (or no longer does): python comm_leave.py MODE

sysexit: rank 1 raises a bare SystemExit(3) while rank 0 waits in an allreduce with it.
return: rank 1 simply ends while rank 0 waits in an allreduce with it.
late: rank 1 ends; rank 0 starts an allreduce with it only afterwards.
delivered: rank 1 sends rank 0 a message and broadcasts to it, then ends; rank 0 takes both only after rank 1 has
  left (the data is on its way, the job must go on) and prints "delivered OK".
exchange-late: rank 1 ends; rank 0 starts an exchange with it only afterwards.
exchange-delivered: rank 1 sends rank 0 a message in an exchange, then ends; rank 0 receives it in an exchange of
  its own after rank 1 has left and prints "delivered OK".
"""
import sys
import time

import numpy as np

from oneflow_compat.comm import get_process_comm

mode = sys.argv[1]
comm = get_process_comm()
both = (0, 1)
comm.barrier()
if comm.rank == 1:
    if mode == "sysexit":
        raise SystemExit(3)
    if mode == "delivered":
        comm.send(np.arange(5, dtype=np.float64), 0)
        comm.bcast_(np.full(3, 7.0), 1, both)
    if mode == "exchange-delivered":
        comm.exchange([(0, np.arange(4, dtype=np.float64))], [])
    sys.exit(0) if mode == "late" else None
else:
    if mode in ("late", "delivered", "exchange-late", "exchange-delivered"):
        time.sleep(1.5)  # rank 1 has left by now
    if mode == "exchange-late":
        comm.exchange([(1, np.ones(2))], [(1, np.empty(2))])
        print("not reached", flush=True)
    elif mode == "exchange-delivered":
        (got,) = comm.exchange([], [(1, np.empty(4))])
        assert got.tolist() == [0, 1, 2, 3], got
        print("delivered OK", flush=True)
    elif mode == "delivered":
        got = comm.recv((5,), 1, np.float64)
        broadcast = comm.bcast_(np.zeros(3), 1, both)
        assert got.tolist() == [0, 1, 2, 3, 4] and broadcast.tolist() == [7, 7, 7], (got, broadcast)
        print("delivered OK", flush=True)
    else:
        comm.allreduce_(np.ones(4), both)
        print("not reached", flush=True)
