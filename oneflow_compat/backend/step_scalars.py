"""Per-call scalars of a plan on a device: the learning rate, Adam's bias-corrected rate, dropout's key.

A kernel on a device reads such a value from device memory, never as an argument passed by value: an argument is
frozen into a captured CUDA graph, and a fresh `asarray` each call is a pageable copy up. Instead each plan has, per
device, a small buffer of slots: a builder asks for a slot (`add(dtype, value_fn)`) and gets a 0-d device array
that stays the same array for the plan's life; at the start of every call the runtime evaluates every slot's
`value_fn` on the host (from the host copy of the step counter, the call counters) and writes them all with ONE
asynchronous copy from pinned host memory on the current stream (`upload`), before any kernel that reads them. In a
captured graph that copy is a node that reads the pinned buffer when the graph runs, so each replay sees the
values written before it.

Before the host rewrites the pinned buffer it waits for the previous call's copy (an event recorded after it):
that copy was the first thing the previous call queued, so the wait is for the device to have started that call,
not finished it.

Builders find the slots of the plan being built with `for_device(xp, index)` (None on the host, and where the
running code cannot upload: a builder then passes host values as before). The plan sets what `for_device` answers
while it builds (`building`).
"""
import contextlib
import threading

import numpy as np

SLOT_BYTES = 8  # every slot holds up to 8 bytes (float32, float64, int64, uint64)
SLOTS_PER_BUFFER = 32

_building = threading.local()


@contextlib.contextmanager
def building(factory):
    """While a plan builds its steps: `factory(xp, index)` gives its StepScalars of a device (or None)."""
    previous = getattr(_building, "factory", None)
    _building.factory = factory
    try:
        yield
    finally:
        _building.factory = previous


def for_device(xp, index):
    """The StepScalars of device `index` of the plan being built, or None (host arrays; no plan building)."""
    factory = getattr(_building, "factory", None)
    if factory is None or xp is np:
        return None
    return factory(xp, index)


def _is_cupy(xp):
    cuda = getattr(xp, "cuda", None)
    return cuda is not None and hasattr(cuda, "alloc_pinned_memory")


class _Buffer:
    """SLOTS_PER_BUFFER slots: pinned host bytes, device bytes, and the event of the last copy."""

    def __init__(self, xp):
        n = SLOT_BYTES * SLOTS_PER_BUFFER
        if _is_cupy(xp):
            memory = xp.cuda.alloc_pinned_memory(n)
            self.host = np.frombuffer(memory, np.uint8, n)
            self._memory = memory  # keeps the pinned allocation alive
        else:
            self.host = np.zeros(n, np.uint8)
        self.host[...] = 0
        self.device = xp.zeros(n, dtype=np.uint8)
        self.event = None


class StepScalars:
    """The slots of one plan on one device; see the module docstring."""

    def __init__(self, xp):
        self.xp = xp
        self.slots = []  # (buffer, offset, dtype, value_fn)
        self.buffers = []
        self.capturing = False  # set while a CUDA graph captures the plan's steps (runtime/cuda_graph.py)

    def add(self, dtype, value_fn):
        """A 0-d device array of `dtype` holding `value_fn()` during every call (evaluated at the call's start)."""
        dtype = np.dtype(dtype)
        if dtype.itemsize > SLOT_BYTES:
            raise ValueError("a step scalar holds at most %d bytes, not a %s" % (SLOT_BYTES, dtype))
        k = len(self.slots)
        if k % SLOTS_PER_BUFFER == 0:
            self.buffers.append(_Buffer(self.xp))
        buf, offset = self.buffers[-1], SLOT_BYTES * (k % SLOTS_PER_BUFFER)
        self.slots.append((buf, offset, dtype, value_fn))
        return buf.device[offset:offset + SLOT_BYTES].view(dtype)[0:1].reshape(())

    def __len__(self):
        return len(self.slots)

    def upload(self):
        """Evaluates every slot and copies the values up (one copy per buffer of 32 slots)."""
        for buf in self.buffers:
            if buf.event is not None:
                buf.event.synchronize()  # the previous call's copy has read the pinned bytes
        for buf, offset, dtype, value_fn in self.slots:
            buf.host[offset:offset + SLOT_BYTES].view(dtype)[0] = value_fn()
        cupy = _is_cupy(self.xp)
        for buf in self.buffers:
            if cupy:
                stream = self.xp.cuda.get_current_stream()
                buf.device.set(buf.host, stream=stream)
                buf.event = self.xp.cuda.Event(block=False, disable_timing=True)
                buf.event.record(stream)
            else:
                buf.device.set(buf.host)


class PlanScalars:
    """A plan's StepScalars, one per (array module, device index), made when a builder first asks."""

    def __init__(self):
        self.by_device = {}

    def __call__(self, xp, index):
        found = self.by_device.get((id(xp), index))
        if found is None:
            found = self.by_device[(id(xp), index)] = StepScalars(xp)
        return found

    def __len__(self):
        return sum(len(s) for s in self.by_device.values())

    def upload(self):
        for scalars in self.by_device.values():
            if len(scalars):
                scalars.upload()
