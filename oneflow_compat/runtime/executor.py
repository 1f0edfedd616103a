"""A call of a legacy job function: what the legacy API adds around the executable (`runtime/executable.py`) —
checking the arguments against the placeholders, the consistent view's rank-0 feed, cutting fed arrays into
device pieces and micro-batches, and converting the fetched outputs into what the return annotation promises.

A call does O(inputs + outputs) Python work plus the kernels: the arguments are checked, written into the input
registers, the steps run, and the fetched outputs are converted.
"""
import numpy as np

from oneflow_compat.framework import signature
from oneflow_compat.kernels import checks
from oneflow_compat.ir import sbp as S
from oneflow_compat.runtime import agreement, distributed, executable, results


class CompiledJob:
    """A compiled legacy job: its executable (`exe`, whose `plan` holds the registers) and its calls."""

    def __init__(self, session, job):
        executable.keep_freed_memory()
        self.session, self.job = session, job
        self.exe = executable.Executable(job, session, self._fetcher)
        self.plan = self.exe.plan
        self._feeders = [self._make_feeder(op, slots) for op, slots in self.plan.input_slots]
        self.calls = 0  # counted at entry, rejected calls included: a rank that skips one is caught below

    def _fetcher(self, blob, sbp):
        rt, pl = self.session.runtime, blob.op.placement
        if sbp == S.M:
            def fetch(pieces):
                return results.gather_mirrored_pieces(rt, pieces, pl)
        else:
            local = rt.local_indices(pl)
            shape, dtype = blob.shape, blob.dtype.np

            def fetch(pieces):
                return rt.assemble(dict(zip(local, pieces)), shape, dtype, pl, sbp)
        fetch.to_host = True  # host results: device pieces come down at the step's end, in one transfer (plan.py)
        return fetch

    def bind(self):
        self.exe.bind_variables()

    def _agree_on_call(self):
        """Under MPI every rank must be in the same call of the same job, from the same thread, before their
        collectives pair up (`agreement`: a call of another thread's turn gives the lock back and runs again)."""
        comm = self.session.runtime.comm
        if comm.size > 1:
            agreement.check_call("job '%s' call #%d" % (self.job.name, self.calls), tuple(range(comm.size)))

    def _checked(self, args, jf, check_shapes=True):
        """[(feeder, value)] per flat input; every argument is checked first, so a rejected call changes nothing
        (and runs no collective)."""
        feeders = iter(self._feeders)
        checked = []
        for spec, value in zip(jf.params, args):
            fs = [next(feeders) for _ in spec.flat()]
            if check_shapes:
                checked.extend(zip(fs, signature.check_feed(jf.name, spec, value, fs[0].parallel_num)))
            else:
                checked.extend(zip(fs, value if spec.tuple_of is not None else [value]))
        return checked

    def _feed(self, checked, copy):
        rt = self.session.runtime
        if rt.comm.size > 1:  # the consistent view's one source of truth: rank 0's arrays
            checked = [(f, _map_arrays(lambda a: distributed.feed_from_rank0(rt, a), value)) for f, value in checked]
        regs = self.exe.plans[copy].regs
        for feeder, value in checked:
            feeder(regs, value)

    def _make_feeder(self, op, slots):
        """Writes one fed value into the input's registers: whole, per device (mirrored), or sliced (split)."""
        sbp, n, pl = op.sbp_out[0], op.placement.parallel_num, op.placement
        to_dev = self.session.runtime.to_device
        if sbp is S.M:
            def feed(regs, value):
                for i, r in slots:
                    regs[r] = to_dev(value[i], pl, i)
        elif n == 1 or sbp is S.B:
            def feed(regs, value):
                for i, r in slots:
                    regs[r] = to_dev(value, pl, i)
        else:
            def feed(regs, value):
                for i, r in slots:
                    regs[r] = to_dev(np.ascontiguousarray(value[S.local_slices(value.shape, sbp, i, n)]), pl, i)
        feed.parallel_num = n
        return feed

    def call(self, args, jf):
        self.calls += 1
        k = self.job.micro_batches
        try:
            if k > 1:  # full-batch checks first: a rejected call changes nothing
                for spec, value in zip(jf.params, args):
                    signature.check_feed(jf.name, spec, value, 1)
            else:
                checked = self._checked(args, jf)
            self._agree_on_call()
        except agreement.TurnOfAnother:
            self.calls -= 1  # not begun: the call runs again in this thread's turn, with the same number
            raise

        def feed(copy, micro):
            if micro is None:
                self._feed(checked, copy)
            else:
                # num_gradient_accumulation_steps(k): the batch runs as k micro-batches of its rows
                m, n = micro
                self._feed(self._checked([_micro_slice(spec, v, m, n) for spec, v in zip(jf.params, args)], jf,
                                         check_shapes=False), copy)

        try:
            outs = self.exe.call(feed)
            values = [_join([o[j] for o in outs]) for j in range(len(self.job.output_blobs))]
        finally:
            self.exe.finish()
        checks.raise_failed()  # the step's device-side checks (kernels/checks.py), read with its results
        return results.convert(self.job, values, jf)


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
    if len(values) == 1:
        return values[0]
    if isinstance(values[0], np.ndarray):
        return np.concatenate(values, axis=0)
    return values[-1]


def _map_arrays(fn, value):
    if isinstance(value, list):
        return [_map_arrays(fn, v) for v in value]
    return fn(value)
