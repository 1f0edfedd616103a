"""The fed batch of an eager (uncaptured) call on one GPU, up in ONE asynchronous copy from pinned memory.

A call of a compiled job on a GPU uploads what it is fed: the legacy job functions take numpy arrays (images and
labels), each a pageable `asarray` copy up — on the first GPU run 2 of them took ~155 µs of a LeNet step's host time
(CuPy stages pageable memory itself, then waits). Here the host writes every fed array of the call into one pinned
buffer and ONE asynchronous copy on the current stream takes them up into ONE fresh device allocation, whose views
the input registers get. The device arrays are new each call, as `asarray`'s were (nothing a call keeps is
overwritten by the next); the pinned buffer is rewritten only after the previous call's copy has read it (an event
recorded after it). The step scalars keep their own copy (backend/step_scalars.py).

Used where a CUDA graph would be (`cuda_graph.unsupported_reason` is None: one process, one GPU, every op on it, no
watches) and the executable runs one micro-batch; a fed value that is not a plain numpy array (a device array, an
object array) goes up as before. ONEFLOW_COMPAT_STAGED_FEED=0 turns it off.
"""
import os

import numpy as np

from oneflow_compat.runtime import cuda_graph

ENV = "ONEFLOW_COMPAT_STAGED_FEED"
ALIGN = 256
MAX_BYTES = 256 << 20  # a call feeding more goes up array by array (the pinned buffer is kept for the job's life)


def for_executable(exe, one_device):
    """A StagedFeed for `exe` where its calls can take one (see the module docstring), else None."""
    if os.environ.get(ENV, "1").strip() == "0" or one_device or exe.micro_batches != 1 or exe.pipelined:
        return None
    if not exe.job.ops:
        return None
    xp = exe.session.runtime.xp(exe.job.ops[0].placement)
    cuda = getattr(xp, "cuda", None)
    if xp is np or cuda is None or not hasattr(cuda, "alloc_pinned_memory") or \
            cuda_graph.unsupported_reason(exe, xp) is not None:
        return None
    return StagedFeed(xp)


class StagedFeed:
    """The pinned buffer of one executable's feeds and the event of its last copy up."""

    def __init__(self, xp):
        self.xp = xp
        self._memory, self.host = None, None
        self.event = None

    def upload(self, regs, registers):
        """Every host array in `regs[r]` for r in `registers` replaced by its device copy, all in one copy up."""
        xp = self.xp
        staged, total = [], 0
        for r in registers:
            value = regs[r]
            if type(value) is np.ndarray and value.dtype != object:
                staged.append((r, value, total))
                total += -(-max(value.nbytes, 1) // ALIGN) * ALIGN
        if not staged or total > MAX_BYTES:
            if staged:  # (too large to keep pinned: each array up on its own, as `asarray` does)
                for r, value, _ in staged:
                    regs[r] = xp.asarray(value)
            return
        if self.event is not None:
            self.event.synchronize()  # the previous call's copy has read the pinned bytes (long since, mostly)
            self.event = None
        if self.host is None or self.host.nbytes < total:
            self._memory = xp.cuda.alloc_pinned_memory(total)
            self.host = np.frombuffer(self._memory, np.uint8, total)
        host = self.host
        for _, value, at in staged:
            np.copyto(host[at:at + value.nbytes].view(value.dtype).reshape(value.shape), value, casting="no")
        device = xp.empty(total, dtype=np.uint8)
        stream = xp.cuda.get_current_stream()
        device.set(host[:total], stream=stream)
        event = xp.cuda.Event(block=False, disable_timing=True)
        event.record(stream)
        self.event = event
        for r, value, at in staged:
            regs[r] = device[at:at + value.nbytes].view(value.dtype).reshape(value.shape)
