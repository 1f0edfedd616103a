"""One MPI communicator over several separately started MPI worlds, with MPI's own dynamic-process calls.

`python -m oneflow.distributed.launch --nnodes N` starts one `mpiexec` per node; processes started by hand with
the five launch variables are MPI worlds of one process each. Their processes know their RANK and WORLD_SIZE
(`launcher_env.py`) but each MPI_COMM_WORLD holds only its own part. `join_world` makes the job's communicator:

1. every world's leader tells the rendezvous (`rendezvous.py`, at MASTER_ADDR:MASTER_PORT) which ranks it holds;
2. the leader of the world holding rank 0 (the root) opens one MPI port per other world (`MPI.Open_port`) and
   hands the port names out through the rendezvous;
3. the root's world accepts the worlds one after the other (`Accept` + `Intercomm.Merge`, the growing
   communicator accepting as a whole), each other world `Connect`s to its own port, merges, and takes part in
   accepting the worlds after it;
4. a final `Split` orders the processes by RANK, so that the communicator's rank of every process is its RANK.

Job data then travels over MPI only. The whole join runs under the comm timeout: a world that never arrives is
named, and a process stuck inside an MPI call of the join ends its world rather than hang.
"""
import sys
import threading

from .launcher_env import launcher_serves_rendezvous
from .rendezvous import RendezvousError, RendezvousServer, connect

_GRACE_S = 5.0  # the watchdog's margin over the timeout, so that the timeout message of step 1 comes first


class JoinError(RuntimeError):
    """Joining the MPI worlds into one failed (the message is the same on every process of a world)."""


def _phase_watchdog(rank, timeout, phase):
    """A timer ending this process's MPI world when the join is stuck inside a blocking MPI call."""
    from mpi4py import MPI

    def expire():
        sys.stderr.write("[rank %d] joining the MPI worlds into one job did not complete within %.0f s (stuck in: "
                         "%s); aborting\n" % (rank, timeout + _GRACE_S, phase[0]))
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)

    timer = threading.Timer(timeout + _GRACE_S, expire)
    timer.daemon = True
    return timer


def _leader_exchange(launch, ranks, timeout):
    """Steps 1-2 on a world's leader: {"groups": …} (+ "ports" on the root, "port" elsewhere)."""
    from mpi4py import MPI

    is_root = 0 in ranks
    server = None
    if is_root and not launcher_serves_rendezvous():
        server = RendezvousServer(launch.master_addr, launch.master_port, launch.world_size).start()
    channel = connect(launch.master_addr, launch.master_port, timeout)
    try:
        channel.send({"role": "group", "ranks": ranks})
        joined = list(ranks)
        while True:
            try:
                message = channel.recv(timeout)
            except TimeoutError:
                if is_root:
                    missing = sorted(set(range(launch.world_size)) - set(joined))
                    raise JoinError("rank %d: rank%s %s of WORLD_SIZE=%d did not join within %.0f s (their "
                                    "processes did not start, failed before importing oneflow, or use another "
                                    "MASTER_ADDR:MASTER_PORT than %s:%d)"
                                    % (launch.rank, "" if len(missing) == 1 else "s",
                                       ", ".join(map(str, missing)), launch.world_size, timeout,
                                       launch.master_addr, launch.master_port)) from None
                raise JoinError("rank %d: the process of RANK 0 did not hand out the MPI port name within %.0f s "
                                "(via %s:%d)" % (launch.rank, timeout, launch.master_addr, launch.master_port)) \
                    from None
            except EOFError:
                raise JoinError("rank %d: the rendezvous at %s:%d closed the connection before the join was "
                                "complete" % (launch.rank, launch.master_addr, launch.master_port)) from None
            if "error" in message:
                raise JoinError("rank %d: %s" % (launch.rank, message["error"]))
            if "joined" in message:
                joined = message["joined"]
            elif "groups" in message and is_root:
                ports = [MPI.Open_port() for _ in message["groups"][1:]]
                channel.send({"ports": ports})
                return {"groups": message["groups"], "ports": ports}
            elif "port" in message:
                return {"groups": message["groups"], "port": message["port"]}
    finally:
        channel.close()
        if server is not None:
            server.joined.wait(timeout=1.0)  # the last sends are done on the server's thread
            server.close()


def join_world(launch, timeout):
    """The job's communicator over all WORLD_SIZE processes, ordered by RANK (an `MPI.Intracomm`)."""
    from mpi4py import MPI

    local = MPI.COMM_WORLD
    phase = ["exchanging ranks within this MPI world"]
    watchdog = _phase_watchdog(launch.rank, timeout, phase)
    watchdog.start()
    try:
        ranks = [int(r) for r in local.allgather(launch.rank)]
        leader = local.Get_rank() == 0
        info = None
        if leader:
            phase[0] = "the rendezvous at %s:%d" % (launch.master_addr, launch.master_port)
            try:
                if len(set(ranks)) != len(ranks):
                    raise JoinError("the processes of one MPI world have equal RANKs %s: each process needs its "
                                    "own RANK" % ranks)
                info = _leader_exchange(launch, ranks, timeout)
            except (JoinError, RendezvousError) as error:
                info = {"error": str(error)}
            except Exception as error:  # the others wait in the bcast below: they must hear of it too
                info = {"error": "rank %d: %s: %s" % (launch.rank, type(error).__name__, error)}
        info = local.bcast(info, root=0)
        if "error" in info:
            raise JoinError(info["error"])
        groups = info["groups"]
        mine = next(i for i, group in enumerate(groups) if sorted(group) == sorted(ranks))
        if mine == 0:
            current = local
        else:
            phase[0] = "MPI Connect to the world of RANK 0"
            inter = local.Connect(info["port"] if leader else None, root=0)
            current = inter.Merge(high=True)
            inter.Free()
        for index in range(mine + 1, len(groups)):
            phase[0] = "MPI Accept of the world with ranks %s" % groups[index]
            port = info["ports"][index - 1] if mine == 0 and leader else None
            inter = current.Accept(port, root=0)
            merged = inter.Merge(high=False)
            inter.Free()
            if current is not local:
                current.Free()
            current = merged
        if mine == 0 and leader:
            for port in info["ports"]:
                MPI.Close_port(port)
        phase[0] = "ordering the processes by RANK"
        job = current.Split(0, launch.rank)
        if current is not local:
            current.Free()
    finally:
        watchdog.cancel()
    if (job.Get_rank(), job.Get_size()) != (launch.rank, launch.world_size):
        raise JoinError("rank %d: the joined MPI worlds hold %d processes and give this one rank %d; WORLD_SIZE is "
                        "%d (does every process have a different RANK below WORLD_SIZE?)"
                        % (launch.rank, job.Get_size(), job.Get_rank(), launch.world_size))
    return job

