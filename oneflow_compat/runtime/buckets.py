"""Gradient buckets: the gradients of a data-parallel step all-reduced in persistent flat buffers, as PyTorch's
DistributedDataParallel does (its Reducer): a fixed order of the gradients, consecutive gradients of one dtype
packed into flat buffers (the first up to `first_cap_bytes`, the others up to `cap_bytes`), the buffers allocated
once and reused at every step, one all-reduce per buffer instead of one per gradient — and, before them, one
agreement check for all of them (`runtime/agreement.py`) instead of one per gradient. The buffers come from the
comm (`ProcessComm.shared_buffer`): over MPI on one host they live in memory the members share and are summed in
place there, with no copy (`comm/shm.py`).

The runtime API (also what `oneflow.nn.parallel.DistributedDataParallel` builds on):

    buckets = GradBuckets(shapes, np_dtypes, ranks, cap_bytes=25 << 20, per_bucket=None, what=None,
                          first_cap_bytes=None, placement=None)
        # once, for a fixed list of gradients (their order is the buckets' order); a bucket holds consecutive
        # entries of one dtype, up to `cap_bytes` (PyTorch's bucket_cap_mb; the first bucket up to
        # `first_cap_bytes`, as PyTorch's 1 MB first bucket, so that it is reduced early) and `per_bucket` entries
        # (OneFlow's DDP bucket_size); `what` names the all-reduce in reports; `placement` is what explain shows
    # a whole step at once:
    reduced = buckets.all_reduce(arrays, scale=None)   # every member rank, every step
        # arrays: this rank's gradient of each entry (None: a zero gradient); returns the member-wise sums (times
        # `scale` when given: 1/world for a mean), one array per entry — views into the persistent buffers,
        # valid until the next all-reduce: copy or add them into the gradients
    # or gradients that live in the buckets, reduced as buckets complete during backward (DDP):
    buckets.reset()                  # a backward pass begins
    g = buckets.view(k)              # entry k's slot: its gradient is written or accumulated there
    buckets.ready(k)                 # entry k is complete: every complete bucket, in order, starts its all-reduce
    buckets.wait()                   # every started all-reduce completed (before the optimizer reads the sums)

`ready` starts an all-reduce without waiting for it (`ProcessComm.iallreduce_`): the rest of backward runs while the
members sum the bucket, and `wait` completes them all, as DDP's Reducer does before the optimizer step. The
first all-reduce of a pass (and every all-reduce of a whole step) is a global operation of `agreement`: one check
over `ranks` for the buckets that follow, run in the process-wide turn (`agreement.in_turn`) and named in reports.
On one rank nothing is sent. Each bucket all-reduce is logged for `explain` as one transfer of its flat buffer
(`boxing_log.record_bucket_all_reduce`): the bytes of the all-reduce that ran, not an estimate per gradient.

`reduce_partial_gradients(items)` is what backward of eager global tensors uses (`runtime/autograd.py`): the
leaves' partial-sum gradients (data parallelism: S(0) activations give P weight gradients) that go to broadcast
leaves on a placement of several ranks are summed through buckets kept in the process context, keyed by the
layouts of the gradients (and the thread), so a training loop reuses the same buffers at every step.
`OverlappedGradients` does the same during the walk: from the second step of a loop on, each gradient goes into its
bucket as soon as it is complete and full buckets start their all-reduce while backward goes on. Its first
bucket's check also carries the partial sums of the backward's root where that is a small partial sum on the
whole world (a loss: `GradBuckets.carry_root`), so the loss's `numpy()` afterwards sends nothing
(`remember_sum` / `carried_sum`): a data-parallel eager step synchronises at its feeds and its
bucket only.
"""
import threading
import weakref

import numpy as np

from oneflow_compat.backend import devices
from oneflow_compat.ir import sbp as S
from oneflow_compat.runtime import activity, agreement, boxing_log, context

DEFAULT_CAP_BYTES = 25 << 20  # DDP's default bucket_cap_mb = 25
FIRST_CAP_BYTES = 1 << 20  # PyTorch's first bucket (torch.distributed._DEFAULT_FIRST_BUCKET_BYTES): reduced early


class GradBuckets:
    """Persistent flat buffers for a fixed list of gradients (see the module docstring)."""

    def __init__(self, shapes, np_dtypes, ranks, cap_bytes=DEFAULT_CAP_BYTES, per_bucket=None, what=None,
                 first_cap_bytes=None, placement=None):
        self.shapes = [tuple(int(d) for d in s) for s in shapes]
        self.per_bucket = per_bucket
        self.dtypes = [np.dtype(d) for d in np_dtypes]
        self.ranks = tuple(sorted(int(r) for r in ranks))
        self.cap_bytes = cap_bytes
        self.placement = placement
        self.slots = []  # per entry: (bucket index, start, stop) in its bucket's buffer
        plan = []  # per bucket: [dtype, elements, bytes, entries]
        for shape, dtype in zip(self.shapes, self.dtypes):
            size = int(np.prod(shape, dtype=np.int64))
            nbytes = size * dtype.itemsize
            cap = first_cap_bytes if first_cap_bytes is not None and len(plan) == 1 else self.cap_bytes
            full = per_bucket is not None and plan and plan[-1][3] >= per_bucket
            if not plan or full or plan[-1][0] != dtype or (plan[-1][2] and plan[-1][2] + nbytes > cap):
                plan.append([dtype, 0, 0, 0])
            bucket = plan[-1]
            bucket[3] += 1
            self.slots.append((len(plan) - 1, bucket[1], bucket[1] + size))
            bucket[1] += size
            bucket[2] += nbytes
        self.plan = [(dtype, elements) for dtype, elements, _, _ in plan]
        self.members = [[k for k, slot in enumerate(self.slots) if slot[0] == b] for b in range(len(plan))]
        self.what = what
        self.buffers, self.views = [], []
        self._records = {}  # bucket number: explain's record of its all-reduce (`_record`)
        if len(self.ranks) < 2:  # nothing to share: allocated now (over several ranks: by the members together)
            self._allocate(None)
        self.reset()
        self.calls = 0
        self._pending = []  # (bucket, Pending) started and not yet waited for
        self.before_start = None  # called with a bucket's number just before its all-reduce starts (`ready`)
        self.given = [False] * len(self.shapes)  # entries whose slot was handed out as a gradient's storage

    def _allocate(self, comm):
        """The persistent buffers (a collective of the members when they are several: the comm's shared buffers)."""
        if self.buffers:
            return
        if comm is None or len(self.ranks) < 2 or comm.rank not in self.ranks:
            self.buffers = [np.zeros(elements, dtype) for dtype, elements in self.plan]
        else:
            self.buffers = [comm.shared_buffer((elements,), dtype, self.ranks) for dtype, elements in self.plan]
        self.views = [self.buffers[b][a:z].reshape(shape) for (b, a, z), shape in zip(self.slots, self.shapes)]

    # --- gradients that live in the buckets, reduced as their buckets complete (DDP during backward) ---------------
    def view(self, k):
        """The persistent view of entry k's slot (a gradient may live there: DDP's `.grad` is this view). Over
        several ranks the first call allocates the buffers: every member makes it at the same point."""
        if not self.buffers:
            agreement.in_turn(self._allocate_checked, self._text())
        return self.views[k]

    def reset(self):
        """A new backward pass begins: no entry is complete, no bucket reduced (all-reduces still in flight are
        completed first)."""
        if getattr(self, "_pending", None):
            self.wait()
        self._ready = [False] * len(self.shapes)
        self._missing = [len(m) for m in self.members]  # per bucket: entries not complete yet
        self.next_bucket = 0
        self._checked = False
        self._root = None  # (note, addends) the pass's check carries (`carry_root`)
        self.root_check = None  # the check that carried them (its `result`: their sums)

    def carry_root(self, note, addends):
        """This pass's check (the first bucket's) also carries `addends` (float64, at most `agreement.PAYLOAD`: the
        partial sums of the backward's root, a loss) in its payload, summed over the members as `numpy()`'s own
        check would sum them; `note` joins the check's identity text (the members compare it: every member
        carries alike or they fail naming both). After the check, `root_check.result` holds the sums."""
        self._root = (note, addends)

    def ready(self, k):
        """Entry k's gradient (in its view) is complete: starts the all-reduce, in bucket order, of every bucket whose
        entries are all complete and every bucket before it was started (so every rank issues them in one order);
        returns the numbers of the buckets started now. The first all-reduce of a pass is checked across the ranks
        (`agreement`: ranks whose buckets differ fail naming both sides). `wait()` completes them."""
        if not self._ready[k]:
            self._ready[k] = True
            self._missing[self.slots[k][0]] -= 1
        done = []
        while self.next_bucket < len(self.plan) and not self._missing[self.next_bucket]:
            b = self.next_bucket
            if self.before_start is not None:
                self.before_start(b)
            agreement.in_turn(self._start_in_turn, self._text(), [b], not self._checked)
            self._checked = True
            self.next_bucket += 1
            done.append(b)
        return done

    def wait(self):
        """Completes every all-reduce `ready` started; returns the numbers of those buckets."""
        if not self._pending:
            return []
        pending, self._pending = self._pending, []
        agreement.in_turn(self._wait_in_turn, self._text(), pending)
        return [b for b, _ in pending]

    def describe(self):
        text = getattr(self, "_description", None)
        if text is None:  # (made once: the entries never change, and each step's checks and reports name them)
            text = self._description = "%d gradient(s) %s in %d bucket(s) of %s bytes over ranks %s" % (
                len(self.shapes), ", ".join("%s %s" % (s, d.name) for s, d in zip(self.shapes, self.dtypes)),
                len(self.plan), "+".join(str(e * d.itemsize) for d, e in self.plan), list(self.ranks))
        return text

    def _text(self, what=None):
        if what or self.what:
            return what or self.what
        text = getattr(self, "_default_text", None)
        if text is None:
            text = self._default_text = "gradient all-reduce of %s" % self.describe()
        return text

    def all_reduce(self, arrays, scale=None, what=None, extra=None):
        """The member-wise sums of `arrays` (see the module docstring); every member rank calls it. `extra`: arrays
        (or None) added to `arrays` entry by entry before the sum (an old partial-sum gradient)."""
        if len(arrays) != len(self.shapes):
            raise ValueError("GradBuckets.all_reduce: %d arrays for %d gradients" % (len(arrays), len(self.shapes)))
        for a, shape in zip(arrays, self.shapes):
            if a is not None and tuple(a.shape) != shape:
                raise ValueError("GradBuckets.all_reduce: a gradient of shape %s for the entry of shape %s"
                                 % (tuple(a.shape), shape))
        agreement.in_turn(self._all_reduce_in_turn, self._text(what), arrays, extra)
        if scale is not None:
            for buf in self.buffers:
                buf *= buf.dtype.type(scale)
        self.calls += 1
        return list(self.views)

    def _allocate_checked(self, text):
        """The buffers allocated by the members together, after the check of this pass (so that ranks that
        disagree fail naming both sides before any of them allocates)."""
        comm = _comm()
        if not self._communicates(comm):
            self._allocate(None)
            return
        with activity.operation(text):
            if not self._checked:
                agreement.global_op((agreement.digest(text), text), self.ranks)
                self._checked = True
            self._allocate(comm)

    def _communicates(self, comm):
        return len(self.ranks) >= 2 and comm.size > 1

    def _all_reduce_in_turn(self, text, arrays, extra=None):
        comm = _comm()
        if not self._communicates(comm):
            self._allocate(None)
            self._fill(arrays, extra)
            return
        with activity.operation(text):
            # the check rides in the first bucket's all-reduce (`carry`: nothing before it has an effect)
            agreement.global_op((agreement.digest(text), text), self.ranks, carry=True)
            self._allocate(comm)
            self._fill(arrays, extra)
            started = [(b, comm.iallreduce_(buf, self.ranks)) for b, buf in enumerate(self.buffers)]
            for b, pending in started:
                pending.wait()
                self._record(b, comm)

    def _fill(self, arrays, extra=None):
        for view, a, e in zip(self.views, arrays, extra or [None] * len(arrays)):
            fill_slot(view, a, e)

    def _start_in_turn(self, text, numbers, check):
        comm = _comm()
        if not self._communicates(comm):
            return
        with activity.operation(text):
            if check and self._root is not None:
                # the backward's root (a loss) rides in the same check: its later numpy() sends nothing
                note, addends = self._root
                ident = text + note
                self.root_check = agreement.global_op((agreement.digest(ident), ident), self.ranks,
                                                      payload=addends.ravel(), carry=True)
            elif check:
                # the check rides in the first bucket's all-reduce, in the arrival that says its addends are in
                # (`comm/mpi_comm.py`; a separate check where no shared-memory board carries it)
                agreement.global_op((agreement.digest(text), text), self.ranks, carry=True)
            for b in numbers:
                self._pending.append((b, comm.iallreduce_(self.buffers[b], self.ranks)))

    def _wait_in_turn(self, text, pending):
        comm = _comm()
        with activity.operation(text):
            for b, p in pending:
                p.wait()
                self._record(b, comm)

    def _record(self, b, comm):
        """explain's row for bucket b's all-reduce: its flat buffer, the bytes that all-reduce sends."""
        if self.placement is None:
            return
        rec = self._records.get(b)
        if rec is None:
            dtype, elements = self.plan[b]
            rec = self._records[b] = boxing_log.bucket_record(self.placement, elements, dtype,
                                                              [self.shapes[k] for k in self.members[b]])
        boxing_log.log(rec)


def _comm():
    return activity.installed_comm() or _process_comm()


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


def bucketable_as_partial(g, layout):
    """Whether a broadcast gradient `g` would be `bucketable` once made a partial sum (no communication)."""
    pl, sbp = layout
    return (g.sbp == S.B and sbp == S.B and g.placement == pl and len(_owners(pl)) > 1
            and g.meta.dtype.is_floating)


def reduce_partial_gradients(items, make_value, olds=None):
    """`items` = [(gradient Value, (placement, sbp) of its leaf)]: returns the gradients with every one that is a
    partial sum (P) going to a broadcast (B) leaf on the same placement of several ranks replaced by its sum (B),
    reduced together through gradient buckets (one check and one all-reduce per bucket for all of them).
    `make_value(meta, placement, sbp, pieces)` makes a Value (the caller's type). `olds[k]`: None, or this rank's
    pieces of the leaf's old partial-sum gradient (`autograd.backward`'s `old_partial`), added into the bucket
    with the new gradient; the sum returned for it is then marked `folded` (it holds the old gradient too)."""
    out = [g for g, _ in items]
    olds = olds or [None] * len(items)
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
                out[k] = _summed(make_value(g.meta, pl, S.B, []), olds[k])
            continue
        # per thread: threads' backward passes run side by side, each fills and reads its own buffers
        key = ("eager gradients", threading.get_ident(), pl, tuple(g.lk for g in grads))
        buckets = ctx.buckets.get(key)
        if buckets is None:
            buckets = ctx.buckets[key] = GradBuckets([g.meta.shape for g in grads],
                                                     [g.meta.dtype.np for g in grads], ranks, placement=pl)
        what = "eager gradient all-reduce of %s" % buckets.describe()
        reduced = buckets.all_reduce([_host(g.pieces[0]) if g.pieces else None for g in grads], what=what,
                                     extra=[_old_piece(olds[k]) for k in ks])
        for k, g, r in zip(ks, grads, reduced):
            out[k] = _summed(make_value(g.meta, pl, S.B, [r]), olds[k])
    return out


def _old_piece(old):
    """The host array of this rank's piece of an old partial-sum gradient to add into a bucket (or None)."""
    return _host(old[0]) if old else None


def _summed(value, old):
    """`value` (a bucket's sum) marked as holding the old gradient when one was added into the bucket."""
    if old is not None:
        value.folded = True
    return value


def fill_slot(view, new, old):
    """A bucket slot's contribution: this rank's new gradient (None: zero) plus the old partial-sum gradient's
    piece (None: none), in one pass."""
    if old is None:
        if new is None:
            view[...] = 0
        else:
            view[...] = new
    elif new is None:
        view[...] = old
    else:
        np.add(new, old, out=view)


class OverlappedGradients:
    """The partial-sum gradients of one backward pass of eager global tensors, summed through buckets while the walk
    goes on (`runtime/autograd.py`), as DDP's Reducer does: each gradient goes into its bucket as soon as it is
    complete, and a full bucket starts its all-reduce at once (`GradBuckets.ready`); `finish` waits for them.

    The buckets need the list of gradients in advance; a backward pass over the same leaves as an earlier one (a
    training loop's steps) finds it in the process context: the gradients that pass summed, in the order they were
    complete. A pass that differs from it (a gradient in another order or layout, one missing, a new one) keeps
    what was reduced and gives back the rest (`take` returns False; `finish` returns them) for the end-of-walk
    path (`reduce_partial_gradients`); `finish` then records the pass's own list for the next one. Every rank walks
    the same nodes in the same order, so every rank makes the same choices."""

    def __init__(self, leaves, make_value, root=None, leaf_gradient=None):
        # the plan is found by the leaves' ids and used only if it was learned over these very objects (weak
        # references): an id reused by a new object after an old one was freed must not make one rank use a plan
        # that another rank, whose memory differs, does not find
        leaves = sorted(leaves, key=id)
        self.key = ("overlapped gradients", threading.get_ident(), tuple(id(leaf) for leaf in leaves))
        self.leaves = leaves
        self.make_value = make_value
        self.leaf_gradient = leaf_gradient  # `autograd.backward`'s: a leaf's `.grad` pieces, and whether to carry them
        self.folded = set()  # entries whose bucket contribution holds their leaf's old gradient
        self.in_place = {}  # entry: (new gradient, carried) for a slot that is its leaf's `.grad` (`_write_in_place`)
        self.saved = {}  # entry: its leaf's `.grad` (a copy) while the slot holds the new gradient alone
        plan = context.get().buckets.get(self.key)  # (placement, [(leaf id, layout id)], GradBuckets, refs) or None
        if plan is not None and (len(plan[3]) != len(leaves) or any(r() is not x for r, x in zip(plan[3], leaves))):
            plan = None
        self.plan = plan
        self.seen = []  # (leaf, gradient Value) of every bucketable gradient, in the order they were complete
        self.pos = 0  # entries of the plan taken so far (in its order)
        self.on_plan = self.plan is not None
        self.root = None  # (Value, addends) of the backward's root whose sums the buckets' check carries
        if self.on_plan:
            self.plan[2].reset()
            self.plan[2].before_start = self._write_in_place
            self._carry_root(root)

    def _carry_root(self, root):
        """The pass's check carries the addends of `root` (the backward's one root, a Value) when its `numpy()`
        would sum them over the same members: a small floating partial sum (a loss) on the buckets' placement,
        whose ranks are the whole world (`numpy()` is a collective of the world), on CPU devices (reading a GPU's
        addends here would add a device sync to steps that never fetch the loss). Every member decides alike (the
        layouts are the same on every rank)."""
        pl, _, grad_buckets, _ = self.plan
        if root is None or root.sbp != S.P or root.placement != pl or pl.device_tag != "cpu" or not root.pieces or \
                not root.meta.dtype.is_floating or int(np.prod(root.meta.shape)) > agreement.PAYLOAD:
            return
        world = _process_comm().size
        if grad_buckets.ranks != tuple(range(world)):
            return
        addends = partial_addends(root)
        grad_buckets.carry_root(", carrying the sum of the backward's root %s %s" % (
            tuple(root.meta.shape), root.meta.dtype.name), addends)
        self.root = (root, addends)

    def take(self, leaf, value):
        """A bucketable gradient of `leaf` is complete: True when it went into its bucket (the caller then forgets
        it), False when the caller must sum it at the end of the walk.

        The leaf's old `.grad` pieces, where they may be carried (`leaf_gradient`), are added into the slot with the
        new gradient. A slot may be the leaf's `.grad` itself (DDP's gradient-as-bucket-view: `finish` hands the
        slot out as the sum that replaces the old gradient, `Tensor._add_to_grad` keeps it as `.grad`'s storage, and
        from then on the backward adds the new gradient straight into `.grad` and its all-reduce needs no copy
        back). The write into such a slot waits until its bucket starts (`_write_in_place`), so that a bucket
        given back leaves `.grad` as it was. A slot handed out as a `.grad` that is not the leaf's any more (set to
        None, assigned, replaced) is not written (what held it may still read it): this pass goes off the plan and
        the next pass gets new buckets (every rank alike, where every rank handles its gradients alike)."""
        self.seen.append((leaf, value))
        if not self.on_plan:
            return False
        pl, entries, grad_buckets, _ = self.plan
        if self.pos >= len(entries) or entries[self.pos] != (id(leaf), value.lk) or not value.pieces:
            self.on_plan = False
            return False
        k = self.pos
        view = grad_buckets.view(k)
        pieces, carried = self.leaf_gradient(leaf) if self.leaf_gradient is not None else (None, False)
        in_slot = bool(pieces) and pieces[0] is view
        if grad_buckets.given[k] and not in_slot:
            self.on_plan = False
            return False
        new = _host(value.pieces[0])
        if in_slot:
            self.in_place[k] = (new, carried)
        else:
            fill_slot(view, new, _host(pieces[0]) if carried and pieces else None)
        if carried:
            self.folded.add(k)
        self.pos += 1
        grad_buckets.ready(k)
        return True

    def _write_in_place(self, b):
        """Bucket b starts its all-reduce: the new gradients of its slots that are their leaves' `.grad` go in now —
        added to the old gradient where it is carried (it is the slot's content), else the old gradient set aside
        (`saved`: put back by `finish`) and the slot given the new gradient alone."""
        grad_buckets = self.plan[2]
        for k in grad_buckets.members[b]:
            write = self.in_place.pop(k, None)
            if write is None:
                continue
            new, carried = write
            view = grad_buckets.views[k]
            if carried:
                view += new
            else:
                self.saved[k] = view.copy()
                view[...] = new

    def finish(self):
        """Waits for the all-reduces started; returns ([(leaf, summed Value)], [(leaf, gradient)] given back to the
        caller to sum at the end of the walk), both in the order the gradients were complete, and remembers this
        pass's gradients for the next pass."""
        summed_at = {}
        if self.plan is not None:
            pl, _, grad_buckets, _ = self.plan
            grad_buckets.wait()
            grad_buckets.before_start = None
            carried = grad_buckets.root_check
            if self.root is not None and carried is not None and carried.result is not None:
                remember_sum(self.root[0], self.root[1], grad_buckets.ranks, carried.result)
            started = grad_buckets.next_bucket  # buckets are started in order
            # a slot that may become its leaf's `.grad` (host memory: a GPU's gradient stays on the device)
            keep = pl.device_tag == "cpu"
            for k in range(self.pos):
                if grad_buckets.slots[k][0] < started:
                    leaf, g = self.seen[k]
                    view = grad_buckets.view(k)
                    if k in self.saved:  # the slot is `.grad`, which this sum does not replace: the sum apart,
                        # `.grad` put back
                        summed = self.make_value(g.meta, pl, S.B, [view.copy()])
                        view[...] = self.saved.pop(k)
                    else:
                        summed = self.make_value(g.meta, pl, S.B, [view])
                    if k in self.folded:
                        summed.folded = True
                        if keep:
                            summed.bucket_slot = True  # it replaces `.grad`: its storage from now on
                            grad_buckets.given[k] = True
                    summed_at[k] = (leaf, summed)
            self.in_place.clear()  # (writes of buckets given back: `.grad` stays as it was)
        # (a bucket that never filled up was not reduced: its gradients are summed with the rest)
        given_back = [item for k, item in enumerate(self.seen) if k not in summed_at]
        if self.plan is None or given_back:
            self._learn()
        return list(summed_at.values()), given_back

    def _learn(self):
        """This pass's list, for the next pass over the same leaves (one placement of several ranks, this rank in
        it: the case of data parallelism; otherwise no overlap)."""
        store = context.get().buckets
        placements = {g.placement for _, g in self.seen}
        if len(placements) != 1 or any(not g.pieces for _, g in self.seen):
            store.pop(self.key, None)
            return
        try:
            refs = [weakref.ref(leaf) for leaf in self.leaves]
        except TypeError:  # leaves that take no weak reference: no plan (no overlap)
            store.pop(self.key, None)
            return
        (pl,) = placements
        grads = [g for _, g in self.seen]
        store[self.key] = (pl, [(id(leaf), g.lk) for leaf, g in self.seen],
                           GradBuckets([g.meta.shape for g in grads], [g.meta.dtype.np for g in grads], _owners(pl),
                                       first_cap_bytes=first_cap_bytes(pl), placement=pl), refs)


# --- the backward's root carried by the buckets' check (a loss whose numpy() then sends nothing) ------------------
def partial_addends(value):
    """This rank's addend of a small partial sum, in float64: what `numpy()` sends in its check's payload."""
    return addends_of(value.meta.shape, value.pieces)


def addends_of(shape, pieces):
    """`partial_addends` of pieces not in a Value yet (an nn.Graph call's fetched output)."""
    acc = np.zeros(shape, np.float64)
    for p in pieces:
        acc += _host(p)
    return acc


def remember_sum(value, addends, members, sums):
    """`sums`: the member-wise sums of `addends` (this rank's `partial_addends(value)`) over `members`, summed as
    `numpy()`'s check sums them (float64, in an agreement check's payload: the same bits), by a check the value's
    backward made anyway (the first gradient bucket's, `OverlappedGradients`). A later `numpy()` of the value over
    the same members then sends nothing (`carried_sum`)."""
    value.summed = (list(value.pieces), addends, tuple(members), np.array(sums, np.float64))


def carried_sum(value, addends, members):
    """The sums `remember_sum` kept for `value`, if they still hold: the same pieces holding the same addends (an
    in-place change since gives other addends: the sums are then made again), over the same members."""
    kept = getattr(value, "summed", None)
    if kept is None:
        return None
    pieces, old, ranks, sums = kept
    if ranks != tuple(members) or len(pieces) != len(value.pieces) or \
            any(a is not b for a, b in zip(pieces, value.pieces)) or old.tobytes() != addends.tobytes():
        return None
    return sums


def first_cap_bytes(placement):
    """The cap of the first bucket of eager gradients on `placement`. PyTorch's small first bucket is reduced while
    backward goes on — on a GPU, NCCL sums it on its own stream. On CPU devices the ranks sum a bucket themselves
    (shared memory, or MPI, which progresses only while a rank polls), so a bucket started early is summed at the
    end of backward all the same: an early first bucket would only add a meeting of the ranks in the middle of
    backward. There the buckets are cut by `DEFAULT_CAP_BYTES` alone (None)."""
    return None if placement.device_tag == "cpu" else FIRST_CAP_BYTES


def _owners(placement):
    return tuple(sorted({m for m, _ in placement.pairs}))


def _host(x):
    return devices.to_host(x)


# --- compiled jobs: the members of a bucket (passes/grad_buckets.py) ----------------------------------------------
class _BucketRun:
    """One bucket of a plan: its members' shapes, and its buffer once the first call needs it."""

    def __init__(self, count, ranks, comm):
        self.metas = [None] * count
        self.ranks, self.comm = ranks, comm
        self.buckets = None
        self.before_reduce = None  # called before the all-reduce (an nn.Graph call fills its carried check there)

    def views(self):
        if self.buckets is None:  # (the first member's call: every member rank runs the plan's ops in one order)
            self.buckets = GradBuckets([m.shape for m in self.metas], [m.dtype.np for m in self.metas], self.ranks,
                                       cap_bytes=float("inf"))
            self.buckets._allocate(self.comm)
        return self.buckets.views

    def reduce(self):
        if self.before_reduce is not None:
            self.before_reduce()
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
