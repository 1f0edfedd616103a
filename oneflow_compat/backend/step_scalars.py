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
        self.after = []  # host actions once a call's steps ran (the host copy of the step counter advancing)
        self.keyed = {}  # key -> the slot's device array (`add`'s `key`)

    def add(self, dtype, value_fn, key=None):
        """A 0-d device array of `dtype` holding `value_fn()` during every call (evaluated at the call's start).
        `key`: slots asked with the same key (and dtype) are one slot, its value computed once per call — what
        every update of a schedule reads (the learning rate of a step: LeNet's 8 updates read one slot)."""
        dtype = np.dtype(dtype)
        if key is not None:
            found = self.keyed.get((key, dtype))
            if found is not None:
                return found
            made = self.keyed[(key, dtype)] = self.add(dtype, value_fn)
            return made
        if dtype.itemsize > SLOT_BYTES:
            raise ValueError("a step scalar holds at most %d bytes, not a %s" % (SLOT_BYTES, dtype))
        k = len(self.slots)
        if k % SLOTS_PER_BUFFER == 0:
            self.buffers.append(_Buffer(self.xp))
        buf, offset = self.buffers[-1], SLOT_BYTES * (k % SLOTS_PER_BUFFER)
        self.slots.append((buf, offset, dtype, value_fn))
        return buf.device[offset:offset + SLOT_BYTES].view(dtype)[0:1].reshape(())

    def after_call(self, action):
        """`action()` on the host after each call's steps ran (where the call succeeded)."""
        self.after.append(action)

    def __len__(self):
        return len(self.slots) + len(self.after)

    def write_host(self):
        """Evaluates every slot into the pinned host bytes (after the previous call's copy has read them)."""
        for buf in self.buffers:
            if buf.event is not None:
                buf.event.synchronize()  # the previous call's copy has read the pinned bytes
                buf.event = None
        for buf, offset, dtype, value_fn in self.slots:
            buf.host[offset:offset + SLOT_BYTES].view(dtype)[0] = value_fn()

    def copy_up(self, record_event=True):
        """The asynchronous copy of every buffer up, on the current stream (in a captured graph: its memcpy nodes;
        `record_event` False there, the caller waiting for the whole graph instead)."""
        cupy = _is_cupy(self.xp)
        for buf in self.buffers:
            if cupy:
                stream = self.xp.cuda.get_current_stream()
                buf.device.set(buf.host, stream=stream)
                if record_event:
                    buf.event = self.xp.cuda.Event(block=False, disable_timing=True)
                    buf.event.record(stream)
            else:
                buf.device.set(buf.host)

    def upload(self):
        """Evaluates every slot and copies the values up (one copy per buffer of 32 slots)."""
        self.write_host()
        self.copy_up()

    def finish_call(self):
        for action in self.after:
            action()


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
            if scalars.slots:
                scalars.upload()

    def write_host(self):
        for scalars in self.by_device.values():
            scalars.write_host()

    def copy_up(self, record_event=True):
        for scalars in self.by_device.values():
            if scalars.slots:
                scalars.copy_up(record_event)

    def finish_call(self):
        for scalars in self.by_device.values():
            scalars.finish_call()


# --- CUDA graph capture (runtime/cuda_graph.py) ------------------------------------------------------------------
class FrozenInGraph(RuntimeError):
    """Code about to run inside a CUDA graph capture would freeze a per-call host value (or wait for the device)."""


def capturing():
    """Whether the steps running now are being captured into a CUDA graph (or checked for it)."""
    return getattr(_building, "capturing", None) is not None


@contextlib.contextmanager
def capture_guard(found=None):
    """While steps are captured: `refuse_in_capture` raises FrozenInGraph; with `found` (a list) it appends its
    message there instead (a run checked before a capture: it goes on, and the caller decides)."""
    previous = getattr(_building, "capturing", None)
    _building.capturing = True if found is None else found
    try:
        yield
    finally:
        _building.capturing = previous


def refuse_in_capture(what):
    """Inside a capture: FrozenInGraph naming `what` (a per-call host value, a wait for the device)."""
    mode = getattr(_building, "capturing", None)
    if mode is None:
        return
    message = "%s: a captured CUDA graph would replay the value of its first call" % what
    if mode is True:
        raise FrozenInGraph(message)
    if message not in mode:
        mode.append(message)
