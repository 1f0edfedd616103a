"""CUDA graphs, opt-in (`ONEFLOW_COMPAT_CUDA_GRAPH=1`): a compiled job's whole step captured once and replayed by
one launch per call.

A graph replays the kernels it captured with the arguments they had: the device addresses, and every value passed
by value. So everything that changes from call to call lives in device memory at fixed addresses:

* inputs: static device arrays, views of ONE device staging buffer (`_Staging`);
* per-call scalars (learning rates, Adam's rate, dropout keys): the step scalars (backend/step_scalars.py), whose
  bytes are staged in the same buffer and copied on the device into the buffers their kernels read by the graph's
  first nodes;
* outputs: the registers the step's last kernels wrote, held at the capture (`plan._held`) and brought down after
  each launch by the step's one transfer (runtime/plan.py's download);
* temporaries: a private memory pool, used by the capture alone; its blocks stay the graph's.

CuPy refuses every host -> device copy while a stream captures (pinned memory included), so nothing goes up inside
the graph: the host writes the fed batch and the scalars' bytes into one pinned buffer, and ONE asynchronous copy
takes it up on the graph's stream just before each launch (stream order: the graph reads it). CuPy refuses its own
cuBLAS calls too; the steps' GEMMs go through the project's own handle (kernels/cuda_blas.py), bound to the graph's
stream with its workspace before the capture begins.

The graph runs on a non-default stream of its own. Call 1 runs the steps as usual on that stream and pool (its
results are the call's, and it leaves the pool holding every block the step needs); call 2 copies up, captures
(the scalars' device copies, every step but the download), then launches; later calls write the pinned buffer, copy
it up, launch, download — one copy up and one device -> host synchronisation per call.

Not captured (the job runs as before; a notice says why, once): several micro-batches or pipeline stages, several
processes (MPI collectives run on the host), devices on several GPUs (a stream belongs to one), ops on CPU devices,
watches, a CUDA-less device module, variables re-bound between calls. A step that reads a per-call host value or waits for the device — an optimizer without a
device update reading its learning rate on the host, an array dropout drawing its key on the host, a host copy —
is found during the capture (backend/step_scalars.py's `FrozenInGraph`): the capture is dropped, the notice names
it, and the job runs uncaptured from then on.
"""
import os

import numpy as np

from oneflow_compat.backend import notices, step_scalars
from oneflow_compat.kernels import checks, cuda_blas

ENV = "ONEFLOW_COMPAT_CUDA_GRAPH"


def requested():
    """Whether `ONEFLOW_COMPAT_CUDA_GRAPH` asks for captured steps (1, true, on)."""
    return os.environ.get(ENV, "").strip().lower() in ("1", "true", "on", "yes")


def unsupported_reason(exe, xp):
    """Why `exe`'s steps cannot be captured (None where they can)."""
    cuda = getattr(xp, "cuda", None)
    if xp is np or cuda is None or not hasattr(cuda, "Stream"):
        return "its devices are not CUDA devices"
    if exe.micro_batches != 1 or exe.pipelined:
        return "it runs %d micro-batches" % exe.micro_batches
    rt = exe.session.runtime
    if rt.comm.size > 1:
        return "it runs across %d processes (their collectives run on the host)" % rt.comm.size
    gpus = {rt.gpu_of(op.placement, i) for op in exe.job.ops if op.placement.device_tag == "gpu"
            for i in rt.local_indices(op.placement)}
    if len(gpus) > 1:
        return "its devices are on %d GPUs (a captured graph runs on one stream, which belongs to one GPU)" % len(gpus)
    for op in exe.job.ops:
        if op.placement.device_tag != "gpu":
            return "op '%s' runs on CPU devices" % op.name
        if op.defn.runtime_hook == "watch":
            return "op '%s' is a watch (a host callback)" % op.name
    if getattr(exe.job, "diff_watches", None):
        return "it watches gradients (host callbacks)"
    return None


def for_executable(exe):
    """A CapturedStep for `exe` when graphs are requested and its steps can be captured, else None (with a notice
    naming why, where they were requested)."""
    if not requested():
        return None
    xp = exe.session.runtime.xp(exe.job.ops[0].placement) if exe.job.ops else np
    if xp is np:
        return None  # a job on CPU devices: nothing to say
    reason = unsupported_reason(exe, xp)
    if reason is not None:
        notices.warn("%s=1: job '%s' runs without a CUDA graph: %s", ENV, exe.job.name, reason)
        return None
    return CapturedStep(exe, xp)


def _fresh(value):
    """A copy of a fetched device value (an array, or a list of per-device pieces) in new memory."""
    if isinstance(value, (list, tuple)):
        return type(value)(_fresh(v) for v in value)
    return value.copy() if hasattr(value, "copy") and hasattr(value, "dtype") else value


class _Staging:
    """Everything a call sends up, in ONE pinned host buffer and ONE device buffer: the fed inputs (their static
    device arrays are views of the device buffer, at fixed addresses) and the step scalars' bytes. The host writes
    the pinned buffer, one asynchronous copy takes it up on the graph's stream before the graph's launch (CuPy
    refuses every host -> device copy while a stream captures, and a copy outside the graph is as ordered), and the
    graph's first nodes copy the scalars' bytes on the device into the buffers their kernels read
    (backend/step_scalars.py). Regions start at multiples of ALIGN bytes."""

    ALIGN = 256

    def __init__(self, xp, values, scalars):
        regions, offset = [], 0

        def region(nbytes):
            nonlocal offset
            at = offset
            offset += -(-max(nbytes, 1) // self.ALIGN) * self.ALIGN
            return at

        for r, value in values:
            if getattr(value, "dtype", None) == object:
                raise step_scalars.FrozenInGraph("input register %d holds host objects" % r)
            regions.append((r, tuple(value.shape), np.dtype(value.dtype), region(value.nbytes)))
        buffers = [buf for s in scalars.by_device.values() if s.slots for buf in s.buffers]
        scalar_regions = [(buf, region(buf.host.nbytes)) for buf in buffers]
        self.xp, self.nbytes = xp, offset
        self._memory = xp.cuda.alloc_pinned_memory(max(1, offset))
        self.host = np.frombuffer(self._memory, np.uint8, offset)
        self.device = xp.empty(offset, dtype=np.uint8)
        # recorded after each copy up: the host rewrites the pinned bytes once it has read them (one event, reused)
        self.event = xp.cuda.Event(block=False, disable_timing=True)
        self.recorded = False

        def view(buffer, at, shape, dtype):
            return buffer[at:at + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize].view(dtype).reshape(shape)

        # per input register: (register, shape, dtype, its static device array, its pinned host view)
        self.inputs = [(r, shape, dtype, view(self.device, at, shape, dtype), view(self.host, at, shape, dtype))
                       for r, shape, dtype, at in regions]
        # per step-scalar buffer: (its pinned bytes, its device bytes, where they are staged: host, device)
        self.scalars = [(buf.host, buf.device, self.host[at:at + buf.host.nbytes],
                         self.device[at:at + buf.host.nbytes]) for buf, at in scalar_regions]

    def check(self, values):
        for (r, shape, dtype, _, _), (_, value) in zip(self.inputs, values):
            if tuple(value.shape) != shape or value.dtype != dtype:
                raise step_scalars.FrozenInGraph("input register %d changed from %s %s to %s %s" % (
                    r, shape, dtype, tuple(value.shape), value.dtype))

    def upload(self, values, regs, stream):
        """The call's host values into the pinned buffer, its device values into their static arrays (a copy on
        the device), the one copy up (the step scalars written on the host before); every input register then
        holds its static array."""
        if self.recorded:
            self.event.synchronize()  # (the previous call's copy up has read the pinned bytes: long since)
        on_device = []
        for (r, _, _, static, pinned), (_, value) in zip(self.inputs, values):
            if isinstance(value, np.ndarray):
                np.copyto(pinned, value)
            else:
                on_device.append((static, value))
            regs[r] = static
        for host, _, staged, _ in self.scalars:
            np.copyto(staged, host)
        if self.nbytes:
            self.device.set(self.host, stream=stream)
            self.event.record(stream)
            self.recorded = True
        with stream:
            for static, value in on_device:  # a device value: copied into the array the graph reads, after the
                static[...] = value  # copy up (which writes the whole buffer, its region too)

    def bind(self, regs):
        """Every input register to its static array again (the steps release registers after their last reader)."""
        for r, _, _, static, _ in self.inputs:
            regs[r] = static

    def scalars_in(self):
        """The step scalars' bytes from the staging buffer into the buffers their kernels read (on the device, on
        the current stream: inside the graph, its first nodes)."""
        for _, device, _, staged in self.scalars:
            device[...] = staged


class CapturedStep:
    """The captured step of one executable; see the module docstring."""

    def __init__(self, exe, xp):
        self.exe, self.xp = exe, xp
        self.stream = xp.cuda.Stream(non_blocking=True)
        self.pool = xp.cuda.MemoryPool()
        self.graph = None
        self.calls = 0
        self.staging = None  # _Staging, made at the first call
        self.variables = None  # the variable arrays the graph was captured with
        self.held = {}
        self.results = []  # (output index, the device value the capture's fetch step made)
        self.pending = []
        self.disabled = None  # why the capture was given up

    def usable(self):
        return self.disabled is None

    # --- a call -------------------------------------------------------------------------------------------------
    def call(self, feed):
        """One call (the executable's `call` for one micro-batch); returns [[results]]."""
        exe, plan = self.exe, self.exe.plan
        rt = exe.session.runtime
        exe.refresh_variables()
        variables = [plan.regs[r] for r, _, _ in plan.var_slots]
        with rt.host_feeds():
            feed(0, None)
        values = [(r, plan.regs[r]) for slots in exe.in_regs[0] for r in slots]
        try:
            if self.staging is None:
                self.staging = _Staging(self.xp, values, plan.scalars)
            if self.variables is not None and any(a is not b for a, b in zip(variables, self.variables)):
                raise step_scalars.FrozenInGraph("a variable was bound to another array since the capture")
            self.staging.check(values)
        except step_scalars.FrozenInGraph as e:
            return self._give_up(e, feed)
        plan.scalars.write_host()
        end = plan.steps.index(plan._download_step) if plan._download_step is not None else len(plan.steps)
        with self.stream:
            self.staging.upload(values, plan.regs, self.stream)  # the call's one copy up, outside any capture
            if self.calls == 0:
                # as usual, but checked: what a capture would freeze is found now, without a capture to drop
                found = []
                with self.xp.cuda.using_allocator(self.pool.malloc), step_scalars.capture_guard(found):
                    self.staging.scalars_in()
                    exe.run(plan, 0, end)
                if found:
                    self.disabled = found[0]
                    notices.warn("%s=1: job '%s' runs without a CUDA graph: %s", ENV, exe.job.name, found[0])
            else:
                if self.graph is None:
                    try:
                        self._capture(plan, end)
                    except Exception as e:  # noqa: BLE001 - nothing ran (a capture executes nothing): run uncaptured
                        return self._give_up(e, feed, staged=True)
                    self.variables = variables
                self.graph.launch(self.stream)
                plan._held.update(self.held)
                for k, value in self.results:
                    plan.results[k] = _fresh(value)
                checks.restore_pending(self.pending, again=True)
            if end < len(plan.steps):
                exe.run(plan, end, len(plan.steps))  # the download: the call's one synchronisation
            else:
                self.stream.synchronize()  # nothing comes down: the pinned buffer may be rewritten next call
        plan.scalars.finish_call()
        self.calls += 1
        return [list(plan.results)]

    def _capture(self, plan, end):
        xp = self.xp
        mode = getattr(xp.cuda.runtime, "streamCaptureModeRelaxed", None)
        # this thread's cuBLAS handle bound to the capturing stream (and its workspace) before the capture begins
        cuda_blas.prepare(xp)
        before = checks.pending_count()  # checks of earlier calls stay pending; the graph's are its own
        with xp.cuda.using_allocator(self.pool.malloc):
            self.stream.begin_capture(mode) if mode is not None else self.stream.begin_capture()
            try:
                with step_scalars.capture_guard():
                    self.staging.scalars_in()
                    self.exe.run(plan, 0, end)
            except BaseException:
                try:
                    self.stream.end_capture()
                except Exception:  # noqa: BLE001 - the capture's own error is the one to report
                    pass
                plan._held.clear()
                checks.take_pending(since=before)
                raise
            self.graph = self.stream.end_capture()
        self.held = dict(plan._held)
        # results the captured fetch steps made on the device (an nn.Graph's outputs): the graph rewrites those arrays
        # at every replay, and no Python step runs to hand them over; each call returns copies made after its launch
        self.results = [(k, value) for k, value in enumerate(plan.results) if value is not None]
        self.pending = checks.take_pending(since=before)

    def _give_up(self, error, feed, staged=False):
        """The step cannot be captured: said once, and this call (and every later one) runs uncaptured."""
        exe, plan = self.exe, self.exe.plan
        self.disabled = "%s%s" % ("" if isinstance(error, step_scalars.FrozenInGraph) else type(error).__name__ + ": ",
                                  error)
        why = cuda_blas.unavailable_reason(self.xp) if isinstance(error, NotImplementedError) else None
        if why is not None:  # CuPy's own cuBLAS refused the capture: why the project's handle was not there
            self.disabled += " (the products went through CuPy's matmul: %s)" % why
        notices.warn("%s=1: job '%s' runs without a CUDA graph: %s", ENV, exe.job.name, self.disabled)
        plan._held.clear()
        self.graph = None
        if staged:
            # this call's inputs and scalars are up already: the input registers to the static arrays again (the
            # steps a failed capture went through released them), the scalars into their buffers, the steps as usual
            with self.stream:
                self.staging.bind(plan.regs)
                self.staging.scalars_in()
                exe.run()
                plan.scalars.finish_call()
            return [list(plan.results)]
        return exe.call(feed)
