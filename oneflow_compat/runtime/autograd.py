"""Reverse-mode autodiff of eager (global and local) ops: a tape of nodes, walked backward by `backward()`.

Each eager op that needs a gradient records a node: the op type, its attrs, its input and output values, and
where each input came from (an edge to another node's output, a leaf, or nothing). `backward()` walks the nodes
in reverse creation order (every rank creates the same nodes in the same order, so the collectives of the
backward pass line up across ranks) and computes input gradients by compiling the op's declared gradient rule
into a tiny cached backward job (`global_eager.run_grad`: the rules legacy autodiff uses). Gradients of one
value are summed with an `add_n` op (boxing as needed). A leaf's gradient is finally boxed to the leaf's own
placement and SBP — data-parallel P gradients of B weights become B (an all-reduce) — and handed to the surface,
which accumulates it into `.grad`.

Edges are tuples: `("node", node, output index)`, `("leaf", leaf)` (an opaque object of the surface), or None.
"""
import itertools
import threading

from oneflow_compat.ir import sbp as S
from oneflow_compat.runtime import buckets, global_eager


class _GradMode(threading.local):
    """Whether ops record gradients, per thread (as PyTorch and OneFlow: `no_grad` in one thread leaves the
    others recording); every thread starts recording."""

    def __init__(self):
        self.stack = [True]


_MODE = _GradMode()
_SEQ = itertools.count()


class _Callbacks(threading.local):
    """Per thread: the callbacks queued during each backward pass in progress (innermost last)."""

    def __init__(self):
        self.stack = []


_CALLBACKS = _Callbacks()


def queue_callback(fn):
    """Runs `fn()` once the backward pass in progress (in this thread) has handed out every gradient (PyTorch's
    `queue_callback` of its autograd engine): DDP waits there for the gradient all-reduces it started."""
    if not _CALLBACKS.stack:
        raise RuntimeError("queue_callback: no backward pass is running in this thread")
    _CALLBACKS.stack[-1].append(fn)


def is_grad_enabled():
    return _MODE.stack[-1]


def grad_mode():
    """The thread-local object whose `stack[-1]` says whether this thread records gradients (for fast paths)."""
    return _MODE


class set_grad_enabled:  # noqa: N801 - OneFlow's name
    """Context manager (and decorator) switching gradient recording on or off; also a plain call."""

    def __init__(self, mode=True):
        self.mode = bool(mode)
        self._prev = _MODE.stack[-1]
        _MODE.stack[-1] = self.mode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _MODE.stack[-1] = self._prev
        return False

    def __call__(self, fn):
        import functools

        mode = self.mode
        _MODE.stack[-1] = self._prev  # used as a decorator: the call above must not change the state

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with _Grad(mode):
                return fn(*args, **kwargs)

        return wrapper


class _Grad:
    def __init__(self, mode):
        self.mode = mode

    def __enter__(self):
        _MODE.stack.append(self.mode)
        return self

    def __exit__(self, *exc):
        _MODE.stack.pop()
        return False

    def __call__(self, fn):
        import functools

        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with _Grad(mode):
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_Grad):  # noqa: N801
    """`with flow.no_grad():`, `@flow.no_grad()` or `@flow.no_grad`: ops record no gradient."""

    def __new__(cls, fn=None):
        self = super().__new__(cls)
        if callable(fn):  # used as a decorator without parentheses
            self.__init__()
            return self(fn)
        return self

    def __init__(self, fn=None):
        super().__init__(False)


class enable_grad(_Grad):  # noqa: N801
    def __init__(self):
        super().__init__(True)


class Node:
    """One recorded op. `next_edges[i]` says where input i came from; `backward(dys)` gives input gradients.

    `output_hooks[i]` are callables run on output i's summed gradient (a Value) before the node's backward: one
    returning a Value replaces the gradient (OneFlow's `Tensor.register_hook` on a non-leaf, and `retain_grad`,
    which keeps the gradient and returns None). As OneFlow's FunctionNode, `name()` is the op's backward name
    (`matmul_backward`) and the repr `<matmul_backward at 0x...>`."""

    output_hooks = _NO_HOOKS = {}  # (never written: a node's own dict is made by its first hook)

    def __init__(self, name, next_edges, num_outputs):
        self._name = name
        self.next_edges = list(next_edges)
        self.num_outputs = num_outputs
        self.seq = next(_SEQ)

    def name(self):
        return self._name

    def add_output_hook(self, index, fn, terminal=False):
        """`terminal`: `fn` reads the gradient after every hook, whenever these are registered (`retain_grad`'s
        keeper, `autograd.grad`'s catcher: OneFlow 0.9 reads a tensor's gradient through `current_grad_value()`,
        which applies all of its hooks, core/autograd/autograd_meta.cpp:77-84); other hooks run before those."""
        if self.output_hooks is Node._NO_HOOKS:
            self.output_hooks = {}
        fns = self.output_hooks.setdefault(index, [])
        if terminal:
            fn._terminal = True
            fns.append(fn)
            return
        at = next((i for i, f in enumerate(fns) if getattr(f, "_terminal", False)), len(fns))
        fns.insert(at, fn)

    def backward(self, dys):
        raise NotImplementedError

    def release(self):
        """Drop saved values once a backward pass used them (retain_graph=False)."""

    def __repr__(self):
        return "<%s at %s>" % (self._name, hex(id(self)))


class AccumulateGrad(Node):
    """The node OneFlow gives a leaf that requires a gradient once an op records it as an input (or a hook is
    registered on it): its `grad_fn` then prints as `<accumulate_grad>` (OneFlow 0.9,
    `autograd_engine.cpp: AddAccumulateFunctionNode`). It never runs: leaves are accumulated by `backward`."""

    def __init__(self):
        super().__init__("accumulate_grad", [], 1)


class OpNode(Node):
    """An op of the registry: its gradient comes from its declared grad rule. `forward`: the op's compiled
    forward (`global_eager.compiled_op`), which keeps its compiled backward plans."""

    def __init__(self, op_type, attrs, inputs, outputs, next_edges, name=None, forward=None):
        # (Node.__init__ inlined: one node per recorded op)
        self._name = name or _backward_name(op_type, inputs)
        self.next_edges = next_edges
        self.num_outputs = len(outputs)
        self.seq = next(_SEQ)
        self.op_type, self.attrs = op_type, attrs
        self.inputs, self.outputs = inputs, outputs
        self.forward = forward

    packed = None  # (saved_tensors_hooks: the pack hook's objects for the inputs, and the unpack hook)

    def backward(self, dys):
        if self.inputs is None:
            # OneFlow 0.9's message (autograd_engine.cpp: FunctionNode::Apply)
            raise RuntimeError("This FunctionNode with name `%s` has been released.\nMaybe you try to backward "
                               "through the node a second time. Specify retain_graph=True when calling "
                               ".backward() or autograd.grad() the first time." % self._name)
        needed = tuple(e is not None for e in self.next_edges)
        inputs = self.inputs if self.packed is None else unpack_saved(self)
        return global_eager.run_grad(self.op_type, self.attrs, inputs, self.outputs, dys, needed, self.forward)

    def release(self):
        self.inputs = self.outputs = self.packed = None


# saved_tensors_hooks (OneFlow 0.9's oneflow.autograd.graph, _global/autograd_graph.py): the (pack, unpack) pairs
# entered, innermost last; only the innermost applies. A node recorded while one is active keeps pack(input) for
# each of its inputs instead of the input, and its backward reads unpack(packed) back.
SAVED_TENSORS_HOOKS = []


def unpack_saved(node):
    """The node's inputs read back through its unpack hook (a tensor of the saved one's shape and dtype each)."""
    packed, unpack = node.packed
    values = []
    for (meta, obj) in packed:
        t = unpack(obj)
        value = getattr(t, "_value", None)
        if value is None:  # OneFlow 0.9's words (api/python/autograd/autograd.cpp)
            raise RuntimeError("unpack_hook should return a Tensor, but got `%s` instead" % (type(t),))
        if tuple(value.meta.shape) != tuple(meta.shape) or value.meta.dtype is not meta.dtype:
            raise RuntimeError("saved_tensors_hooks: the unpack hook of %s must return a tensor of shape %s and "
                               "dtype %s (what the pack hook was given), got %r"
                               % (node.name(), tuple(meta.shape), meta.dtype.name, t))
        values.append(value)
    return values


class FunctionNode(Node):
    """A node with its own backward function (layout casts: to_global, to_local)."""

    def __init__(self, name, next_edges, fn, num_outputs=1):
        super().__init__(name, next_edges, num_outputs)
        self.fn = fn

    def backward(self, dys):
        return self.fn(dys)


def _backward_name(op_type, inputs=()):
    """The node's default name, `<op type>_backward` as OneFlow 0.9 names its nodes (`op_interpreter.cpp`); the
    surface passes OneFlow's own op type where this project's registry names the op differently."""
    return op_type + "_backward"


def add(values):
    """The sum of gradients of one value (same placement and shape)."""
    values = [v for v in values if v is not None]
    if len(values) <= 1:
        return values[0] if values else None
    return global_eager.run_op("add_n", {}, values)[0]


def box(value, placement, sbp, label="to_global"):
    """`value` on (placement, sbp); unchanged when it already lies so. `label`: what `explain` calls it."""
    if value.placement == placement and (value.sbp == sbp or placement.parallel_num == 1):
        return value
    return global_eager.transfer(value, placement, sbp, label)


class _Uses(dict):
    """{id(leaf): edges reaching it}, with `leaves`: the leaf objects, in the order the search met them."""

    def __init__(self):
        super().__init__()
        self.leaves = []


def _leaf_uses(roots):
    """{id(leaf): number of edges reaching it} over the nodes reachable from `roots`: a leaf's gradient is
    complete once that many edges were handled (then it is accumulated at once, during the backward pass, as
    OneFlow's AccumulateGrad nodes run, so that gradient hooks such as DDP's all-reduce see it early)."""
    uses = _Uses()
    seen = set()
    stack = [edge for edge, _ in roots]
    while stack:
        edge = stack.pop()
        if edge is None:
            continue
        if edge[0] == "leaf":
            key = id(edge[1])
            if key not in uses:
                uses.leaves.append(edge[1])
            uses[key] = uses.get(key, 0) + 1
            continue
        node = edge[1]
        if node in seen:
            continue
        seen.add(node)
        stack.extend(node.next_edges)
    return uses


def backward(roots, accumulate_leaf, retain_graph=False, leaf_layout=None, root_value=None, leaf_gradient=None):
    """Backpropagates from `roots` = [(edge, gradient value)]; calls `accumulate_leaf(leaf, value)` once per leaf
    reached with its summed gradient (not yet boxed: the surface boxes it to the leaf's layout), as soon as every
    edge reaching the leaf was handled. Output hooks of a node run on its summed output gradients first.

    `leaf_layout(leaf)` = the leaf's (placement, sbp): where given, the partial-sum gradients of broadcast leaves on
    a placement of several ranks (data parallelism) are all-reduced through persistent gradient buckets
    (`runtime/buckets.py`: one check and one all-reduce per bucket, instead of both per gradient): from a loop's
    second step on while the walk goes on (`buckets.OverlappedGradients`: a bucket's all-reduce starts as soon as
    its gradients are complete), else together once it ends; they are accumulated when the walk ends.

    `root_value`: the forward value of the pass's one root (a loss): where it is a small partial sum, the buckets'
    check carries its addends, so that its `numpy()` afterwards sends nothing (`OverlappedGradients`).

    `leaf_gradient(leaf)` = (this rank's pieces of the leaf's current `.grad`, or None; whether the bucketed sum may
    carry them): they may where `.grad` is a partial sum on the leaf's placement (what `zero_grad()` leaves: zeros,
    or whatever was written into them since) and no hook must see the new gradient alone; every rank answers the
    second alike (the answer decides whether the leaf's accumulation communicates). Such pieces are added into the
    leaf's bucket contribution before the all-reduce (OneFlow 0.9 adds the new gradient to the old one: the old
    partial sum's pieces summed over the ranks plus the new sum, in the same all-reduce), and the summed value
    handed to `accumulate_leaf` is marked `folded = True`: it already holds the old gradient, which it replaces.
    From a loop's second step on the replaced gradient's storage is the leaf's bucket slot itself
    (`buckets.OverlappedGradients`: the backward writes into `.grad`, as DDP's gradient-as-bucket-view).

    Callbacks queued during the walk (`queue_callback`) run at its end, in order."""
    _CALLBACKS.stack.append([])
    try:
        _walk(roots, accumulate_leaf, retain_graph, leaf_layout, root_value, leaf_gradient)
        callbacks = _CALLBACKS.stack[-1]
        while callbacks:  # (a callback may queue another)
            callbacks.pop(0)()
    finally:
        _CALLBACKS.stack.pop()


def _walk(roots, accumulate_leaf, retain_graph, leaf_layout, root_value=None, leaf_gradient=None):
    pending = {}  # node -> [list of grads per output]
    leaves = {}  # id(leaf) -> (leaf, [grads])
    nodes = {}
    uses = _leaf_uses(roots)
    deferred = []  # (leaf, gradient) waiting for the buckets
    # from a loop's second step on, the partial sums go into their buckets as they complete and are all-reduced
    # while the walk goes on (`buckets.OverlappedGradients`)
    overlap = buckets.OverlappedGradients(uses.leaves, _device_value, root_value, leaf_gradient) \
        if leaf_layout is not None else None

    def complete(leaf, value):
        if leaf_layout is not None and type(value.sbp) is S.Broadcast:
            layout = leaf_layout(leaf)
            if buckets.bucketable_as_partial(value, layout) and _old_partial(leaf_gradient, leaf) is not None:
                # a broadcast gradient going to a partial-sum `.grad` (after zero_grad): OneFlow 0.9 adds them and
                # boxes the sum to the leaf's broadcast (an all-reduce); as a partial sum (no communication: the
                # first rank's piece, zeros elsewhere) it joins the buckets with the old pieces, one all-reduce
                # for all such gradients instead of one per leaf
                value = box(value, layout[0], S.P, label="gradient")
        if leaf_layout is not None and buckets.bucketable(value, leaf_layout(leaf)):
            if not overlap.take(leaf, value):
                deferred.append((leaf, value))
        else:
            accumulate_leaf(leaf, value)

    def send(edge, value):
        if edge is None:
            return
        if edge[0] == "leaf":
            leaf = edge[1]
            entry = leaves.setdefault(id(leaf), (leaf, []))
            if value is not None:
                entry[1].append(value)
            uses[id(leaf)] -= 1
            if uses[id(leaf)] == 0:
                grads = leaves.pop(id(leaf))[1]
                if grads:
                    complete(leaf, add(grads))
            return
        if value is None:
            return
        node, index = edge[1], edge[2]
        slots = pending.get(node)
        if slots is None:
            slots = pending[node] = [[] for _ in range(node.num_outputs)]
            nodes[node.seq] = node
        slots[index].append(value)

    # every node's consumers were created after it: handling nodes latest-first sees all of a node's gradients
    # before the node itself, and every rank handles them in the same order
    done = []
    for edge, value in roots:
        send(edge, value)
    while nodes:
        seq = max(nodes)
        node = nodes.pop(seq)
        dys = [g[0] if len(g) == 1 else add(g) for g in pending.pop(node)]
        for index, fns in node.output_hooks.items():
            for fn in fns:
                if dys[index] is not None:
                    changed = fn(dys[index])
                    if changed is not None:
                        dys[index] = changed
        if all(d is None for d in dys):
            for edge in node.next_edges:  # the edges below still count as handled
                _skip(edge, send)
            continue
        dxs = node.backward(dys)
        done.append(node)
        for edge, dx in zip(node.next_edges, dxs):
            send(edge, dx)
    if not retain_graph:
        for node in done:
            node.release()
    for leaf, grads in leaves.values():  # (leaves whose other edges lay under nodes no gradient reached)
        if grads:
            complete(leaf, add(grads))
    if overlap is not None and overlap.seen:
        summed, deferred = overlap.finish()
        for leaf, g in summed:
            accumulate_leaf(leaf, g)
    if deferred:
        summed = buckets.reduce_partial_gradients([(g, leaf_layout(leaf)) for leaf, g in deferred], _device_value,
                                                  [_old_partial(leaf_gradient, leaf) for leaf, _ in deferred])
        for (leaf, _), g in zip(deferred, summed):
            accumulate_leaf(leaf, g)


def _old_partial(leaf_gradient, leaf):
    """The pieces of `leaf`'s `.grad` that its bucketed sum carries, or None."""
    if leaf_gradient is None:
        return None
    pieces, foldable = leaf_gradient(leaf)
    return pieces if foldable else None


def _device_value(meta, placement, sbp, pieces):
    return global_eager.Value(meta, placement, sbp, [global_eager.to_device(p, placement) for p in pieces])


def _skip(edge, send):
    if edge is not None and edge[0] == "leaf":
        send(edge, None)


def seed_gradient(value):
    """Ones shaped like `value` in a layout whose logical value is all ones (a partial sum becomes B)."""
    sbp = S.B if value.sbp == S.P else value.sbp
    xp = global_eager.xp(value.placement)
    pieces = [xp.ones(p.shape, dtype=p.dtype) for p in value.pieces]
    if value.sbp == S.P:
        pieces = [xp.ones(value.meta.shape, dtype=value.meta.dtype.np) for _ in value.pieces]
    elif S.has_partial(value.sbp):  # a mesh: B on its P axes
        sbp = S.nd([S.B if s == S.P else s for s in value.sbp.sbps], value.sbp.mesh)
        pl, me = value.placement, global_eager.rank()
        index = [m for m, _ in pl.pairs].index(me) if value.pieces else 0
        shape = S.local_shape(value.meta.shape, sbp, index, pl.parallel_num)
        pieces = [xp.ones(shape, dtype=value.meta.dtype.np) for _ in value.pieces]
    return global_eager.Value(value.meta, value.placement, sbp, pieces)
