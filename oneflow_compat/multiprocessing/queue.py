"""`Queue` and `SimpleQueue` whose both ends pickle with `ForkingPickler` (OneFlow 0.9's `multiprocessing/queue.py`),
so that the tensor reductions apply to what they carry."""
import io
import multiprocessing.queues
import pickle
from multiprocessing.reduction import ForkingPickler


class ConnectionWrapper:
    """A connection that sends objects pickled by `ForkingPickler` and receives them with `pickle.loads`."""

    def __init__(self, conn):
        self.conn = conn

    def send(self, obj):
        buf = io.BytesIO()
        ForkingPickler(buf, pickle.HIGHEST_PROTOCOL).dump(obj)
        self.send_bytes(buf.getvalue())

    def recv(self):
        return pickle.loads(self.recv_bytes())

    def __getattr__(self, name):
        if "conn" in self.__dict__:
            return getattr(self.conn, name)
        raise AttributeError("'{}' object has no attribute '{}'".format(type(self).__name__, "conn"))


class Queue(multiprocessing.queues.Queue):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("ctx", multiprocessing.get_context())
        super().__init__(*args, **kwargs)
        self._reader = ConnectionWrapper(self._reader)
        self._writer = ConnectionWrapper(self._writer)
        self._send = self._writer.send
        self._recv = self._reader.recv


class SimpleQueue(multiprocessing.queues.SimpleQueue):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("ctx", multiprocessing.get_context())
        super().__init__(*args, **kwargs)

    def _make_methods(self):
        if not isinstance(self._reader, ConnectionWrapper):
            self._reader = ConnectionWrapper(self._reader)
            self._writer = ConnectionWrapper(self._writer)
        super()._make_methods()
