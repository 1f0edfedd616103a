"""Processes started by hand (OneFlow's way: the five launch variables exported, `python3 script.py` in each
terminal) become one MPI world, without a launcher.

MPI processes learn their world from a process manager through PMI (`mpiexec` runs one); a process started
without one is an MPI "singleton", and MPICH refuses to join two singletons with `Connect`/`Accept` (they share
one identity: "Local and remote groups ... disjoint lpids"). So the process of RANK 0 serves the PMI-1 wire
protocol itself at MASTER_ADDR:MASTER_PORT (a small server in a forked process, as `mpiexec` would), and every
process points MPICH's PMI client at it (`PMI_PORT`, `PMI_ID` = RANK) before MPI starts: `MPI_Init` then makes
MPI_COMM_WORLD of WORLD_SIZE processes, rank = RANK. Only the bootstrap (business cards, barriers) goes through
this server; all job data travels over MPI.

The server answers the commands MPICH's simple PMI client sends (initack, init, get_maxes, get_appnum,
get_universe_size, get_my_kvsname, put, get, barrier_in, finalize, abort), and `PMI_process_mapping` from the
peers' addresses (processes with one address share a node, so MPICH uses shared memory between them). It ends
once every process finalized or left; a process that aborts or leaves before `finalize` is reported to the others
(their barriers fail) and the server ends, so no process waits forever.
"""
import os
import socket
import sys
import threading
import time

KVS_NAME = "oneflow_compat_kvs"


def _parse(line):
    out = {}
    for part in line.strip().split(" "):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k] = v
    return out


class _Server:
    def __init__(self, listener, world_size, timeout):
        self.listener = listener
        self.size = world_size
        self.timeout = timeout
        self.lock = threading.Condition()
        self.kvs = {}
        self.peers = {}  # rank -> peer host
        self.barrier = {}  # rank -> connection waiting in the barrier
        self.finalized = set()
        self.failed = None
        self.conns = []

    def mapping(self):
        """`(vector,(node,count,ranks per node),...)`: rank blocks in rank order, nodes numbered by first use."""
        nodes, blocks = {}, []
        for r in range(self.size):
            node = nodes.setdefault(self.peers[r], len(nodes))
            if blocks and blocks[-1][0] == node:
                blocks[-1][2] += 1
            else:
                blocks.append([node, 1, 1])
        return "(vector,%s)" % ",".join("(%d,%d,%d)" % tuple(b) for b in blocks)

    def send(self, conn, text):
        try:
            conn.sendall(text.encode())
        except OSError:
            pass

    def serve_client(self, conn, host):
        rank = None
        buf = b""
        try:
            while True:
                while b"\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        raise EOFError
                    buf += data
                line, buf = buf.split(b"\n", 1)
                msg = _parse(line.decode())
                cmd = msg.get("cmd")
                if cmd == "initack":
                    rank = int(msg.get("pmiid", "-1"))
                    with self.lock:
                        self.peers[rank] = host
                        self.lock.notify_all()
                    self.send(conn, "cmd=initack\ncmd=set size=%d\ncmd=set rank=%d\ncmd=set debug=0\n"
                              % (self.size, rank))
                elif cmd == "init":
                    self.send(conn, "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n")
                elif cmd == "get_maxes":
                    self.send(conn, "cmd=maxes kvsname_max=256 keylen_max=256 vallen_max=4096 rc=0\n")
                elif cmd == "get_appnum":
                    self.send(conn, "cmd=appnum appnum=0 rc=0\n")
                elif cmd == "get_universe_size":
                    self.send(conn, "cmd=universe_size size=%d rc=0\n" % self.size)
                elif cmd == "get_my_kvsname":
                    self.send(conn, "cmd=my_kvsname kvsname=%s rc=0\n" % KVS_NAME)
                elif cmd == "put":
                    with self.lock:
                        self.kvs[msg.get("key")] = msg.get("value", "")
                    self.send(conn, "cmd=put_result rc=0 msg=success\n")
                elif cmd == "get":
                    key = msg.get("key")
                    if key == "PMI_process_mapping":
                        with self.lock:  # every process must have said hello (its address counts)
                            self.lock.wait_for(lambda: len(self.peers) == self.size or self.failed, self.timeout)
                            value = self.mapping() if len(self.peers) == self.size else None
                    else:
                        with self.lock:
                            value = self.kvs.get(key)
                    if value is None:
                        self.send(conn, "cmd=get_result rc=-1 msg=key_%s_not_found\n" % key)
                    else:
                        self.send(conn, "cmd=get_result rc=0 msg=success value=%s\n" % value)
                elif cmd == "barrier_in":
                    with self.lock:
                        self.barrier[rank] = conn
                        if len(self.barrier) == self.size:
                            for c in self.barrier.values():
                                self.send(c, "cmd=barrier_out rc=0\n")
                            self.barrier = {}
                elif cmd == "finalize":
                    with self.lock:
                        self.finalized.add(rank)
                        self.lock.notify_all()
                    self.send(conn, "cmd=finalize_ack rc=0\n")
                    return
                elif cmd == "abort":
                    self.fail("rank %s aborted" % rank)
                    return
                else:
                    self.send(conn, "cmd=%s rc=-1 msg=unsupported\n" % (cmd or "unknown"))
        except (EOFError, OSError):
            if rank is not None and rank not in self.finalized:
                self.fail("rank %d left before finalizing MPI" % rank)
        finally:
            conn.close()

    def fail(self, why):
        with self.lock:
            if self.failed is None:
                self.failed = why
            for c in self.barrier.values():  # nobody waits for a barrier that cannot complete
                self.send(c, "cmd=barrier_out rc=-1 msg=%s\n" % why.replace(" ", "_"))
            self.barrier = {}
            self.lock.notify_all()

    def run(self):
        self.listener.settimeout(1.0)
        started = time.monotonic()
        while True:
            with self.lock:
                if len(self.finalized) == self.size or self.failed:
                    return 0 if not self.failed else 1
                if len(self.peers) < self.size and time.monotonic() - started > self.timeout:
                    return 1
            try:
                conn, addr = self.listener.accept()
            except socket.timeout:
                continue
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self.serve_client, args=(conn, addr[0]), daemon=True).start()


def start_server(host, port, world_size, timeout):
    """Bind MASTER_ADDR:MASTER_PORT here (so a taken port is this process's error) and serve PMI from a forked
    process; returns its pid."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as e:
        raise OSError("RANK 0 cannot serve the job's start-up at MASTER_ADDR:MASTER_PORT = %s:%d: %s"
                      % (host, port, e)) from None
    listener.listen(max(16, world_size))
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the server process: no MPI, no Python cleanup of the parent's state
        code = 1
        try:
            os.setsid()
            code = _Server(listener, world_size, timeout).run()
        finally:
            os._exit(code)
    listener.close()
    return pid


def wait_for_server(host, port, timeout, rank):
    """Wait until the server of RANK 0 accepts connections (a process may start before RANK 0's)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=2.0):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError("rank %d: the process of RANK 0 did not open MASTER_ADDR:MASTER_PORT = %s:%d "
                                   "within %.0f s (is it started, with the same MASTER_ADDR and MASTER_PORT?)"
                                   % (rank, host, port, timeout)) from None
            time.sleep(0.2)


def bootstrap(launch, timeout):
    """Make this hand-started process join the MPI world of WORLD_SIZE through RANK 0's PMI server (before
    MPI starts)."""
    host = launch.master_addr
    if launch.rank == 0:
        start_server(host if host not in ("localhost",) else "127.0.0.1", launch.master_port, launch.world_size,
                     timeout)
    else:
        wait_for_server(host, launch.master_port, timeout, launch.rank)
    os.environ["PMI_PORT"] = "%s:%d" % (host, launch.master_port)
    os.environ["PMI_ID"] = str(launch.rank)
    # every process started by hand shows its own output in its own terminal, as OneFlow's do
    os.environ.setdefault("ONEFLOW_COMPAT_OUTPUT", "raw")
