"""Running a compiled job: its plan (`passes/plan.py`) plus feeding the inputs, running the steps, gradient
accumulation and the conversion of fetched values into what the return annotation promises.

A call does O(inputs + outputs) Python work plus the kernels: the arguments are checked, written into the input
registers, the steps run, and the fetched outputs are converted.
"""
import ctypes
import os

import numpy as np

from oneflow_compat.framework import signature
from oneflow_compat.kernels import checks
from oneflow_compat.ir import sbp as S
from oneflow_compat.passes.plan import Plan
from oneflow_compat.runtime import activity, agreement, distributed, results
from oneflow_compat.runtime.hooks import RUNTIME_HOOKS, build_collective  # noqa: F401 (RUNTIME_HOOKS read here)


def collective_fn(op, session):
    return activity.issued_by(op.name, build_collective(op, session))  # reports name the op whose collective waits


def keep_freed_memory():
    """Ask glibc's malloc to keep freed memory for reuse (once per process): no mmap for large blocks, no trimming.

    A plan releases each register after its last use (`passes/plan.py`), so every call allocates its activations
    and gradients afresh. glibc serves blocks over 32 MB with mmap and returns them with munmap, so each call would
    fault all of its large arrays in again, page by page (12% of a batch-1000 LeNet step); from the heap, the
    same sizes come back every call from memory already mapped. Peak memory is unchanged: the blocks are reused,
    not added. Skipped off glibc, and with ONEFLOW_COMPAT_MALLOC=system.
    """
    global _MALLOC_TUNED
    if _MALLOC_TUNED or os.environ.get("ONEFLOW_COMPAT_MALLOC", "") == "system":
        return
    _MALLOC_TUNED = True
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    m_trim_threshold, m_mmap_max = -1, -4
    mallopt(m_mmap_max, 0)
    mallopt(m_trim_threshold, 1 << 30)


_MALLOC_TUNED = False


class CompiledJob(Plan):
    def __init__(self, session, job):
        rt = session.runtime
        keep_freed_memory()
        super().__init__(job, rt, session, lambda op: collective_fn(op, session), self._fetcher)
        self._feeders = {op.name: self._make_feeder(op, slots) for op, slots in self.input_slots}
        self.calls = 0  # counted at entry, rejected calls included: a rank that skips one is caught below

    def _fetcher(self, blob, sbp):
        rt, pl = self.session.runtime, blob.op.placement
        if sbp == S.M:
            return lambda pieces: results.gather_mirrored_pieces(rt, pieces, pl)
        local = rt.local_indices(pl)
        shape, dtype = blob.shape, blob.dtype.np
        return lambda pieces: rt.assemble(dict(zip(local, pieces)), shape, dtype, pl, sbp)

    def bind(self):
        for reg, spec, i in self.var_slots:
            self.regs[reg] = spec.shards[i]

    def _agree_on_call(self):
        """Under MPI every rank must be in the same call of the same job, from the same thread, before their
        collectives pair up (`agreement`: a call of another thread's turn gives the lock back and runs again)."""
        comm = self.session.runtime.comm
        if comm.size > 1:
            text = "job '%s' call #%d" % (self.job.name, self.calls)
            agreement.global_op((agreement.digest(text), text), tuple(range(comm.size)))

    def feed(self, args, jf, check_shapes=True, agree=True):
        # check every argument first: a rejected call changes nothing (and runs no collective)
        flat_ops = iter(self.input_slots)
        checked = []
        for spec, value in zip(jf.params, args):
            ops = [next(flat_ops) for _ in spec.flat()]
            if check_shapes:
                ndev = ops[0][0].placement.parallel_num
                checked.extend(zip(ops, signature.check_feed(jf.name, spec, value, ndev)))
            else:
                checked.extend(zip(ops, value if spec.tuple_of is not None else [value]))
        if agree:
            self._agree_on_call()
        rt = self.session.runtime
        if rt.comm.size > 1:
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
        self.calls += 1
        try:
            if self.job.micro_batches > 1:
                return self._call_accumulating(args, jf, self.job.micro_batches)
            self.feed(args, jf)
        except agreement.TurnOfAnother:
            self.calls -= 1  # not begun: the call runs again in this thread's turn, with the same number
            raise
        self.run()
        checks.raise_failed()  # the step's device-side checks (kernels/checks.py), read with its results
        return results.convert(self, jf)

    def _call_accumulating(self, args, jf, k):
        """num_gradient_accumulation_steps(k): the batch runs as k micro-batches through forward and backward,
        their raw gradients are summed, and the optimizer section runs once (equal to the full batch)."""
        for spec, value in zip(jf.params, args):  # full-batch checks first: a rejected call changes nothing
            signature.check_feed(jf.name, spec, value, 1)
        self._agree_on_call()
        split = self.optimizer_start
        grad_regs = [self.slot[(g.key(), i)] for g in self.job.raw_grads
                     for i in self.session.runtime.local_indices(g.op.placement)]
        acc, outs = {}, []
        for m in range(k):
            micro = [_micro_slice(spec, v, m, k) for spec, v in zip(jf.params, args)]
            self.feed(micro, jf, check_shapes=False, agree=False)
            self.run(0, split)
            for r in grad_regs:
                acc[r] = self.regs[r].copy() if m == 0 else acc[r] + self.regs[r]
            outs.append(list(self.results))
        for r in grad_regs:
            self.regs[r] = acc[r]
        self.run(split, len(self.steps))
        self.results[:] = [_join([o[j] for o in outs]) for j in range(len(self.results))]
        checks.raise_failed()  # the step's device-side checks (kernels/checks.py), read with its results
        return results.convert(self, jf)


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
