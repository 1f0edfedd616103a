"""The bootstrap exchange at MASTER_ADDR:MASTER_PORT: small JSON messages over TCP, never job data.

Several separately started MPI worlds (one `mpiexec` per node, or single processes started by hand) become one
job with MPI's own `Open_port` / `Accept` / `Connect` / `Merge` (`join.py`). MPI needs one thing from outside for
that: the port name, which only the accepting side knows. This server hands it over, and nothing else travels
through it except, between launchers, "my processes ended with code c" and "end yours".

Who talks to the server:
* each MPI world's first process (its *leader*) says which ranks (RANK) its world holds: `{"role": "group",
  "ranks": [...]}`. When the worlds cover ranks 0..WORLD_SIZE-1, the leader of the world holding rank 0 (the
  *root*) gets `{"groups": [[ranks], …]}` (root's world first, then by first rank), opens one MPI port per other
  world and answers `{"ports": [name, …]}`; every other leader then gets `{"port": name, "groups": …}`. While the
  root waits it receives `{"joined": [ranks…]}` after every arrival, so that a timeout can name who is missing.
* each launcher (`python -m oneflow.distributed.launch --nnodes N`) says `{"role": "launcher", "node": k}` and
  later `{"exit": code}`; a non-zero code, or a launcher gone without saying it, makes the server send
  `{"abort": reason}` to every other launcher, which then ends its processes.

The server runs in the node-0 launcher, or — when no launcher serves (the variables were exported by hand) — in
the root process for the time of the exchange.
"""
import errno
import json
import selectors
import socket
import threading
import time

_CONNECT_RETRY_S = 0.05


class RendezvousError(RuntimeError):
    """The exchange failed: the server could not be reached or listened on, a peer is missing, or the worlds
    do not fit together."""


class Channel:
    """One end of a connection: JSON objects, one per line."""

    def __init__(self, sock):
        self.sock = sock
        self._buffer = b""

    def send(self, obj):
        self.sock.sendall(json.dumps(obj).encode("utf-8") + b"\n")

    def recv(self, timeout=None):
        """The next object; `TimeoutError` when none comes within `timeout` s, `EOFError` when the peer closed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise TimeoutError("no message within %.1f s" % timeout)
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                raise TimeoutError("no message within %.1f s" % timeout) from None
            if not data:
                raise EOFError("the peer closed the connection")
            self._buffer += data
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line.decode("utf-8"))

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def connect(addr, port, timeout):
    """A `Channel` to the server at addr:port, retrying while it is not listening yet (its process may start
    later than this one) for up to `timeout` s."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            sock = socket.create_connection((addr, int(port)), timeout=max(0.1, deadline - time.monotonic()))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return Channel(sock)
        except OSError as error:
            last = error
        if time.monotonic() >= deadline:
            raise RendezvousError("could not reach the rendezvous at MASTER_ADDR:MASTER_PORT = %s:%s within "
                                  "%.0f s (%s): is the node-0 launcher (or the process of RANK 0) running, and is "
                                  "MASTER_ADDR an address of its host?" % (addr, port, timeout, last))
        time.sleep(_CONNECT_RETRY_S)


def _listen(addr, port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        try:
            sock.bind((addr, int(port)))
        except OSError as error:
            if error.errno not in (errno.EADDRNOTAVAIL, errno.EINVAL) and not isinstance(error, socket.gaierror):
                raise
            sock.bind(("", int(port)))  # MASTER_ADDR names this host from outside only (NAT, a DNS alias)
    except OSError as error:
        sock.close()
        raise RendezvousError("cannot listen on MASTER_ADDR:MASTER_PORT = %s:%s for the rendezvous: %s (is another "
                              "job using this port? choose another --master_port)" % (addr, port, error)) from None
    sock.listen(64)
    return sock


def _ranks_text(ranks):
    ranks = sorted(ranks)
    if ranks and ranks == list(range(ranks[0], ranks[-1] + 1)) and len(ranks) > 2:
        return "%d..%d" % (ranks[0], ranks[-1])
    return ", ".join(map(str, ranks))


class RendezvousServer:
    """The server described in the module docstring. `start()` runs it on a daemon thread; `close()` stops it.

    Launcher links: `running_launchers()` names the nodes whose launcher is connected and has not yet said how
    its processes ended (nor vanished); the node-0 launcher serves until that is empty.
    """

    def __init__(self, addr, port, world_size):
        self.world_size = int(world_size)
        self._listener = _listen(addr, port)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ, None)
        self._peers = {}           # socket -> _Peer
        self._groups = []          # _Peer of each world that said its ranks
        self._root = None
        self._ports_sent = False
        self._exits = {}           # launcher node -> exit code (None: gone without saying)
        self._running = set()      # launcher nodes connected and not ended
        self._lock = threading.Lock()  # _exits and _running are read from the launcher's main thread
        self._aborted = None
        self._stop = False
        self._thread = None
        self.joined = threading.Event()  # the ports went out to every world

    @property
    def port(self):
        return self._listener.getsockname()[1]

    def failed_nodes(self):
        """{node: exit code, or None when its launcher vanished} of the launchers whose processes failed."""
        with self._lock:
            return {node: code for node, code in self._exits.items() if code != 0}

    def running_launchers(self):
        with self._lock:
            return set(self._running)

    def start(self):
        self._thread = threading.Thread(target=self._serve, name="oneflow-rendezvous", daemon=True)
        self._thread.start()
        return self

    def close(self):
        self._stop = True
        if self._thread is not None:
            self._thread.join(timeout=2)
        for sock in list(self._peers):
            self._drop(sock, quiet=True)
        try:
            self._selector.unregister(self._listener)
        except (KeyError, ValueError):
            pass
        self._listener.close()
        self._selector.close()

    # ----- the loop ---------------------------------------------------------------------------------------

    def _serve(self):
        while not self._stop:
            for key, _ in self._selector.select(timeout=0.05):
                if key.data is None:
                    try:
                        sock, _ = self._listener.accept()
                    except OSError:
                        continue
                    sock.setblocking(True)
                    peer = _Peer(sock)
                    self._peers[sock] = peer
                    self._selector.register(sock, selectors.EVENT_READ, peer)
                else:
                    self._readable(key.data)

    def _readable(self, peer):
        try:
            data = peer.sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            self._drop(peer.sock)
            return
        peer.buffer += data
        while b"\n" in peer.buffer:
            line, _, peer.buffer = peer.buffer.partition(b"\n")
            try:
                self._handle(peer, json.loads(line.decode("utf-8")))
            except (ValueError, KeyError, TypeError) as error:
                self._send(peer, {"error": "bad rendezvous message %r: %s" % (line[:200], error)})

    def _send(self, peer, obj):
        try:
            peer.sock.sendall(json.dumps(obj).encode("utf-8") + b"\n")
        except OSError:
            pass

    def _drop(self, sock, quiet=False):
        peer = self._peers.pop(sock, None)
        try:
            self._selector.unregister(sock)
        except (KeyError, ValueError):
            pass
        sock.close()
        if peer is None or quiet:
            return
        if peer.node is not None and peer.node not in self._exits:
            self._ended(peer.node, None)
            self._abort("the launcher of node %d ended before its processes did" % peer.node)

    # ----- messages --------------------------------------------------------------------------------------

    def _handle(self, peer, message):
        if "role" in message:
            if message["role"] == "group":
                peer.ranks = [int(r) for r in message["ranks"]]
                self._group_arrived(peer)
            elif message["role"] == "launcher":
                peer.node = int(message["node"])
                with self._lock:
                    self._running.add(peer.node)
                if self._aborted is not None:
                    self._send(peer, {"abort": self._aborted})
            else:
                raise ValueError("unknown role %r" % message["role"])
        elif "ports" in message:
            self._deliver_ports(peer, message["ports"])
        elif "exit" in message:
            code = int(message["exit"])
            self._ended(peer.node, code)
            if code != 0:
                self._abort("the processes of node %d ended with exit code %d" % (peer.node, code))
        else:
            raise ValueError("no role, ports or exit")

    def _group_arrived(self, peer):
        taken = {r for group in self._groups for r in group.ranks}
        clash = sorted(taken.intersection(peer.ranks))
        bad = [r for r in peer.ranks if not 0 <= r < self.world_size]
        if clash or bad or len(set(peer.ranks)) != len(peer.ranks):
            why = ("rank%s %s already joined from another MPI world" % ("" if len(clash) == 1 else "s",
                                                                         _ranks_text(clash)) if clash else
                   "ranks %s are not below WORLD_SIZE=%d" % (_ranks_text(bad), self.world_size) if bad else
                   "a rank appears twice")
            self._send(peer, {"error": "an MPI world with ranks %s cannot join: %s (RANK must differ between "
                                       "processes)" % (_ranks_text(peer.ranks), why)})
            return
        self._groups.append(peer)
        if 0 in peer.ranks:
            self._root = peer
        joined = sorted(r for group in self._groups for r in group.ranks)
        if self._root is not None:
            self._send(self._root, {"joined": joined})
            if len(joined) == self.world_size:
                self._send(self._root, {"groups": [group.ranks for group in self._ordered()]})

    def _ordered(self):
        others = sorted((g for g in self._groups if g is not self._root), key=lambda g: min(g.ranks))
        return [self._root] + others

    def _deliver_ports(self, peer, ports):
        if peer is not self._root or self._ports_sent:
            raise ValueError("ports from a process that is not the root")
        groups = self._ordered()
        if len(ports) != len(groups) - 1:
            raise ValueError("%d ports for %d worlds" % (len(ports), len(groups) - 1))
        layout = [group.ranks for group in groups]
        for group, port in zip(groups[1:], ports):
            self._send(group, {"port": port, "groups": layout})
        self._ports_sent = True
        self.joined.set()

    def _abort(self, reason):
        if self._aborted is not None:
            return
        self._aborted = reason
        for peer in list(self._peers.values()):
            if peer.node is not None and peer.node not in self._exits:
                self._send(peer, {"abort": reason})

    def _ended(self, node, code):
        with self._lock:
            self._exits[node] = code
            self._running.discard(node)


class _Peer:
    __slots__ = ("sock", "buffer", "ranks", "node")

    def __init__(self, sock):
        self.sock = sock
        self.buffer = b""
        self.ranks = None
        self.node = None
