"""Gradient buckets: the gradients of a data-parallel step all-reduced in persistent flat buffers, as PyTorch's
DistributedDataParallel does (its Reducer): a fixed order of the gradients, consecutive gradients of one dtype
packed into flat buffers of up to `cap_bytes`, the buffers allocated once and reused at every step, one all-reduce
per buffer instead of one per gradient — and, before them, one agreement check for all of them
(`runtime/agreement.py`) instead of one per gradient.

The runtime API (also what `oneflow.nn.parallel.DistributedDataParallel` builds on):

    buckets = GradBuckets(shapes, np_dtypes, ranks, cap_bytes=25 << 20, per_bucket=None, what=None)
        # once, for a fixed list of gradients (their order is the buckets' order); a bucket holds consecutive
        # entries of one dtype, up to `cap_bytes` (PyTorch's bucket_cap_mb) and `per_bucket` entries (OneFlow's
        # DDP bucket_size); `what` names the all-reduce in reports
    # a whole step at once:
    reduced = buckets.all_reduce(arrays, scale=None)   # every member rank, every step
        # arrays: this rank's gradient of each entry (None: a zero gradient); returns the member-wise sums (times
        # `scale` when given: 1/world for a mean), one array per entry — views into the persistent buffers,
        # valid until the next all-reduce: copy or add them into the gradients
    # or gradients that live in the buckets, reduced as buckets complete during backward (DDP):
    buckets.reset()                  # a backward pass begins
    g = buckets.view(k)              # entry k's slot: its gradient is accumulated there
    buckets.ready(k)                 # entry k is complete: every complete bucket, in order, is all-reduced

Each all-reduce of a whole step, and the first of a pass of `ready`, is a global operation of `agreement` (one
check over `ranks` for the buckets that follow), run in the process-wide turn (`agreement.in_turn`) and named in
reports. On one rank nothing is sent.

`reduce_partial_gradients(items)` is what backward of eager global tensors uses (`runtime/autograd.py`): the
leaves' partial-sum gradients (data parallelism: S(0) activations give P weight gradients) that go to broadcast
leaves on a placement of several ranks are summed through buckets kept in the process context, keyed by the
layouts of the gradients (and the thread), so a training loop reuses the same buffers at every step.
"""
import threading

import numpy as np

from oneflow_compat.ir import sbp as S
from oneflow_compat.runtime import activity, agreement, context

DEFAULT_CAP_BYTES = 25 << 20  # DDP's default bucket_cap_mb = 25


class GradBuckets:
    """Persistent flat buffers for a fixed list of gradients (see the module docstring)."""

    def __init__(self, shapes, np_dtypes, ranks, cap_bytes=DEFAULT_CAP_BYTES, per_bucket=None, what=None):
        self.shapes = [tuple(int(d) for d in s) for s in shapes]
        self.per_bucket = per_bucket
        self.dtypes = [np.dtype(d) for d in np_dtypes]
        self.ranks = tuple(sorted(int(r) for r in ranks))
        self.cap_bytes = cap_bytes
        self.buffers = []  # flat arrays, one per bucket
        self.slots = []  # per entry: (bucket index, start, stop) in its bucket's buffer
        plan = []  # per bucket: [dtype, elements, bytes]
        for shape, dtype in zip(self.shapes, self.dtypes):
            size = int(np.prod(shape, dtype=np.int64))
            nbytes = size * dtype.itemsize
            full = per_bucket is not None and plan and plan[-1][3] >= per_bucket
            if not plan or full or plan[-1][0] != dtype or (plan[-1][2] and plan[-1][2] + nbytes > self.cap_bytes):
                plan.append([dtype, 0, 0, 0])
            bucket = plan[-1]
            bucket[3] += 1
            self.slots.append((len(plan) - 1, bucket[1], bucket[1] + size))
            bucket[1] += size
            bucket[2] += nbytes
        self.buffers = [np.zeros(elements, dtype) for dtype, elements, _, _ in plan]
        self.members = [[k for k, slot in enumerate(self.slots) if slot[0] == b] for b in range(len(plan))]
        self.what = what
        self.reset()
        self.views = [self.buffers[b][a:z].reshape(shape) for (b, a, z), shape in zip(self.slots, self.shapes)]
        self.calls = 0

    # --- gradients that live in the buckets, reduced as their buckets complete (DDP during backward) ---------------
    def view(self, k):
        """The persistent view of entry k's slot (a gradient may live there: DDP's `.grad` is this view)."""
        return self.views[k]

    def reset(self):
        """A new backward pass begins: no entry is complete, no bucket reduced."""
        self._ready = [False] * len(self.shapes)
        self.next_bucket = 0
        self._checked = False

    def ready(self, k):
        """Entry k's gradient (in its view) is complete: all-reduces, in bucket order, every bucket whose entries
        are all complete and every bucket before it was reduced (so every rank issues them in one order); returns
        the numbers of the buckets reduced now. The first all-reduce of a pass is checked across the ranks
        (`agreement`: ranks whose buckets differ fail naming both sides)."""
        self._ready[k] = True
        done = []
        while self.next_bucket < len(self.buffers) and all(self._ready[j] for j in self.members[self.next_bucket]):
            b = self.next_bucket
            agreement.in_turn(self._reduce_in_turn, self.what or "gradient all-reduce of %s" % self.describe(),
                              [self.buffers[b]], not self._checked)
            self._checked = True
            self.next_bucket += 1
            done.append(b)
        return done

    def describe(self):
        return "%d gradient(s) %s in %d bucket(s) of %s bytes over ranks %s" % (
            len(self.shapes), ", ".join("%s %s" % (s, d.name) for s, d in zip(self.shapes, self.dtypes)),
            len(self.buffers), "+".join(str(b.nbytes) for b in self.buffers), list(self.ranks))

    def all_reduce(self, arrays, scale=None, what=None):
        """The member-wise sums of `arrays` (see the module docstring); every member rank calls it."""
        if len(arrays) != len(self.shapes):
            raise ValueError("GradBuckets.all_reduce: %d arrays for %d gradients" % (len(arrays), len(self.shapes)))
        for view, a, shape in zip(self.views, arrays, self.shapes):
            if a is None:
                view[...] = 0
            elif tuple(a.shape) != shape:
                raise ValueError("GradBuckets.all_reduce: a gradient of shape %s for the entry of shape %s"
                                 % (tuple(a.shape), shape))
            else:
                view[...] = a
        text = what or self.what or "gradient all-reduce of %s" % self.describe()
        agreement.in_turn(self._reduce_in_turn, text, self.buffers, True)
        if scale is not None:
            for buf in self.buffers:
                buf *= buf.dtype.type(scale)
        self.calls += 1
        return list(self.views)

    def _reduce_in_turn(self, text, buffers, check):
        comm = activity.installed_comm() or _process_comm()
        if len(self.ranks) < 2 or comm.size == 1:
            return
        with activity.operation(text):
            if check:
                agreement.global_op((agreement.digest(text), text), self.ranks)
            for buf in buffers:
                comm.allreduce_(buf, self.ranks)


def _process_comm():
    from oneflow_compat.comm import world

    comm = world.get_process_comm()
    activity.install(comm)
    return comm


# --- eager global tensors: the partial-sum gradients of broadcast leaves ------------------------------------------
def bucketable(g, layout):
    """Whether gradient `g` going to a leaf laid out as `layout` = (placement, sbp) is summed through buckets: a
    floating partial sum (P) for a broadcast (B) leaf on the same placement of several ranks."""
    pl, sbp = layout
    return (g is not None and g.sbp == S.P and sbp == S.B and g.placement == pl and len(_owners(pl)) > 1
            and g.meta.dtype.is_floating)


def reduce_partial_gradients(items, make_value):
    """`items` = [(gradient Value, (placement, sbp) of its leaf)]: returns the gradients with every one that is a
    partial sum (P) going to a broadcast (B) leaf on the same placement of several ranks replaced by its sum (B),
    reduced together through gradient buckets (one check and one all-reduce per bucket for all of them).
    `make_value(meta, placement, sbp, pieces)` makes a Value (the caller's type)."""
    out = [g for g, _ in items]
    groups = {}
    for k, (g, layout) in enumerate(items):
        if bucketable(g, layout):
            groups.setdefault((layout[0], g.meta.dtype.name), []).append(k)
    if not groups:
        return out
    me = _process_comm().rank
    ctx = context.get()
    for (pl, _), ks in groups.items():
        grads = [items[k][0] for k in ks]
        ranks = _owners(pl)
        if me not in ranks:  # nothing here: a rank outside the placement holds no piece of the sums
            for k, g in zip(ks, grads):
                out[k] = make_value(g.meta, pl, S.B, [])
            continue
        # per thread: threads' backward passes run side by side, each fills and reads its own buffers
        key = ("eager gradients", threading.get_ident(), pl, tuple(g.lk for g in grads))
        buckets = ctx.buckets.get(key)
        if buckets is None:
            buckets = ctx.buckets[key] = GradBuckets([g.meta.shape for g in grads],
                                                     [g.meta.dtype.np for g in grads], ranks)
        what = "eager gradient all-reduce of %s" % buckets.describe()
        reduced = buckets.all_reduce([_host(g.pieces[0]) if g.pieces else None for g in grads], what=what)
        for k, g, r in zip(ks, grads, reduced):
            out[k] = make_value(g.meta, pl, S.B, [r])
    return out


def _owners(placement):
    return tuple(sorted({m for m, _ in placement.pairs}))


def _host(x):
    from oneflow_compat.backend import devices

    return devices.to_host(x)


# --- compiled jobs: the members of a bucket (passes/grad_buckets.py) ----------------------------------------------
class _BucketRun:
    """One bucket of a plan: its members' shapes, and its buffer once the first call needs it."""

    def __init__(self, count, ranks, comm):
        self.metas = [None] * count
        self.ranks, self.comm = ranks, comm
        self.buckets = None

    def views(self):
        if self.buckets is None:
            self.buckets = GradBuckets([m.shape for m in self.metas], [m.dtype.np for m in self.metas], self.ranks,
                                       cap_bytes=float("inf"))
        return self.buckets.views

    def reduce(self):
        for buf in self.buckets.buffers:
            self.comm.allreduce_(buf, self.ranks)


def member_fn(op, session, shared):
    """The collective function of a boxing op that is member `index` of bucket `number` (`attrs["bucket"]`) in one
    plan (`shared`: the plan's buckets by number): it writes the sum of this process's pieces into its slot of the
    bucket's buffer and gives every local device a view of it; the last member all-reduces the buffer in place
    (members run one after the other, before any of their consumers)."""
    number, index, count = op.attrs["bucket"]
    rt = session.runtime
    local = rt.local_indices(op.placement)
    if not local:
        return lambda *pieces: ()
    run = shared.get(number)
    if run is None:
        run = shared[number] = _BucketRun(count, _owners(op.placement), rt.comm)
    run.metas[index] = op.inputs[0].meta
    last = index == count - 1

    def member(*pieces):
        view = run.views()[index]
        view[...] = _host(pieces[0])
        for p in pieces[1:]:
            view += _host(p)
        if last:
            run.reduce()
        return tuple(view for _ in local)

    return member
