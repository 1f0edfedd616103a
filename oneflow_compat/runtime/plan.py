"""A compiled job's plan: a flat register file and a flat list of steps (closures over the registers), built once
per compiled job by the executable (`runtime/executable.py`), which feeds, runs and fetches it.

Each (blob, device of this process) gets a register. An ordinary op becomes one step per local device (a closure
calling its kernel); a collective op (boxing, watch) becomes one step over all its local pieces; a job output
becomes a fetch step right after its producer. An op whose signature reads row pieces (S(0)) and broadcast copies
and makes row pieces, with every device of its placement on this process's CPU, becomes one step that calls the
kernel once on the whole rows when the pieces are row blocks of one array, as a fed batch's and such a step's own
outputs are (`_batched_step`): N in-process devices then cost one device's kernel calls, not N. The plan knows
ops and devices only: the executable supplies the functions of collectives and the conversion of fetched pieces,
and feeds, runs and accumulates.

Registers hold arrays, never numpy scalars: numpy turns 0-d results into scalars (np.float32), so the step of an
op with a 0-d output converts them back (`_zero_d`, the one place this is done), and every consumer (boxing,
in-place accumulation, device transfers, fetches) can take what a register holds.

Memory: every register is released (set to None) right after the last step that reads it, so a step keeps alive
only what later steps still need, and nothing stays alive between calls. Not released: variables' registers (the
variables' storage), and registers no step reads (the runtime reads them itself after a run: eager results);
`plan.release = False` keeps them all (to inspect registers after a call).
"""
import contextlib
import functools

import numpy as np

from oneflow_compat.backend import devices, step_scalars
from oneflow_compat.ir import dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.kernels import bfloat16 as bf16_k
from oneflow_compat.kernels import checks
from oneflow_compat.ops.transitions import rows_of_one
from oneflow_compat.ops.variable_ops import shares_replicas


class DeviceSlot:
    """What an op's builder knows about one device it runs on."""

    __slots__ = ("index", "parallel_num", "placement", "xp", "in_shapes", "out_shapes", "sbp_in", "sbp_out",
                 "session", "job")

    def __init__(self, op, index, xp, session, whole=False, one_device=False):
        """`whole`: the slot of the op computing the whole logical value at once, as on one device. `one_device`:
        the op runs on one logical device in its own layouts (legacy eager mode: B whole values, M per-device
        ones)."""
        n = 1 if whole or one_device else op.placement.parallel_num
        self.index, self.parallel_num, self.placement, self.xp = index, n, op.placement, xp
        self.sbp_in, self.sbp_out = (([S.B] * len(op.inputs), [S.B] * len(op.outputs)) if whole
                                     else (op.sbp_in, op.sbp_out))
        self.in_shapes = [S.local_shape(x.shape, s, index, n) for x, s in zip(op.inputs, self.sbp_in)]
        self.out_shapes = [S.local_shape(y.shape, s, index, n) for y, s in zip(op.outputs, self.sbp_out)]
        self.session, self.job = session, op.job


def device_fn(op, dev):
    fn = _device_fn(op, dev)
    marks = [y.meta.dtype is dtypes.bfloat16 for y in op.outputs]
    if any(marks):  # bfloat16 outputs: float32 storage rounded to bfloat16 numbers (kernels/bfloat16.py)
        return _bfloat16_outputs(fn, marks, dev.xp)
    if op.defn.in_place:
        written = [k for k, x in enumerate(op.inputs) if x.meta.dtype is dtypes.bfloat16]
        if written:  # an update in place of bfloat16 arrays (a variable, its optimizer states)
            return _bfloat16_in_place(fn, written, dev.xp)
    return fn


def _bfloat16_in_place_pieces(fn, written, counts, xp):
    """`_bfloat16_in_place` of a collective step, whose arguments are every input's local pieces in turn."""
    starts = [sum(counts[:k]) for k in range(len(counts))]
    positions = [starts[k] + j for k in written for j in range(counts[k])]
    return _bfloat16_in_place(fn, positions, xp)


def _bfloat16_in_place(fn, written, xp):
    """An op writing its inputs in place (the optimizer update) computes in float32; its bfloat16 inputs are
    stored back rounded to nearest even, as OneFlow 0.9's update kernels store a bfloat16 model and its states
    (rounding the ones it only read changes nothing: they hold bfloat16 numbers already)."""
    def rounded(*arrays):
        out = fn(*arrays)
        for k in written:
            arrays[k][...] = bf16_k.round_to_bfloat16(xp, arrays[k])
        return out
    return rounded


def _bfloat16_outputs(fn, marks, xp):
    if len(marks) == 1:
        return lambda *arrays: bf16_k.round_to_bfloat16(xp, fn(*arrays))

    def rounded(*arrays):
        outs = fn(*arrays)
        return tuple(bf16_k.round_to_bfloat16(xp, o) if m else o for o, m in zip(outs, marks))
    return rounded


def _device_fn(op, dev):
    d = op.defn
    if d.build is not None:
        return d.build(op, dev)
    attrs = d.kernel_attrs(op) if d.kernel_attrs is not None else {}
    if d.local_attrs is not None:
        attrs = dict(attrs, **d.local_attrs(op, dev))
    specialize = getattr(d.kernel, "specialize", None)
    if specialize is not None:
        # a kernel that picks, once per planned call, a cheaper callable for these pieces' shapes and dtypes (the
        # same values as the kernel's own path for them), or None
        fn = specialize(dev.xp, dev.in_shapes, [x.meta.dtype.np for x in op.inputs], **attrs)
        if fn is not None:
            return fn
    if attrs:
        # attrs equal to the kernel's own defaults are left out: a call of a partial merges its keywords every
        # time (eager ops on small tensors pay for it); same type and value only (True == 1.0 is no default)
        defaults = _keyword_defaults(d.kernel)
        attrs = {k: v for k, v in attrs.items()
                 if k not in defaults or type(v) is not type(defaults[k]) or v != defaults[k]}
    return functools.partial(d.kernel, dev.xp, **attrs) if attrs else functools.partial(d.kernel, dev.xp)


@functools.lru_cache(maxsize=None)
def _keyword_defaults(kernel):
    import inspect

    try:
        params = inspect.signature(kernel).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty
            and isinstance(p.default, (bool, int, float, str, type(None)))}


def _zero_d(fn, n_outputs):
    """`fn` with the numpy scalars it returns for 0-d results made 0-d arrays (see the module docstring)."""
    generic = np.generic
    if n_outputs == 1:
        def kernel(*arrays):
            out = fn(*arrays)
            return np.asarray(out) if isinstance(out, generic) else out
    else:
        def kernel(*arrays):
            return tuple(np.asarray(o) if isinstance(o, generic) else o for o in fn(*arrays))
    return kernel


def _step(regs, fn, ins, outs):
    if len(outs) == 1:
        o = outs[0]
        if len(ins) == 0:
            def step():
                regs[o] = fn()
        elif len(ins) == 1:
            a = ins[0]

            def step():
                regs[o] = fn(regs[a])
        elif len(ins) == 2:
            a, b = ins

            def step():
                regs[o] = fn(regs[a], regs[b])
        else:
            def step():
                regs[o] = fn(*[regs[i] for i in ins])
    elif len(outs) == 0:
        def step():
            fn(*[regs[i] for i in ins])
    else:
        def step():
            res = fn(*[regs[i] for i in ins])
            for o, v in zip(outs, res):
                regs[o] = v
    return step


def _rows_batchable(op, local, xp):
    """Whether the op's pieces on this process's CPU devices may be computed by one call on the whole value: every
    device of the placement is here, the op is a plain kernel, and it reads S(0) pieces or broadcast copies and
    produces S(0) pieces — a signature that says the rows of the result are the pieces' results stacked."""

    d = op.defn
    return (xp is np and len(local) > 1 and len(local) == op.placement.parallel_num and d.kernel is not None
            and d.build is None and not d.in_place and d.role == "compute" and op.outputs
            and all(s == S.S(0) for s in op.sbp_out) and all(s in (S.S(0), S.B) for s in op.sbp_in)
            and S.S(0) in op.sbp_in)


def _batched_step(regs, whole_fn, per_device, ins, split, outs, rows):
    """One kernel call for every device of a batchable op (`_rows_batchable`), when each S(0) input's pieces are
    consecutive row blocks of one array (a fed batch, an earlier batched step's output): the whole input goes in,
    and the output's rows are handed back to the devices as views. Else the devices' own steps run.

    `ins`/`outs`: per input/output, its registers by device; `split`: per input, whether it is S(0) (else device
    0's broadcast copy is read); `rows`: per output, each device's (start, stop)."""
    def step():
        args = []
        for regs_of, is_split in zip(ins, split):
            if is_split:
                whole = rows_of_one([regs[r] for r in regs_of])
                if whole is None:
                    for device_step in per_device:
                        device_step()
                    return
                args.append(whole)
            else:
                args.append(regs[regs_of[0]])
        result = whole_fn(*args)
        for regs_of, ranges, value in zip(outs, rows, result if len(outs) > 1 else (result,)):
            for r, (start, stop) in zip(regs_of, ranges):
                regs[r] = value[start:stop]
    return step


def _releasing(plan, step, dead):
    regs = plan.regs

    def releasing_step():
        step()
        if plan.release:
            for r in dead:
                regs[r] = None
    return releasing_step


def _collective_step(regs, fn, ins, outs):
    """Collectives take every local input piece and return a tuple with every local output piece."""
    def step():
        res = fn(*[regs[i] for i in ins])
        for o, v in zip(outs, res or ()):
            regs[o] = v
    return step


class Plan:
    """Registers and steps of one job on this process's devices.

    `release` (class default True; set False on a plan or on the class) keeps every register after a call, to
    inspect them (tests, benchmarks).

    `rt` tells which devices are local (`local_indices(placement)`) and their array module (`xp(placement)`);
    `session` is handed to the ops' builders (DeviceSlot.session). From the runtime:
    `collective_fn(op) -> f(*all local input pieces) -> tuple of all local output pieces`, and
    `fetch_fn(blob, sbp) -> f(list of local pieces) -> the fetched value`.
    """

    release = True

    def __init__(self, job, rt, session, collective_fn, fetch_fn, one_device=False):
        self.job, self.session = job, session
        self.one_device = one_device  # every op on one logical device (legacy eager mode)
        self._local = (lambda placement: [0]) if one_device else rt.local_indices
        self.regs = []
        self.slot = {}  # (blob key, device index) -> register
        self.steps = []
        self.step_ops = []  # op of each step, for error messages
        self.kernel_calls = []  # (kernel, input registers) of each step, None for fetches: lets benchmarks time kernels alone
        self.reads = []  # registers each step reads (liveness)
        self.writes = []  # registers each step writes
        self.fetch_regs = [None] * len(job.output_blobs)  # per job output: the registers its fetch reads
        self.released = []  # registers released after each step
        self.var_slots = []  # (register, spec, device index) bound at bind()
        self.input_slots = []  # per flat input: (op, [(device index, register)])
        self.entry_blobs = []  # blobs read but made outside the job, fed first (their producers lead input_slots)
        self.results = [None] * len(job.output_blobs)  # written by the fetch steps
        self._rt, self._collective_fn, self._fetch_fn = rt, collective_fn, fetch_fn
        self._first_optimizer_step = None
        self._held = {}  # output index -> (converter, device pieces) awaiting the step's one transfer down
        self._download_step = None
        # per-call scalars on devices (learning rates, dropout keys): uploaded by the executable before each run
        self.scalars = step_scalars.PlanScalars()
        for op in job.ops:
            for y in op.outputs:
                for i in self._local(op.placement):
                    self.slot[(y.key(), i)] = self._new_reg()
        # blobs read but made outside the job (an op of a legacy eager job, compiled alone) are fed like inputs
        for op in job.ops:
            for x in op.inputs:
                local = self._local(x.op.placement)
                if local and (x.key(), local[0]) not in self.slot:
                    slots = []
                    for i in local:
                        self.slot[(x.key(), i)] = reg = self._new_reg()
                        slots.append((i, reg))
                    self.input_slots.append((x.op, slots))
                    self.entry_blobs.append(x)
        out_keys = {}
        for k, (blob, kind) in enumerate(job.output_blobs):
            out_keys.setdefault(blob.key(), []).append(k)
        with step_scalars.building(self.scalars):
            for op in job.ops:
                self._build_op(op)
                for y in op.outputs:
                    for k in out_keys.get(y.key(), ()):
                        self._add_fetch(k, y, op)
        # where the optimizer section starts (variable fetches were inserted in front): gradient accumulation
        # runs the steps before it once per micro-batch
        first = self._first_optimizer_step
        self.optimizer_start = self.steps.index(first) if first is not None else len(self.steps)
        if self._download_step is not None:
            # the held results come down at the step's end: after the update with one micro-batch, else at the end
            # of each micro-batch's forward and backward (the executable reads results after those)
            at = len(self.steps) if job.micro_batches == 1 else self.optimizer_start
            self.steps.insert(at, self._download_step)
            self.step_ops.insert(at, self.step_ops[at - 1] if at else job.ops[0])
            self.kernel_calls.insert(at, None)
            self.writes.insert(at, ())
            self.reads.insert(at, ())
            if at <= self.optimizer_start:
                self.optimizer_start += 1
        self._release_after_last_use()

    def _release_after_last_use(self):
        """Liveness: wraps each step that is the last reader of some registers so that it releases them."""
        keep = {reg for reg, _, _ in self.var_slots}
        last = {}
        for k, regs in enumerate(self.reads):
            for r in regs:
                last[r] = k
        dead = [[] for _ in self.steps]
        for r, k in last.items():
            if r not in keep:
                dead[k].append(r)
        self.released = [tuple(d) for d in dead]
        for k, d in enumerate(self.released):
            if d:
                self.steps[k] = _releasing(self, self.steps[k], d)

    def _new_reg(self):
        self.regs.append(None)
        return len(self.regs) - 1

    def _build_op(self, op):
        rt = self._rt
        local = self._local(op.placement)
        if op.defn.role == "input":
            self.input_slots.append((op, [(i, self.slot[(op.outputs[0].key(), i)]) for i in local]))
            return
        if op.defn.role == "variable":
            spec = op.attrs["spec"]
            for i in local:
                self.var_slots.append((self.slot[(op.outputs[0].key(), i)], spec, i))
            return
        if op.defn.collective:
            ins = []
            for x in op.inputs:
                ins.extend(self.slot[(x.key(), i)] for i in self._local(x.op.placement))
            outs = [self.slot[(y.key(), i)] for y in op.outputs for i in local]
            fn = self._collective_fn(op)
            if op.defn.in_place and not op.outputs:  # LAMB/LARS's update of bfloat16 variables
                written = [k for k, x in enumerate(op.inputs) if x.meta.dtype is dtypes.bfloat16]
                counts = [len(self._local(x.op.placement)) for x in op.inputs]
                if written:
                    fn = _bfloat16_in_place_pieces(fn, written, counts, rt.xp(op.placement))
            self._add_step(_collective_step(self.regs, fn, ins, outs), op, (fn, ins), ins, outs)
            return
        xp = rt.xp(op.placement)
        if op.defn.in_place and all(shares_replicas(op.placement, s) for s in op.sbp_in):
            # an in-place update of broadcast variables, whose replicas on this process are one array: once
            local = local[:1]
        if _rows_batchable(op, local, xp):
            self._add_batched(op, local, xp)
            return
        for i in local:
            fn, ins, outs = self._device_call(op, i, xp)
            self._add_step(_step(self.regs, fn, ins, outs), op, (fn, ins), ins, outs)

    def _device_call(self, op, i, xp):
        with self._on_device(op.placement, i, xp):  # (what the builder allocates lands on the device's GPU)
            fn = device_fn(op, DeviceSlot(op, i, xp, self.session, one_device=self.one_device))
        if any(not y.shape for y in op.outputs):
            fn = _zero_d(fn, len(op.outputs))
        fn = self._on_its_gpu(op.placement, i, xp, fn)
        return fn, [self.slot[(x.key(), i)] for x in op.inputs], [self.slot[(y.key(), i)] for y in op.outputs]

    def _on_device(self, placement, i, xp):
        rt = self._rt
        if xp is np or self.one_device or not hasattr(rt, "on_device"):
            return contextlib.nullcontext()
        return rt.on_device(placement, i)

    def _on_its_gpu(self, placement, i, xp, fn):
        """`fn` run with device i's GPU current, where that is not the process's home GPU (several GPUs driven by
        one process); `fn` itself otherwise (one GPU per process: nothing to switch)."""
        rt = self._rt
        if xp is np or self.one_device or not hasattr(rt, "gpu_of"):
            return fn
        if rt.gpu_of(placement, i) == rt.gpus.select_home(xp):
            return fn

        def on_its_gpu(*arrays):
            with rt.on_device(placement, i):
                return fn(*arrays)
        return on_its_gpu

    def _add_batched(self, op, local, xp):
        per_device = [_step(self.regs, *self._device_call(op, i, xp)) for i in local]
        whole_fn = device_fn(op, DeviceSlot(op, 0, xp, self.session, whole=True))
        ins = [[self.slot[(x.key(), i)] for i in local] for x in op.inputs]
        outs = [[self.slot[(y.key(), i)] for i in local] for y in op.outputs]
        n, rows = len(local), []
        for y in op.outputs:
            sizes = [S.local_shape(y.shape, S.S(0), i, n)[0] for i in local]
            starts = [sum(sizes[:k]) for k in range(n)]
            rows.append([(a, a + size) for a, size in zip(starts, sizes)])
        step = _batched_step(self.regs, whole_fn, per_device, ins, [s == S.S(0) for s in op.sbp_in], outs, rows)
        flat = [r for regs_of in ins for r in regs_of]
        self._add_step(step, op, (lambda *pieces: step(), []), flat, [r for regs_of in outs for r in regs_of])

    def _add_step(self, step, op, call=None, reads=(), writes=()):
        self.writes.append(tuple(writes))
        self.steps.append(step)
        self.step_ops.append(op)
        self.kernel_calls.append(call)
        self.reads.append(tuple(reads))
        if op.section == "optimizer" and self._first_optimizer_step is None:
            self._first_optimizer_step = step

    def _add_fetch(self, k, blob, op):
        regs_of = [self.slot[(blob.key(), i)] for i in self._local(op.placement)]
        self.fetch_regs[k] = regs_of
        convert = self._fetch_fn(blob, op.sbp_out[blob.index])
        regs, results = self.regs, self.results
        if getattr(convert, "to_host", False):
            # host results of device pieces wait for the step's end (`_add_download`): one transfer for them all
            self._add_held_fetch(k, regs_of, op, convert)
            return

        def fetch():
            results[k] = convert([regs[r] for r in regs_of])

        if op.defn.role == "variable":
            # a variable's value is fetched before this call's update, as legacy train jobs return it
            self._insert_first(fetch, op, regs_of)
        else:
            self._add_step(fetch, op, reads=regs_of)

    def _insert_first(self, step, op, reads):
        self.steps.insert(0, step)
        self.step_ops.insert(0, op)
        self.kernel_calls.insert(0, None)
        self.writes.insert(0, ())
        self.reads.insert(0, tuple(reads))

    def _add_held_fetch(self, k, regs_of, op, convert):
        """A fetch whose converter brings the value to the host. Host pieces convert where they are made, as
        before; device pieces are held (a device copy where a piece shares a variable's storage, which the update
        would change) and converted at the step's end, after ONE transfer down of every held piece and the
        step's pending device checks (`_download`): the step's only device -> host synchronisation."""
        regs, results, held = self.regs, self.results, self._held

        def hold():
            pieces = [regs[r] for r in regs_of]
            if not any(devices.is_device_array(p) for p in pieces):
                results[k] = convert(pieces)
                return
            variables = [regs[r] for r, _, _ in self.var_slots]
            held[k] = (convert, [_unaliased(p, variables) for p in pieces])

        if op.defn.role == "variable":
            self._insert_first(hold, op, regs_of)
        else:
            self._add_step(hold, op, reads=regs_of)
        if self._download_step is None:
            self._download_step = self._download
            self._download_at_end = True

    def _download(self):
        held, results = self._held, self.results
        if not held:
            return
        order = sorted(held)
        pending = checks.take_pending()
        flat = [p for k in order for p in held[k][1]]
        host = devices.to_host_all(flat + checks.device_arrays(pending))
        checks.put_back(pending, host[len(flat):])
        at = 0
        for k in order:
            convert, pieces = held[k]
            results[k] = convert(host[at:at + len(pieces)])
            at += len(pieces)
        held.clear()


def _unaliased(piece, variables):
    """`piece`, or a device copy of it where it shares memory with a variable (a view of one)."""
    if not devices.is_device_array(piece):
        return piece
    xp = devices.array_module("gpu")
    if any(devices.is_device_array(v) and xp.may_share_memory(piece, v) for v in variables):
        return piece.copy()
    return piece
