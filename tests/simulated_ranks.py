"""Run a test body on n ranks simulated as threads of this process (comm/simulated.py), each rank with its own
context (reset after), as the multi-rank tests of the global API do in one process."""
import threading

from oneflow_compat.comm import world
from oneflow_compat.comm.simulated import SimulatedWorld
from oneflow_compat.runtime import context


def on_ranks(n, body, timeout=60):
    """body() on n simulated ranks; the list of each rank's result."""
    def rank_main(comm):
        threading.current_thread().name = "MainThread"
        with world.simulated_rank(comm), context.bound(context.Context()) as ctx:
            try:
                return body()
            finally:
                ctx.reset()

    return SimulatedWorld(n, timeout=timeout).run(rank_main)
