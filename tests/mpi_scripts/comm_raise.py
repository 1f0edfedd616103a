"""The last rank raises (in its main thread, or with argument `thread` in a helper thread); the others wait in a
collective. All ranks must end within seconds, non-zero, with the failing rank's traceback on stderr."""
import sys
import threading

import numpy as np

from oneflow_compat.comm import get_process_comm

comm = get_process_comm()
comm.barrier()
if comm.rank == comm.size - 1:
    if sys.argv[1:] == ["thread"]:
        def fail():
            raise ValueError("boom on purpose in a thread of the last rank")
        worker = threading.Thread(target=fail, name="helper")
        worker.start()
        worker.join()
        # the thread's failure must end the job; this rank now simply waits like the others
    else:
        raise ValueError("boom on purpose on the last rank")
comm.allreduce_(np.ones(4), tuple(range(comm.size)))
