"""The executable: a compiled job made runnable — the one runner of legacy job functions (`runtime/executor.py`),
nn.Graph (`runtime/graph_runtime.py`), eager ops on global and local tensors (`runtime/global_eager.py`) and legacy
eager mode (`framework/eager.py`).

It owns the job's plan (`runtime/plan.py`: registers and steps), and does what a call does with it, the same way
for every path:
* feeding: each input's pieces (one per device of this process) are written into its registers, whole or as
  micro-batch m of n (`feed_pieces`; the legacy path slices whole arrays itself and writes them the same way);
* variables: bound to their storage once (`bind_variables`), or re-read before every call where the storage is an
  eager tensor that may have been given a new array (`refresh_variables`, nn.Graph);
* the step loop (`run`), whose errors get one note naming the op, its type and the job;
* fetching: the plan's fetch steps convert each output's pieces (the caller chooses how: assembled, copied, as
  they are) into `results`;
* micro-batches (`call`): with n > 1 the steps before the optimizer section run once per micro-batch, the raw
  gradients are summed in micro-batch order, then the optimizer section runs once (equal to the whole batch);
  with pipeline stages (`copies` = n plan copies), the GPipe schedule: every micro-batch's forward, then every
  backward, each in its own register file, then one update — one total order on every rank, so the stages'
  transfers meet in the same order everywhere and the numbers are those of the sequential schedule;
* after a call (`finish`) the input registers and results are dropped, so nothing stays alive between calls.

Also here, written once: the collective functions a plan calls (`collective_fn`), the check that every rank
compiled the same plans (`check_same_plans_across_ranks`), and the malloc tuning of the CPU runtime.
"""
import ctypes
import os

from oneflow_compat.kernels import checks
from oneflow_compat.passes.pipeline import fingerprint
from oneflow_compat.runtime import activity, boxing, buckets, cuda_graph, staged_feed, watch
from oneflow_compat.runtime.plan import Plan

# collective functions that need the runtime itself, by the `runtime_hook` an op declares; the other collectives
# bring their `build_collective`. "boxing": the transition table's executors (runtime/boxing.py)
RUNTIME_HOOKS = {"watch": watch.make_watch_fn, "boxing": boxing.hook}


def collective_fn(op, session, name_op=True, hooks=RUNTIME_HOOKS, buckets_of_plan=None, call_ends=None):
    """The function op's collective step calls. `name_op`: reports of a collective that waits name the op of the
    plan that issued it (jobs and graphs; an eager op is named by its own frame). `hooks`: the functions of the
    `runtime_hook`s (legacy eager mode has its own watch). `buckets_of_plan`: the gradient buckets of the plan
    being built, shared by their members (`runtime/buckets.py`). `call_ends`: a list that receives the function's
    `discard_uncommitted` (see `Executable.finish`), where it has one."""
    if "bucket" in op.attrs and buckets_of_plan is not None:
        fn = buckets.member_fn(op, session, buckets_of_plan)
    else:
        hook = op.defn.runtime_hook
        build = hooks[hook] if hook is not None else op.defn.build_collective
        fn = build(op, session)
    discard = getattr(fn, "discard_uncommitted", None)
    if discard is not None and call_ends is not None:
        call_ends.append(discard)
    return activity.issued_by(op.name, fn) if name_op else fn


def check_same_plans_across_ranks(comm, jobs, *extra):
    """Every rank compiled the same plans: `jobs` = [(what, job)], compared op by op (an error names the first op
    that differs and what each rank has there); `extra` = (what, items) compared too (a job list)."""
    if comm.size == 1:
        return
    for what, job in jobs:
        comm.check_same(fingerprint(job), what, "op")
    for what, items in extra:
        comm.check_same(items, what)


class Executable:
    """A compiled job with its plan(s); see the module docstring.

    `fetch(blob, sbp) -> f(pieces)` converts an output's local pieces into what `results` holds. `copies`: plan
    copies, one per micro-batch, for the GPipe schedule (1: micro-batches run one after the other in one plan).
    `one_device`: every op on one logical device (legacy eager mode). `name_ops`: collectives name their op in
    reports (see `collective_fn`); `hooks`: the functions of ops' runtime hooks (default `RUNTIME_HOOKS`)."""

    def __init__(self, job, session, fetch, copies=1, one_device=False, name_ops=True, hooks=RUNTIME_HOOKS):
        rt = session.runtime
        self.job, self.session = job, session
        self.micro_batches = job.micro_batches
        self.pipelined = copies > 1

        self.plans = []
        # what a call's steps keep outside its registers until a later step of the same call commits it (the
        # row gradients one_embedding's gradient op sums for the optimizer phase's update): dropped at the end of
        # every call, so that a call that fails or is interrupted between them leaves nothing for the next one
        self.call_ends = []
        self.bucket_runs = []  # per plan copy: its gradient buckets by number (`buckets._BucketRun`)
        for _ in range(copies):
            shared = {}  # each plan copy has its own gradient buckets (its own registers)
            self.bucket_runs.append(shared)

            def collective(op, shared=shared):
                return collective_fn(op, session, name_ops, hooks, shared, self.call_ends)

            self.plans.append(Plan(job, rt, session, collective, fetch, one_device=one_device))
        plan = self.plan = self.plans[0]
        self.in_regs = [[[reg for _, reg in slots] for _, slots in p.input_slots] for p in self.plans]
        # the raw gradients summed over micro-batches (fusion keeps them when there are several)
        local = (lambda pl: [0]) if one_device else rt.local_indices
        self.grad_regs = [plan.slot[(g.key(), i)] for g in job.raw_grads for i in local(g.op.placement)] \
            if self.micro_batches > 1 else []
        ops = plan.step_ops
        self.backward_start = next((k for k, op in enumerate(ops) if op.section != "forward"), len(ops))
        if self.pipelined and any(op.section == "forward" for op in ops[self.backward_start:plan.optimizer_start]):
            raise AssertionError("job '%s': a forward step follows a backward step in the plan" % job.name)
        self._dynamic_vars = []  # (registers, register, getter) re-read before every call
        # ONEFLOW_COMPAT_CUDA_GRAPH=1: the whole step captured once and replayed (runtime/cuda_graph.py)
        self.captured = cuda_graph.for_executable(self) if not one_device else None
        # an uncaptured call on one GPU: its fed arrays up in one copy from pinned memory (runtime/staged_feed.py)
        self.staged = staged_feed.for_executable(self, one_device) if self.captured is None else None
        self._fed_registers = [r for slots in self.in_regs[0] for r in slots]

    # --- variables -------------------------------------------------------------------------------------------------
    def bind_variables(self, getters=None):
        """Binds every variable register: to `getters[name]()` before every call where a getter is given (storage
        that may change, e.g. an eager tensor's piece), else once to the variable's own pieces."""
        getters = getters or {}
        self._dynamic_vars = []
        for plan in self.plans:
            for reg, spec, i in plan.var_slots:
                getter = getters.get(spec.name)
                if getter is None:
                    plan.regs[reg] = spec.shards[i]
                else:
                    self._dynamic_vars.append((plan.regs, reg, getter))

    def refresh_variables(self):
        for regs, reg, getter in self._dynamic_vars:
            regs[reg] = getter()

    # --- feeding -------------------------------------------------------------------------------------------------
    def feed_pieces(self, copy, pieces_per_input, micro=None):
        """Writes each input's local pieces into plan copy `copy`'s registers; `micro` = (m, n): micro-batch m of
        n, each piece cut along dim 0 (OneFlow's `unpack`, per local piece)."""
        regs = self.plans[copy].regs
        for slot_regs, pieces in zip(self.in_regs[copy], pieces_per_input):
            if micro is None:
                for r, piece in zip(slot_regs, pieces):
                    regs[r] = piece
            else:
                m, n = micro
                for r, piece in zip(slot_regs, pieces):
                    rows = piece.shape[0] // n
                    regs[r] = piece[m * rows:(m + 1) * rows]

    # --- running ---------------------------------------------------------------------------------------------------
    def run(self, plan=None, start=0, stop=None):
        """Runs the steps [start, stop) of `plan` (default: the first copy); an error gets a note naming the op."""
        plan = self.plan if plan is None else plan
        steps = plan.steps
        stop = len(steps) if stop is None else stop
        k = start
        try:
            for k in range(start, stop):
                steps[k]()
        except Exception as e:
            op = plan.step_ops[k]
            if hasattr(e, "add_note"):
                e.add_note("(while running op '%s' of type '%s' in job '%s')" % (op.name, op.type, self.job.name))
            raise

    @staticmethod
    def _note_of_step(frame):
        """The note of an error raised in `run`'s frame: for a device check made there (kernels/checks.py)."""
        names = frame.f_locals
        plan, k, exe = names.get("plan"), names.get("k"), names.get("self")
        if plan is None or k is None or exe is None:
            return None
        op = plan.step_ops[k]
        return "(while running op '%s' of type '%s' in job '%s')" % (op.name, op.type, exe.job.name)

    def call(self, feed):
        """One call: `feed(copy, micro)` writes the inputs (micro = (m, n), or None for the whole batch) into plan
        copy `copy`; runs the steps (by micro-batches when the job has several); returns [micro-batch][output] of
        fetched results. The caller calls `finish()` when it has read them."""
        n = self.micro_batches
        if self.captured is not None and self.captured.usable():
            return self.captured.call(feed)
        self.refresh_variables()
        if n == 1:
            if self.staged is not None:
                with self.session.runtime.host_feeds():
                    feed(0, None)
                self.staged.upload(self.plan.regs, self._fed_registers)
            else:
                feed(0, None)
            self.plan.scalars.upload()
            self.run()
            self.plan.scalars.finish_call()
            return [list(self.plan.results)]
        if self.pipelined:
            return self._gpipe(feed, n)
        return self._accumulating(feed, n)

    def _accumulating(self, feed, n):
        """Micro-batch after micro-batch through forward and backward in one register file; gradients summed."""
        plan = self.plan
        regs, split = plan.regs, plan.optimizer_start
        acc, outs = {}, []
        for m in range(n):
            feed(0, (m, n))
            plan.scalars.upload()  # each micro-batch its own dropout keys (the rates are the call's)
            self.run(plan, 0, split)
            for r in self.grad_regs:
                if m == 0:
                    acc[r] = regs[r].copy()
                else:
                    acc[r] += regs[r]
            outs.append(list(plan.results))
        for r in self.grad_regs:
            regs[r] = acc[r]
        self.run(plan, split, len(plan.steps))
        plan.scalars.finish_call()
        return outs

    def _gpipe(self, feed, n):
        """GPipe: every micro-batch's forward, then every micro-batch's backward, each in its own plan copy, then
        the gradients summed in micro-batch order and one update."""
        plans = self.plans
        first, split = self.backward_start, self.plan.optimizer_start
        for m in range(n):
            feed(m, (m, n))
        for plan in plans:
            plan.scalars.upload()
        for plan in plans:
            self.run(plan, 0, first)
        for plan in plans:
            self.run(plan, first, split)
        regs = self.plan.regs
        for r in self.grad_regs:
            acc = regs[r].copy()
            for plan in plans[1:]:
                acc += plan.regs[r]
            regs[r] = acc
        outs = [list(plan.results) for plan in plans]
        self.run(self.plan, split, len(self.plan.steps))
        self.plan.scalars.finish_call()  # (the update, the counter's increment with it, ran in copy 0 alone)
        return outs

    def finish(self):
        """Drops the input registers and the results of every plan copy (nothing stays alive between calls), but
        where the plan keeps its registers to be inspected (`Plan.release` False), and discards what the call's steps
        left uncommitted (`call_ends`: after a call that ran to its end there is nothing left; after a failed or
        interrupted one, the partial gradients go as the dense gradients in the registers go, never into the next
        call)."""
        for discard in self.call_ends:
            discard()
        for plan, in_regs in zip(self.plans, self.in_regs):
            plan.results[:] = [None] * len(plan.results)
            plan._held.clear()  # (a call that failed before its end leaves pieces held)
            if not plan.release:
                continue
            regs = plan.regs
            for slot_regs in in_regs:
                for r in slot_regs:
                    regs[r] = None


def keep_freed_memory():
    """Ask glibc's malloc to keep freed memory for reuse (once per process): no mmap for large blocks, no trimming.

    A plan releases each register after its last use (`runtime/plan.py`), so every call allocates its activations
    and gradients afresh. glibc serves blocks over 32 MB with mmap and returns them with munmap, so each call would
    fault all of its large arrays in again, page by page (12% of a batch-1000 LeNet step); from the heap, the
    same sizes come back every call from memory already mapped. Peak memory is unchanged: the blocks are reused,
    not added. Skipped off glibc, and with ONEFLOW_COMPAT_MALLOC=system.
    """
    if _MALLOC["tuned"] or os.environ.get("ONEFLOW_COMPAT_MALLOC", "") == "system":
        return
    _MALLOC["tuned"] = True
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    m_trim_threshold, m_mmap_max = -1, -4
    mallopt(m_mmap_max, 0)
    mallopt(m_trim_threshold, 1 << 30)


_MALLOC = {"tuned": False}  # malloc's settings are the process's, once set they stay (not context state)


def straight_line(plan):
    """The plan as one function `run(pieces per input) -> [pieces per output]`, or None where it cannot be one.

    For the plans of eager ops (`runtime/global_eager.py`): a plan without collectives and variables is a straight
    line of kernel calls. Run with registers of its own per call (a local list, not the plan's register file), it
    needs no lock to be called from several threads, and a plan of one kernel call is that call alone (inputs
    passed straight to the kernel, its result straight back)."""
    if plan.var_slots or len(plan.scalars) or any(op.defn.collective for op in plan.step_ops):
        return None
    prog = [(call[0], tuple(call[1]), plan.writes[k]) for k, call in enumerate(plan.kernel_calls)
            if call is not None]
    if any(not call[1] and plan.reads[k] for k, call in enumerate(plan.kernel_calls) if call is not None):
        return None  # a step that reads registers it does not pass to its kernel (a batched step)
    in_regs = [tuple(reg for _, reg in slots) for _, slots in plan.input_slots]
    fetch = [tuple(regs) for regs in plan.fetch_regs]
    if len(prog) == 1 and all(len(r) == 1 for r in in_regs) and len(prog[0][2]) == 1 and \
            all(regs == prog[0][2] for regs in fetch):
        fn, ins, outs = prog[0]
        position = {regs[0]: k for k, regs in enumerate(in_regs)}
        if all(i in position for i in ins):
            order = [position[i] for i in ins]
            n_out = len(fetch)
            if order == list(range(len(in_regs))):
                def run_one(pieces):
                    return [[fn(*[p[0] for p in pieces])]] * n_out
            else:
                def run_one(pieces):
                    return [[fn(*[pieces[k][0] for k in order])]] * n_out
            # the kernel itself, with the input order it takes: callers may call it straight on the pieces
            run_one.kernel, run_one.order = fn, (None if order == list(range(len(in_regs))) else order)
            return run_one
    n_regs = len(plan.regs)

    def run(pieces):
        regs = [None] * n_regs
        for slot_regs, ps in zip(in_regs, pieces):
            for r, p in zip(slot_regs, ps):
                regs[r] = p
        for fn, ins, outs in prog:
            if len(outs) == 1:
                regs[outs[0]] = fn(*[regs[i] for i in ins])
            elif not outs:
                fn(*[regs[i] for i in ins])
            else:
                for o, v in zip(outs, fn(*[regs[i] for i in ins])):
                    regs[o] = v
        return [[regs[r] for r in regs_of] for regs_of in fetch]

    return run


checks.note_frames(Executable.run, Executable._note_of_step)  # a device check names its op as `run`'s errors do
