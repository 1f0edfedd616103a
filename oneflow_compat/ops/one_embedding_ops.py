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
"""
import weakref

import numpy as np

from oneflow_compat.backend import devices
from oneflow_compat.ir import dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import one_embedding as oe_k
from oneflow_compat.ops.registry import OpDef, apply, register

_STORES = weakref.WeakValueDictionary()  # embedding name -> its EmbeddingStore (while its module lives)

# line size each sparse update needs, in embedding sizes, with OneFlow's words (user/ops/one_embedding_ops.cpp)
_LINE_FACTOR = {"sgd": (1, "SGD"), "momentum": (2, "Momentum"), "adam": (3, "Adam"), "adagrad": (2, "Adagrad"),
                "ftrl": (3, "Ftrl")}


class EmbeddingStore:
    """One embedding's table: {key: row} over an array of lines (`storage_dim` wide)."""

    def __init__(self, name, embedding_dim, storage_dim, dtype, key_dtype, tables, column_dims, seed,
                 padding_idx=None):
        if name in _STORES:
            raise RuntimeError("Can't create an embedding with same name of an existing embedding, the name: %s"
                               % name)
        if storage_dim < embedding_dim:
            raise ValueError("one_embedding '%s': storage_dim %d is smaller than embedding_dim %d"
                             % (name, storage_dim, embedding_dim))
        self.name, self.embedding_dim, self.storage_dim = name, int(embedding_dim), int(storage_dim)
        self.dtype, self.key_dtype = np.dtype(dtype), np.dtype(key_dtype)
        self.tables, self.column_dims, self.seed = tables, list(column_dims), int(seed)
        self.padding_idx = padding_idx
        self.index = {}
        self.keys = np.zeros(0, self.key_dtype)
        self.lines = np.zeros((0, self.storage_dim), self.dtype)
        self.states = ()  # the constant initial values of the optimizer states a new line gets
        self.pending = None  # eager: (unique keys, summed gradient rows) waiting for Optimizer.step()
        self.shadow = lambda: None  # the owning module's current shadow parameter (to_global replaces it)
        _STORES[name] = self

    def __len__(self):
        return len(self.index)

    # --- rows ------------------------------------------------------------------------------------------------
    def rows_of(self, keys, table_ids):
        """Row of each (unique) key, inserting the missing ones with their initial lines."""
        keys = np.asarray(keys)
        rows = np.fromiter((self.index.get(k, -1) for k in keys.tolist()), np.int64, len(keys))
        missing = np.nonzero(rows < 0)[0]
        if missing.size:
            new_keys = keys[missing]
            new = oe_k.initial_lines(np, new_keys, np.asarray(table_ids)[missing], self.tables, self.column_dims,
                                     self.states, self.storage_dim, self.seed, self.dtype)
            start = len(self.keys)
            self.keys = np.concatenate([self.keys, new_keys.astype(self.key_dtype)])
            self.lines = np.concatenate([self.lines, new])
            for i, k in enumerate(new_keys.tolist()):
                self.index[k] = start + i
            rows[missing] = np.arange(start, start + missing.size)
        return rows

    def items(self):
        """(keys, lines) of every key, in insertion order (copies)."""
        return self.keys.copy(), self.lines.copy()

    def replace(self, keys, lines):
        """The whole table replaced at once (a loaded snapshot)."""
        keys = np.asarray(keys, self.key_dtype)
        lines = np.asarray(lines, self.dtype).reshape(len(keys), self.storage_dim)
        self.keys, self.lines = keys.copy(), lines.copy()
        self.index = {k: i for i, k in enumerate(keys.tolist())}

    # --- lookup and gradient ----------------------------------------------------------------------------------
    def table_ids_for(self, ids, table_ids, num_tables):
        if table_ids is not None:
            return np.broadcast_to(np.asarray(table_ids), ids.shape).reshape(-1).astype(np.int64)
        # OneFlow's id_shuffle generates them: the i-th id of the flat batch is in table i % num_tables
        return np.arange(ids.size, dtype=np.int64) % num_tables

    def lookup(self, ids, table_ids, num_tables):
        flat = np.asarray(ids).reshape(-1)
        tids = self.table_ids_for(np.asarray(ids), table_ids, num_tables)
        if tids.size and (tids.min() < 0 or tids.max() >= num_tables):
            raise ValueError("one_embedding '%s': table_ids must be in [0, %d), got %d..%d"
                             % (self.name, num_tables, tids.min(), tids.max()))
        uniq, inverse = oe_k.unique_with_inverse(np, flat)
        first = np.zeros(len(uniq), np.int64)
        first[inverse[::-1]] = np.arange(len(flat))[::-1]
        rows = self.rows_of(uniq, tids[first])
        out = self.lines[rows[inverse], :self.embedding_dim].copy()
        if self.padding_idx is not None:
            out[flat == self.padding_idx] = 0
        return out.reshape(tuple(np.shape(ids)) + (self.embedding_dim,))

    def gradient_rows(self, ids, dy):
        """(unique keys, summed gradient of each): repeated ids' gradients add up; padding_idx's get none."""
        flat = np.asarray(ids).reshape(-1)
        dy = np.asarray(dy).reshape(len(flat), self.embedding_dim)
        if self.padding_idx is not None:
            keep = flat != self.padding_idx
            flat, dy = flat[keep], dy[keep]
        uniq, inverse = oe_k.unique_with_inverse(np, flat)
        return uniq, oe_k.segment_sum(np, dy, inverse, len(uniq))

    def add_pending(self, keys, grads):
        if self.pending is None:
            self.pending = (keys, grads)
            return
        all_keys = np.concatenate([self.pending[0], keys])
        uniq, inverse = oe_k.unique_with_inverse(np, all_keys)
        self.pending = (uniq, oe_k.segment_sum(np, np.concatenate([self.pending[1], grads]), inverse, len(uniq)))

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

    def apply_update(self, keys, grads, leaf):
        """Updates the lines of `keys` with the summed gradients `grads` by `leaf` (an optimizer group with the
        compiled step's protocol: `kind`, `states`, `state_specs`, `update_scaled`): the dense optimizer's own
        formula on the rows looked up."""
        self.check_line_size(leaf.kind if leaf.kind != "piece" else _piece_kind(leaf))
        rows = np.fromiter((self.index[k] for k in np.asarray(keys).tolist()), np.int64, len(keys))
        d = self.embedding_dim
        block = self.lines[rows]
        w = block[:, :d].copy()
        states = [block[:, d * (i + 1):d * (i + 2)].copy() for i in range(len(leaf.states))]
        leaf.update_scaled(np, w, grads.astype(self.dtype), states, lr=float(leaf.group["lr"]), step=None,
                           weight_decay=0.0)
        block[:, :d] = w
        for i, s in enumerate(states):
            block[:, d * (i + 1):d * (i + 2)] = s
        self.lines[rows] = block

    def bind_optimizer(self, leaf):
        """Checks that a line holds `leaf`'s states (OneFlow's line_size check) and makes new keys' lines start
        with their initial values."""
        self.check_line_size(leaf.kind if leaf.kind != "piece" else _piece_kind(leaf))
        self.states = self.new_line_states(leaf)

    def new_line_states(self, leaf):
        """The constant initial values of `leaf`'s states (OneFlow's state_initializer: zeros for momentum and
        Adam, initial_accumulator_value for Adagrad), for keys first seen from now on and rows never updated."""
        own = getattr(getattr(leaf, "optimizer", None), "embedding_state_init", None)
        if own is not None:
            return tuple(own(leaf.group, s) for s in leaf.states)
        return tuple(v for _, v in leaf.state_specs(self.name, (self.embedding_dim,), self.dtype))


def _piece_kind(leaf):
    name = type(leaf.optimizer).__name__.lower()
    if name not in _LINE_FACTOR:
        raise NotImplementedError("only support sgd, adam, adagrad and ftrl")
    return name


def store(name):
    s = _STORES.get(name)
    if s is None:
        raise RuntimeError("Can not find embedding: %s" % name)
    return s


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


def _bind_states(op, dev):
    """In a training graph: keys first seen from now on get the graph's optimizer states' initial values
    (OneFlow's state_initializer: zeros for momentum and Adam, initial_accumulator_value for Adagrad)."""
    if op.attrs["in_graph"]:
        s = store(op.attrs["embedding_name"])
        leaf = graph_leaf(dev.job, s.shadow(), s.name, required=False)
        if leaf is not None:
            s.bind_optimizer(leaf)


def _lookup_build(op, dev):
    name, num_tables = op.attrs["embedding_name"], op.attrs["num_tables"]
    _bind_states(op, dev)

    def run(shadow, ids, *table_ids):
        s = store(name)
        host = [np.asarray(devices.to_host(a)) for a in (ids,) + table_ids]
        out = s.lookup(host[0], host[1] if table_ids else None, num_tables)
        return dev.xp.asarray(out)
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


def _grad_build(op, dev):
    name, in_graph = op.attrs["embedding_name"], op.attrs["in_graph"]
    _bind_states(op, dev)

    def run(shadow, ids, dy):
        s = store(name)
        keys, grads = s.gradient_rows(np.asarray(devices.to_host(ids)), np.asarray(devices.to_host(dy)))
        if in_graph:
            s.apply_update(keys, grads, graph_leaf(dev.job, s.shadow(), name))
        else:
            s.add_pending(keys, grads)
        return dev.xp.zeros(shadow.shape, dtype=shadow.dtype)
    return run


def _broadcast_sig(op):
    return [(tuple([S.B] * len(op.inputs)), tuple([S.B] * len(op.outputs)))]


register(OpDef("one_embedding_fused_lookup", infer=_lookup_meta, build=_lookup_build, grad=_lookup_grad,
               sbp=_broadcast_sig, stateful=True))
register(OpDef("one_embedding_fused_lookup_grad", infer=_grad_meta, build=_grad_build, sbp=_broadcast_sig,
               stateful=True))
