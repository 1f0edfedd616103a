"""A compiled job: a flat register file and a flat list of steps, built once per session.

Each (blob, device) gets a register. An ordinary op becomes one step per local device (a closure calling its
kernel); a boxing or watch op becomes one step over all its local pieces. A call feeds the input registers, runs
the steps, and converts the fetched outputs: O(inputs + outputs) Python work plus the kernels.
"""
import functools

import numpy as np

from oneflow_compat.ir import sbp as S
from oneflow_compat.framework import signature
from oneflow_compat.runtime import results
from oneflow_compat.runtime.variables import shares_replicas


class DeviceSlot:
    """What an op's builder knows about one device it runs on."""

    __slots__ = ("index", "parallel_num", "placement", "xp", "in_shapes", "out_shapes", "sbp_in", "sbp_out",
                 "session", "job")

    def __init__(self, op, index, xp, session):
        n = op.placement.parallel_num
        self.index, self.parallel_num, self.placement, self.xp = index, n, op.placement, xp
        self.sbp_in, self.sbp_out = op.sbp_in, op.sbp_out
        self.in_shapes = [S.local_shape(x.shape, s, index, n) for x, s in zip(op.inputs, op.sbp_in)]
        self.out_shapes = [S.local_shape(y.shape, s, index, n) for y, s in zip(op.outputs, op.sbp_out)]
        self.session, self.job = session, op.job


def device_fn(op, dev):
    d = op.defn
    if d.build is not None:
        return d.build(op, dev)
    attrs = d.kernel_attrs(op) if d.kernel_attrs is not None else {}
    if d.local_attrs is not None:
        attrs = dict(attrs, **d.local_attrs(op, dev))
    return functools.partial(d.kernel, dev.xp, **attrs) if attrs else functools.partial(d.kernel, dev.xp)


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


def _collective_step(regs, fn, ins, outs):
    """Collectives take every local input piece and return a tuple with every local output piece."""
    def step():
        res = fn(*[regs[i] for i in ins])
        for o, v in zip(outs, res or ()):
            regs[o] = v
    return step


class CompiledJob:
    def __init__(self, session, job):
        self.session, self.job = session, job
        rt = session.runtime
        self.regs = []
        self.slot = {}  # (blob key, device index) -> register
        self.steps = []
        self.step_ops = []  # op of each step, for error messages
        self.calls = []  # (kernel, input registers) of each step, None for fetches: lets benchmarks time kernels alone
        self.var_slots = []  # (register, spec, device index) bound at bind()
        self.input_slots = []  # per flat input: (op, [(device index, register)])
        self._feeders = {}  # input op name -> function writing a fed value into its registers
        self._first_optimizer_step = None
        from oneflow_compat.framework.trace import micro_batches

        self._micro_batches = micro_batches(job)
        for op in job.ops:
            for y in op.outputs:
                for i in rt.local_indices(op.placement):
                    self.slot[(y.key(), i)] = self._new_reg()
        out_keys = {}
        for k, (blob, kind) in enumerate(job.output_blobs):
            out_keys.setdefault(blob.key(), []).append(k)
        self.results = [None] * len(job.output_blobs)
        for op in job.ops:
            self._build_op(op, rt)
            for y in op.outputs:
                for k in out_keys.get(y.key(), ()):
                    self._add_fetch(k, y, op)

    def _new_reg(self):
        self.regs.append(None)
        return len(self.regs) - 1

    def _build_op(self, op, rt):
        local = rt.local_indices(op.placement)
        if op.type == "input":
            slots = [(i, self.slot[(op.outputs[0].key(), i)]) for i in local]
            self.input_slots.append((op, slots))
            self._feeders[op.name] = self._make_feeder(op, slots)
            return
        if op.type == "variable":
            spec = op.attrs["spec"]
            for i in local:
                self.var_slots.append((self.slot[(op.outputs[0].key(), i)], spec, i))
            return
        if op.defn.collective:
            ins = []
            for x in op.inputs:
                ins.extend(self.slot[(x.key(), i)] for i in rt.local_indices(x.op.placement))
            outs = [self.slot[(y.key(), i)] for y in op.outputs for i in local]
            fn = op.defn.build_collective(op, self.session)
            self._add_step(_collective_step(self.regs, fn, ins, outs), op, (fn, ins))
            return
        xp = rt.xp(op.placement)
        if op.defn.stateful and all(shares_replicas(op.placement, s) for s in op.sbp_in):
            # an in-place update of broadcast variables, whose replicas on this process are one array: once
            local = local[:1]
        for i in local:
            dev = DeviceSlot(op, i, xp, self.session)
            fn = device_fn(op, dev)
            ins = [self.slot[(x.key(), i)] for x in op.inputs]
            outs = [self.slot[(y.key(), i)] for y in op.outputs]
            self._add_step(_step(self.regs, fn, ins, outs), op, (fn, ins))

    def _add_step(self, step, op, call=None):
        self.steps.append(step)
        self.step_ops.append(op)
        self.calls.append(call)
        if op.section == "optimizer" and self._first_optimizer_step is None:
            self._first_optimizer_step = step

    def _add_fetch(self, k, blob, op):
        rt = self.session.runtime
        pl = op.placement
        regs_of = [self.slot[(blob.key(), i)] for i in rt.local_indices(pl)]
        sbp = op.sbp_out[blob.index]
        regs, results = self.regs, self.results
        if sbp == S.M:
            def fetch():
                results[k] = results_mod_list(rt, [regs[r] for r in regs_of], pl)
        else:
            shape, dtype = blob.shape, blob.dtype.np

            def fetch():
                shards = dict(zip(rt.local_indices(pl), [regs[r] for r in regs_of]))
                results[k] = rt.assemble(shards, shape, dtype, pl, sbp)
        if op.type == "variable":
            # a variable's value is fetched before this call's update, as legacy train jobs return it
            self.steps.insert(0, fetch)
            self.step_ops.insert(0, op)
            self.calls.insert(0, None)
        else:
            self._add_step(fetch, op)

    # --- runtime ------------------------------------------------------------------------------------------
    def bind(self):
        for reg, spec, i in self.var_slots:
            self.regs[reg] = spec.shards[i]

    def feed(self, args, jf, check_shapes=True):
        # check every argument first: a rejected call changes nothing
        flat_ops = iter(self.input_slots)
        checked = []
        for spec, value in zip(jf.params, args):
            ops = [next(flat_ops) for _ in spec.flat()]
            if check_shapes:
                ndev = ops[0][0].placement.parallel_num
                checked.extend(zip(ops, signature.check_feed(jf.name, spec, value, ndev)))
            else:
                checked.extend(zip(ops, value if spec.tuple_of is not None else [value]))
        rt = self.session.runtime
        if rt.comm.size > 1:
            from oneflow_compat.runtime import distributed

            checked = [((op, slots), _map_arrays(lambda a: distributed.feed_from_rank0(rt, a), value))
                       for (op, slots), value in checked]
        for (op, _), value in checked:
            self._feeders[op.name](value)

    def _make_feeder(self, op, slots):
        """Writes one fed value into the input's registers: whole, per device (mirrored), or sliced (split)."""
        regs, sbp, n, pl = self.regs, op.sbp_out[0], op.placement.parallel_num, op.placement
        to_dev = self.session.runtime.to_device
        if sbp is S.M:
            def feed(value):
                for i, r in slots:
                    regs[r] = to_dev(value[i], pl)
        elif n == 1 or sbp is S.B:
            def feed(value):
                for _, r in slots:
                    regs[r] = to_dev(value, pl)
        else:
            def feed(value):
                for i, r in slots:
                    regs[r] = to_dev(np.ascontiguousarray(value[S.local_slices(value.shape, sbp, i, n)]), pl)
        return feed

    def run(self, start=0, stop=None):
        ops = self.step_ops
        steps = self.steps if start == 0 and stop is None else self.steps[start:stop]
        k = start
        try:
            for k, step in enumerate(steps, start):
                step()
        except Exception as e:
            op = ops[k]
            if hasattr(e, "add_note"):
                e.add_note("(while running op '%s' of type '%s' in job '%s')" % (op.name, op.type, self.job.name))
            raise

    def call(self, args, jf):
        if self._micro_batches > 1:
            return self._call_accumulating(args, jf, self._micro_batches)
        self.feed(args, jf)
        self.run()
        return results.convert(self, jf)

    def _call_accumulating(self, args, jf, k):
        """num_gradient_accumulation_steps(k): the batch runs as k micro-batches through forward and backward,
        their raw gradients are summed, and the optimizer section runs once (equal to the full batch)."""
        for spec, value in zip(jf.params, args):  # full-batch checks first: a rejected call changes nothing
            signature.check_feed(jf.name, spec, value, 1)
        split = self.steps.index(self._first_optimizer_step) if self._first_optimizer_step else len(self.steps)
        grad_regs = [self.slot[(g.key(), i)] for g in self.job.raw_grads
                     for i in self.session.runtime.local_indices(g.op.placement)]
        acc, outs = {}, []
        for m in range(k):
            micro = [_micro_slice(spec, v, m, k) for spec, v in zip(jf.params, args)]
            self.feed(micro, jf, check_shapes=False)
            self.run(0, split)
            for r in grad_regs:
                acc[r] = self.regs[r].copy() if m == 0 else acc[r] + self.regs[r]
            outs.append(list(self.results))
        for r in grad_regs:
            self.regs[r] = acc[r]
        self.run(split, len(self.steps))
        self.results[:] = [_join([o[j] for o in outs]) for j in range(len(self.results))]
        return results.convert(self, jf)


def results_mod_list(rt, pieces, placement):
    from oneflow_compat.backend import devices

    local = [np.asarray(devices.to_host(p)) for p in pieces]
    if len(rt.local_indices(placement)) == placement.parallel_num:
        return local
    from oneflow_compat.runtime import distributed

    return distributed.gather_mirrored(rt, local, placement)


def _micro_slice(spec, value, m, k):
    def piece(ph, v):
        if ph.kind != "numpy":
            return v
        n = v.shape[0] // k
        return np.ascontiguousarray(v[m * n:(m + 1) * n], dtype=ph.dtype.np)

    if spec.tuple_of is not None:
        return [piece(ph, v) for ph, v in zip(spec.tuple_of, value)]
    return piece(spec.placeholder, value)


def _join(values):
    if isinstance(values[0], np.ndarray):
        return np.concatenate(values, axis=0)
    return values[-1]


def _map_arrays(fn, value):
    if isinstance(value, list):
        return [_map_arrays(fn, v) for v in value]
    return fn(value)
