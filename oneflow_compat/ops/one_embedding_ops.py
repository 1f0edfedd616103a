"""`flow.one_embedding`'s ops (OneFlow 0.9's `one_embedding_fused_lookup` and its gradient) and the key-value
store they read and update.

A store holds one embedding's lines (the embedding followed by its optimizer's states, OneFlow's layout) keyed by
feature id; a key seen for the first time gets its initial line from its table's initializer
(`kernels/one_embedding.py`). The lookup is stateful (it may insert keys); its gradient op sums the gradients of
repeated ids and, inside an nn.Graph, applies the update of the graph's optimizer that holds the embedding's
`shadow` parameter to the rows looked up alone (OneFlow's sparse update: rows not looked up do not move); eagerly
it keeps the summed gradient for `flow.one_embedding.Optimizer.step()` (OneFlow 0.9's eager protocol,
python/oneflow/one_embedding.py). The gradient op returns a zero gradient for the shadow, as OneFlow's shadow
gets none that moves it.

Both ops are collectives over the devices of their placement: the table is sharded over them as OneFlow shards it
(key k on device xxh64(k, 1) % parallel_num), each process holding its devices' shards. A lookup gathers the
batch's ids (split along axis 0 or broadcast), each device looks up the keys it owns, and one all-reduce gives every
process every row (each row has one owner, so the sum is the row itself); the gradient op gathers ids and output
gradients and each device updates its own keys. N devices compute what one computes
(tests/test_one_embedding_mpi.py).
"""
import weakref

import numpy as np

from oneflow_compat.backend import devices
from oneflow_compat.ir import dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import one_embedding as oe_k
from oneflow_compat.ops.registry import OpDef, apply, register

_TABLES = weakref.WeakValueDictionary()  # (embedding name, rank) -> its EmbeddingTable (while its module lives)

# line size each sparse update needs, in embedding sizes, with OneFlow's words (user/ops/one_embedding_ops.cpp)
_LINE_FACTOR = {"sgd": (1, "SGD"), "momentum": (2, "Momentum"), "adam": (3, "Adam"), "adagrad": (2, "Adagrad"),
                "ftrl": (3, "Ftrl")}


class EmbeddingTable:
    """One embedding's table on this process: its configuration and its shards. The table is sharded over the
    devices of the placement it runs on as OneFlow shards it, key k on device xxh64(k, 1) % parallel_num
    (`kernels/one_embedding.shard_of`); this process holds the shards of its own devices."""

    def __init__(self, name, rank, embedding_dim, storage_dim, dtype, key_dtype, tables, column_dims, seed,
                 padding_idx=None):
        if (name, rank) in _TABLES:
            raise RuntimeError("Can't create an embedding with same name of an existing embedding, the name: %s"
                               % name)
        if storage_dim < embedding_dim:
            raise ValueError("one_embedding '%s': storage_dim %d is smaller than embedding_dim %d"
                             % (name, storage_dim, embedding_dim))
        self.name, self.rank = name, rank
        self.embedding_dim, self.storage_dim = int(embedding_dim), int(storage_dim)
        self.dtype, self.key_dtype = np.dtype(dtype), np.dtype(key_dtype)
        self.tables, self.column_dims, self.seed = tables, list(column_dims), int(seed)
        self.padding_idx = padding_idx
        self.states = ()  # the constant initial values of the optimizer states a new line gets
        self.shadow = lambda: None  # the owning module's current shadow parameter (to_global replaces it)
        self.parallel_num = None
        self.shards = {}  # parallel id -> EmbeddingStore
        _TABLES[(name, rank)] = self

    def shard(self, parallel_num, parallel_id):
        if self.parallel_num is None:
            self.parallel_num = parallel_num
        elif parallel_num != self.parallel_num:
            raise ValueError("one_embedding '%s': its table is sharded over %d device(s); it cannot run on a "
                             "placement of %d" % (self.name, self.parallel_num, parallel_num))
        s = self.shards.get(parallel_id)
        if s is None:
            s = self.shards[parallel_id] = EmbeddingStore(self)
        return s

    def local_shards(self, parallel_num=None):
        """[(parallel id, shard)] of this process (its own shard 0 of 1 before any lookup)."""
        if not self.shards:
            self.shard(parallel_num or 1, self.rank if (parallel_num or 1) > 1 else 0)
        return sorted(self.shards.items())

    # --- the optimizer -------------------------------------------------------------------------------------------
    def check_line_size(self, kind):
        factor, word = _LINE_FACTOR[kind]
        if self.storage_dim != self.embedding_dim * factor:
            raise ValueError(
                "when using %s optimizer, line_size should equals to embedding_size * %d, but get line_size: %d "
                "embedding_size: %d, please set size_factor of store_options to %d." % (
                    word, factor, self.storage_dim, self.embedding_dim, factor) if factor > 1 else
                "when use SGD optimizer, line_size should equals to embedding_size, but get line_size: %d "
                "embedding_size: %d, please set size_factor of store_options to 1." % (
                    self.storage_dim, self.embedding_dim))

    def bind_optimizer(self, leaf):
        """Checks that a line holds `leaf`'s states (OneFlow's line_size check) and makes new keys' lines start
        with their initial values (OneFlow's state_initializer: zeros for momentum and Adam,
        initial_accumulator_value for Adagrad and Ftrl)."""
        self.check_line_size(_kind(leaf))
        own = getattr(getattr(leaf, "optimizer", None), "embedding_state_init", None)
        if own is not None:
            self.states = tuple(own(leaf.group, s) for s in leaf.states)
        else:
            self.states = tuple(v for _, v in leaf.state_specs(self.name, (self.embedding_dim,), self.dtype))


class EmbeddingStore:
    """One shard: {key: row} over an array of lines (`storage_dim` wide)."""

    def __init__(self, table):
        self.table = table
        self.index = {}
        self._keys = np.zeros(0, table.key_dtype)  # grown by doubling: inserting stays amortised O(new keys)
        self._lines = np.zeros((0, table.storage_dim), table.dtype)
        self.size = 0
        self.pending = None  # eager: (unique keys, summed gradient rows) waiting for Optimizer.step()

    @property
    def keys(self):
        return self._keys[:self.size]

    @property
    def lines(self):
        return self._lines[:self.size]

    def _append(self, keys, lines):
        n = self.size + len(keys)
        if n > len(self._keys):
            cap = max(n, 2 * len(self._keys), 1024)
            grown_keys = np.zeros(cap, self._keys.dtype)
            grown_lines = np.zeros((cap, self._lines.shape[1]), self._lines.dtype)
            grown_keys[:self.size], grown_lines[:self.size] = self.keys, self.lines
            self._keys, self._lines = grown_keys, grown_lines
        self._keys[self.size:n] = keys
        self._lines[self.size:n] = lines
        self.size = n

    def __len__(self):
        return len(self.index)

    def rows_of(self, keys, table_ids):
        """Row of each (unique) key, inserting the missing ones with their initial lines."""
        t = self.table
        keys = np.asarray(keys)
        rows = np.fromiter((self.index.get(k, -1) for k in keys.tolist()), np.int64, len(keys))
        missing = np.nonzero(rows < 0)[0]
        if missing.size:
            new_keys = keys[missing]
            new = oe_k.initial_lines(np, new_keys, np.asarray(table_ids)[missing], t.tables, t.column_dims,
                                     t.states, t.storage_dim, t.seed, t.dtype)
            start = self.size
            self._append(new_keys.astype(t.key_dtype), new)
            for i, k in enumerate(new_keys.tolist()):
                self.index[k] = start + i
            rows[missing] = np.arange(start, start + missing.size)
        return rows

    def items(self):
        """(keys, lines) of every key, in insertion order (copies)."""
        return self.keys.copy(), self.lines.copy()

    def replace(self, keys, lines):
        """The whole shard replaced at once (a loaded snapshot)."""
        t = self.table
        keys = np.asarray(keys, t.key_dtype)
        lines = np.asarray(lines, t.dtype).reshape(len(keys), t.storage_dim)
        self._keys, self._lines, self.size = keys.copy(), lines.copy(), len(keys)
        self.index = {k: i for i, k in enumerate(keys.tolist())}

    def lookup(self, flat_ids, flat_table_ids):
        """The embeddings (n, embedding_dim) of flat ids this shard holds."""
        uniq, inverse = oe_k.unique_with_inverse(np, flat_ids)
        first = np.zeros(len(uniq), np.int64)
        first[inverse[::-1]] = np.arange(len(flat_ids))[::-1]
        rows = self.rows_of(uniq, flat_table_ids[first])
        return self.lines[rows[inverse], :self.table.embedding_dim]

    def gradient_rows(self, flat_ids, dy):
        """(unique keys, summed gradient of each): repeated ids' gradients add up; padding_idx's get none."""
        t = self.table
        dy = np.asarray(dy).reshape(len(flat_ids), t.embedding_dim)
        if t.padding_idx is not None:
            keep = flat_ids != t.padding_idx
            flat_ids, dy = flat_ids[keep], dy[keep]
        uniq, inverse = oe_k.unique_with_inverse(np, flat_ids)
        return uniq, oe_k.segment_sum(np, dy, inverse, len(uniq))

    def add_pending(self, keys, grads):
        if self.pending is None:
            self.pending = (keys, grads)
            return
        all_keys = np.concatenate([self.pending[0], keys])
        uniq, inverse = oe_k.unique_with_inverse(np, all_keys)
        self.pending = (uniq, oe_k.segment_sum(np, np.concatenate([self.pending[1], grads]), inverse, len(uniq)))

    def apply_update(self, keys, grads, leaf):
        """Updates the lines of `keys` with the summed gradients `grads` by `leaf` (an optimizer group with the
        compiled step's protocol: `kind`, `states`, `state_specs`, `update_scaled`): the dense optimizer's own
        formula on the rows looked up."""
        t = self.table
        t.check_line_size(_kind(leaf))
        if len(keys) == 0:
            return
        rows = np.fromiter((self.index[k] for k in np.asarray(keys).tolist()), np.int64, len(keys))
        d = t.embedding_dim
        block = self.lines[rows]
        w = block[:, :d].copy()
        states = [block[:, d * (i + 1):d * (i + 2)].copy() for i in range(len(leaf.states))]
        leaf.update_scaled(np, w, grads.astype(t.dtype), states, lr=leaf.lr_scheduler.lr_at(None), step=None,
                           weight_decay=0.0)
        block[:, :d] = w
        for i, st in enumerate(states):
            block[:, d * (i + 1):d * (i + 2)] = st
        self.lines[rows] = block


def _check_graph_step(job, leaf, name):
    """What OneFlow 0.9 itself refuses of a graph step with one_embedding, in its words."""
    clip = leaf.grad_clipping
    if clip is not None and float(getattr(clip, "norm_type", 2.0)) == -float("inf"):
        # replace_embedding_ops_pass.cpp (v0.9.0) ClipGradByGlobalNorm: UNIMPLEMENTED for norm_type -inf
        raise NotImplementedError("one_embedding '%s': one_embedding gradient's invalid values set to 0, so not "
                                  "support abs_reduce_min." % name)


def _kind(leaf):
    if leaf.kind != "piece":
        return leaf.kind
    name = type(leaf.optimizer).__name__.lower()
    if name not in _LINE_FACTOR:
        raise NotImplementedError("only support sgd, adam, adagrad and ftrl")
    return name


def table_of(name, rank):
    t = _TABLES.get((name, rank))
    if t is None:
        raise RuntimeError("Can not find embedding: %s-%d" % (name, rank))
    return t


def graph_leaf(job, shadow, name, required=True):
    """The optimizer group of a compiled graph holding the embedding's shadow parameter (None when not
    `required` and there is none)."""
    opt = getattr(job, "optimizer", None)
    for leaf in (opt.leaf_optimizers() if opt is not None else ()):
        for p in leaf.params.values():
            if p is shadow:
                return leaf
    if not required:
        return None
    raise ValueError("one_embedding '%s': the nn.Graph trains it but no optimizer added to the graph holds its "
                     "parameters (add_optimizer(flow.optim.SGD(embedding.parameters(), ...)))" % name)


# --- the ops ------------------------------------------------------------------------------------------------------
def _lookup_meta(op):
    ids = op.inputs[1]
    if ids.dtype.np is None or ids.dtype.np.kind not in "iu":
        raise TypeError("one_embedding_fused_lookup '%s': ids must be integers, got %s" % (op.name, ids.dtype.name))
    if len(op.inputs) > 2 and tuple(op.inputs[2].shape) != tuple(ids.shape):
        raise ValueError("one_embedding_fused_lookup '%s': table_ids shape %s must equal ids shape %s"
                         % (op.name, tuple(op.inputs[2].shape), tuple(ids.shape)))
    return [TensorMeta(tuple(ids.shape) + (op.attrs["embedding_size"],), dtypes.from_numpy(op.attrs["dtype"]),
                       ids.is_dynamic)]


class _Layout:
    """Where the pieces of an op's ids live: the devices of this process, the processes of the placement, and
    how the flat ids of every device make the logical flat batch (split along axis 0, or broadcast)."""

    def __init__(self, op, session, ids_index=1):
        rt = session.runtime
        self.comm, self.rank = rt.comm, rt.comm.rank
        self.local = rt.local_indices(op.placement)
        self.parallel_num = op.placement.parallel_num
        self.procs = sorted({m for m, _ in op.placement.pairs})
        sbp = op.sbp_in[ids_index]
        self.split = sbp != S.B
        if self.split and sbp != S.S(0):
            raise ValueError("op '%s': ids must be broadcast or split(0), got %s" % (op.name, sbp))
        shape = tuple(op.inputs[ids_index].shape)
        self.shape = shape
        per_row = int(np.prod(shape[1:], dtype=np.int64)) if shape else 1
        sizes = [S.local_shape(shape, sbp, i, self.parallel_num)[0] * per_row if self.split and shape else
                 int(np.prod(shape, dtype=np.int64)) for i in range(self.parallel_num)]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    def gather(self, pieces, width=None):
        """The logical flat batch (n,) or (n, width) from this process's pieces (one collective when the batch is
        split over several processes)."""
        flat = [np.asarray(devices.to_host(p)).reshape((-1,) if width is None else (-1, width)) for p in pieces]
        if not self.split:
            return flat[0]
        local = np.concatenate(flat) if flat else np.zeros((0,) if width is None else (0, width))
        if len(self.procs) > 1:
            return np.asarray(self.comm.allgatherv(local, self.procs, axis=0))
        return local

    def piece(self, full, i):
        return full[self.offsets[i]:self.offsets[i + 1]] if self.split else full


def _bind_states(op, table):
    """In a training graph: keys first seen from now on get the graph's optimizer states' initial values."""
    if op.attrs["in_graph"]:
        leaf = graph_leaf(op.job, table.shadow(), table.name, required=False)
        if leaf is not None:
            table.bind_optimizer(leaf)


def _lookup_build(op, session):
    name, num_tables = op.attrs["embedding_name"], op.attrs["num_tables"]
    lay = _Layout(op, session)
    table = table_of(name, lay.rank)
    _bind_states(op, table)
    k = len(lay.local)
    out_shape = lay.shape

    def run(*pieces):
        ids = lay.gather(pieces[k:2 * k])
        tids = lay.gather(pieces[2 * k:3 * k]) if len(pieces) > 2 * k else None
        tids = np.broadcast_to(tids, ids.shape).astype(np.int64) if tids is not None else \
            np.arange(ids.size, dtype=np.int64) % num_tables  # OneFlow's id_shuffle: table i % num_tables
        if tids.size and (tids.min() < 0 or tids.max() >= num_tables):
            raise ValueError("one_embedding '%s': table_ids must be in [0, %d), got %d..%d"
                             % (name, num_tables, tids.min(), tids.max()))
        rows = np.zeros((ids.size, table.embedding_dim), table.dtype)
        shard = oe_k.shard_of(np, ids, lay.parallel_num) if lay.parallel_num > 1 else np.zeros(ids.size, np.int64)
        for d in lay.local:
            mine = shard == d
            if mine.any():
                rows[mine] = table.shard(lay.parallel_num, d).lookup(ids[mine], tids[mine])
        if lay.parallel_num > 1 and len(lay.procs) > 1:
            # every row has one owner: the sum over processes is each row itself
            rows = np.asarray(lay.comm.allreduce_(rows, lay.procs))
        if table.padding_idx is not None:
            rows[ids == table.padding_idx] = 0
        outs = []
        for p, d in zip(pieces[k:2 * k], lay.local):
            part = lay.piece(rows, d)
            part = part.reshape(tuple(np.shape(p)) + (table.embedding_dim,))
            xp = devices.module_of(p)
            outs.append(xp.asarray(part) if xp is not np else part)
        return tuple(outs)
    return run


def _lookup_grad(op, dys):
    if dys[0] is None:
        return [None] * len(op.inputs)
    shadow, ids = op.inputs[0], op.inputs[1]
    g = apply("one_embedding_fused_lookup_grad", [shadow, ids, dys[0]], dict(op.attrs))
    return [g] + [None] * (len(op.inputs) - 1)


def _grad_meta(op):
    shadow = op.inputs[0]
    return [TensorMeta(tuple(shadow.shape), shadow.dtype, False)]


def _grad_build(op, session):
    name, in_graph = op.attrs["embedding_name"], op.attrs["in_graph"]
    lay = _Layout(op, session)
    table = table_of(name, lay.rank)
    _bind_states(op, table)
    k = len(lay.local)

    def run(*pieces):
        shadows = pieces[:k]
        ids = lay.gather(pieces[k:2 * k])
        dy = lay.gather(pieces[2 * k:3 * k], table.embedding_dim)
        shard = oe_k.shard_of(np, ids, lay.parallel_num) if lay.parallel_num > 1 else np.zeros(ids.size, np.int64)
        leaf = graph_leaf(op.job, table.shadow(), name) if in_graph else None
        if leaf is not None:
            _check_graph_step(op.job, leaf, name)
            return _graph_step_gradient(table, lay, leaf, ids, dy, shadows)
        for d in lay.local:
            mine = shard == d
            store = table.shard(lay.parallel_num, d)
            keys, grads = store.gradient_rows(ids[mine], dy[mine])
            if leaf is not None:
                store.apply_update(keys, grads, leaf)
            else:
                store.add_pending(keys, grads)
        return tuple(devices.module_of(s).zeros(s.shape, dtype=s.dtype) for s in shadows)
    if in_graph:
        # the row gradients summed for the optimizer phase are the call's until its update takes them: a call that
        # fails or is interrupted after this op ran drops them at its end (`Executable.finish`), as its dense
        # gradients are dropped with its registers, so the next step starts from nothing
        run.discard_uncommitted = lambda: _discard_graph_step(table)
    return run


def _discard_graph_step(table):
    table.graph_step = None


def _lookup_sig(op):
    n = len(op.inputs)
    return [((S.B,) + (S.S(0),) * (n - 1), (S.S(0),)), ((S.B,) * n, (S.B,))]


register(OpDef("one_embedding_fused_lookup", infer=_lookup_meta, collective=True, build_collective=_lookup_build,
               grad=_lookup_grad, sbp=_lookup_sig, stateful=True))
register(OpDef("one_embedding_fused_lookup_grad", infer=_grad_meta, collective=True, build_collective=_grad_build,
               sbp=lambda op: [((S.B, S.S(0), S.S(0)), (S.B,)), ((S.B, S.B, S.B), (S.B,))], stateful=True))


# --- nn.Graph steps: gradient accumulation, loss scaling and clipping ---------------------------------
# Inside a training graph the gradient op no longer updates the rows itself: it adds the batch's row gradients
# (every key of the batch, as each process sees the whole gathered batch) to the table's step under way, and the
# update runs in the optimizer phase, once per step, as OneFlow 0.9's embedding_update ops run after its
# ReplaceEmbeddingOps pass scaled them (replace_embedding_ops_pass.cpp, v0.9.0): by the loss-instance, micro-batch
# and loss-scale factors (ScaleGrad: a static factor's 1/factor, a dynamic scaler's 1/scale and its skip of steps
# whose gradients overflowed), and by the clipping coefficient of the optimizer group, the embedding gradient's
# norm joining the group's global norm (ClipGradByGlobalNorm).
#
# The optimizer pass sees the embedding through its shadow parameter (shape (1,)): the gradient op gives the
# shadow, as its gradient, the growth of the norm (of the group's clip type, else 2) of the step's accumulated
# embedding gradient, so that over the micro-batches and lookups of a step the shadow's gradient adds up to that
# norm N itself. Everything the pass then does to a gradient is a factor (1/N instances, 1/micro-batches,
# 1/loss scale, the clipping coefficient), its sum of squares or p-th powers is N's contribution to the group's
# norm, and a non-finite embedding gradient makes it non-finite: the update op (`one_embedding_graph_update`,
# built by the pass for the shadow instead of a dense update) reads the shadow's final gradient G and applies the
# accumulated row gradients times G / N through the graph's optimizer.
class _GraphStep:
    """The embedding gradient of the step under way: (keys, summed gradients) of every key, and its norm."""

    def __init__(self, table):
        self.keys = np.zeros(0, table.key_dtype)
        self.grads = np.zeros((0, table.embedding_dim), np.float64)
        self.norm = 0.0

    def add(self, keys, grads):
        all_keys = np.concatenate([self.keys, np.asarray(keys, self.keys.dtype)])
        uniq, inverse = oe_k.unique_with_inverse(np, all_keys)
        self.keys = uniq
        self.grads = oe_k.segment_sum(np, np.concatenate([self.grads, grads.astype(np.float64)]), inverse, len(uniq))


def _norm_of(grads, p):
    if grads.size == 0:
        return 0.0
    a = np.abs(grads)
    if np.isinf(p):
        return float(a.max())
    return float((a ** p).sum() ** (1.0 / p))


def _graph_step_gradient(table, lay, leaf, ids, dy, shadows):
    step = getattr(table, "graph_step", None)
    if step is None:
        step = table.graph_step = _GraphStep(table)
    if lay.local:
        keys, grads = table.shard(lay.parallel_num, lay.local[0]).gradient_rows(ids, dy)  # (every key)
        step.add(keys, grads)
    clip = leaf.grad_clipping
    before = step.norm
    step.norm = _norm_of(step.grads, float(getattr(clip, "norm_type", 2.0)) if clip is not None else 2.0)
    grown = step.norm - before
    return tuple(devices.module_of(s).full(s.shape, grown, dtype=s.dtype) for s in shadows)


def shadow_update(leaf, name):
    """(op type, attrs) of the update the optimizer pass builds for variable `name` of graph optimizer group
    `leaf` when it is a one_embedding's shadow; None for any other variable."""
    param = leaf.params.get(name) if hasattr(leaf, "params") else None
    if param is None:
        return None
    for table in list(_TABLES.values()):
        if table.shadow() is param:
            return "one_embedding_graph_update", {"embedding_name": table.name}
    return None


def _graph_update_build(op, session):
    rt = session.runtime
    local = rt.local_indices(op.placement)
    parallel_num = op.placement.parallel_num
    name = op.attrs["embedding_name"]
    table = table_of(name, rt.comm.rank)
    grad_scale = float(op.attrs.get("grad_scale", 1.0))
    k = len(local)
    skips = len(op.inputs) > 2

    def run(*pieces):
        step, table.graph_step = getattr(table, "graph_step", None), None
        if step is None or not len(step.keys) or k == 0:
            return ()
        if skips and float(np.asarray(devices.to_host(pieces[2 * k])).reshape(-1)[0]) != 0:
            return ()  # dynamic loss scaling: this step's gradients overflowed, no update
        leaf = graph_leaf(op.job, table.shadow(), name)
        final = float(np.asarray(devices.to_host(pieces[k])).reshape(-1)[0])
        factor = grad_scale * (final / step.norm if step.norm > 0 and np.isfinite(step.norm) else 1.0)
        shard = oe_k.shard_of(np, step.keys, parallel_num) if parallel_num > 1 else np.zeros(len(step.keys), np.int64)
        for d in local:
            mine = shard == d
            table.shard(parallel_num, d).apply_update(step.keys[mine], step.grads[mine] * factor, leaf)
        return ()
    return run


register(OpDef("one_embedding_graph_update", infer=lambda op: [], collective=True,
               build_collective=_graph_update_build, stateful=True,  # (it writes the table, not its inputs)
               sbp=lambda op: [((S.B,) * len(op.inputs), ())]))
