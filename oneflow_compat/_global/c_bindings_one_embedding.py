"""`oneflow._C`'s one_embedding internals (OneFlow v0.9.0 functional_api.yaml): the pieces OneFlow 0.9's eager
`one_embedding.Optimizer` step is made of (python/oneflow/one_embedding.py `shuffle_and_lookup`, `*_update`):

* `one_embedding_unique_key_value_pair` / `one_embedding_id_shuffle`: the unique ids (and their table ids) a rank
  asks for, and, over ranks, the ids each rank's shard owns (key k on rank xxh64(k) % world, as the lookup shards
  them); `one_embedding_embedding_shuffle` / `one_embedding_embedding_gradient_shuffle` move the rows (the
  embeddings out, the summed gradients back) along the same exchange.
* `one_embedding_lookup` / `one_embedding_embedding_put`: the lines (embedding and optimizer states, line_size
  wide) of the named embedding's shard on this rank (`ops/one_embedding_ops.EmbeddingTable`), new keys initialized
  by their table's initializers and the constant `state_initializer`; `one_embedding_fused_lookup_grad` queues the
  gradient of a fused lookup for the Optimizer's step, as the lookup's backward does.
* `one_embedding_{sgd,adam,adagrad,ftrl}_update`: the updated lines of the unique rows (the first num_unique ones;
  all unchanged when skip_if is non-zero), with the formulas of OneFlow's model_update_kernel_util.h (SGD /
  Momentum, Adam, Adagrad, Ftrl functors) and one_embedding_update_kernels.cu (the line layout [embedding, state 1,
  state 2], Adagrad's learning-rate decay), composed from registered ops: they run eagerly, on global tensors and
  inside nn.Graph (as OneFlow's tests run them).

On one rank (or inside nn.Graph) the unique and the shuffles compose registered ops (the unique op, gathers and
segment sums); across ranks, and for the lookup and the put, they read values (eager only; OneFlow 0.9's eager
Optimizer step is where they run): the shuffles exchange each rank's padded pieces with one all-gather (every rank keeps what is addressed to it).
Index outputs are int32 and padded to OneFlow's shapes (the ids' count, or world times it); only the first
num_unique / received entries are meaningful, as in OneFlow.
"""
import json
import os

import numpy as np

from oneflow_compat._global import comm_ops as _comm
from oneflow_compat._global import creation as _creation
from oneflow_compat._global import dispatch as _dispatch
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global import functional as _F
from oneflow_compat._global import lazy as _lazy
from oneflow_compat._global import tensor_functions as _T
from oneflow_compat._global.tensor import Tensor
from oneflow_compat.ir import dtypes as _dtypes
from oneflow_compat.kernels import one_embedding as _oe_k
from oneflow_compat.ops import one_embedding_ops as _oe_ops
from oneflow_compat.runtime import global_eager as _ge


def _tensor(x, fn, arg):
    if not isinstance(x, Tensor):
        raise TypeError("%s(): argument '%s' must be Tensor, not %s" % (fn, arg, type(x).__name__))
    if x.is_global:
        raise RuntimeError("%s: '%s' must be a local tensor (this rank's piece), got a global one" % (fn, arg))
    return x


def _np(x):
    return np.asarray(x.numpy())


def _local(array, like, dtype=None):
    return _creation.tensor(np.ascontiguousarray(array), dtype=dtype, device=like.device)


def _pad(a, n):
    out = np.zeros((n,) + a.shape[1:], a.dtype)
    out[:len(a)] = a
    return out


def _world():
    return _ge.world_size(), _ge.rank()


def _all_gather(array):
    t = _creation.tensor(np.ascontiguousarray(array))
    parts = [None] * _world()[0]
    _comm.all_gather(parts, t)
    return np.stack([_np(p) for p in parts])


def _gather(array):
    """Every rank's `array` (their lengths may differ: each padded to the longest), stacked (world, longest, ...)."""
    world, _ = _world()
    if world == 1:
        return array[None]
    longest = int(_all_gather(np.array([len(array)], np.int64)).max())
    return _all_gather(_pad(array, longest))


def _table_ids(ids, table_ids, num_tables, fn):
    if table_ids is None:
        return np.arange(ids.size, dtype=np.int64) % int(num_tables)  # OneFlow: table i % num_tables
    t = np.broadcast_to(_np(_tensor(table_ids, fn, "table_ids")), ids.shape).reshape(-1).astype(np.int64)
    if t.size and (t.min() < 0 or t.max() >= int(num_tables)):
        raise ValueError("%s: table_ids must be in [0, %d), got %d..%d" % (fn, num_tables, t.min(), t.max()))
    return t


def _row_index(t):
    """0, 1, 2, ... as int32 shaped as the 1-D tensor t (composed: also inside nn.Graph)."""
    return _F.cast(_F.sub(_T.cumsum(_F.ones_like(_F.cast(t, _dtypes.float32)), 0), 1.0), _dtypes.int32)


def _unique_composed(fn, ids, table_ids, num_tables):
    """(num_unique, unique ids, their table ids, inverse) of one rank's ids, from the registered unique op (first-seen
    order, padded to the ids' count), so it runs eagerly and inside nn.Graph alike."""
    flat = _F.reshape(_tensor(ids, fn, "ids"), (-1,))
    uniq, inverse, counts, num = apply_op("unique_with_counts", [flat], {"out_idx": _dtypes.int32})
    if table_ids is None:
        i = _F.cast(_row_index(flat), _dtypes.float32)  # table i % num_tables
        tids = _F.sub(i, _F.mul(_F.floor(_F.div(i, float(num_tables))), float(num_tables)))
    else:
        if _lazy.current() is None:  # eagerly the values are there to check
            _table_ids(_np(flat), table_ids, num_tables, fn)
        tids = _F.cast(_F.reshape(_T.expand(_tensor(table_ids, fn, "table_ids"), *ids.shape), (-1,)),
                       _dtypes.float32)
    # a key's table id: its occurrences name one table (OneFlow's hash table keeps one of them): their mean
    summed = apply_op("unsorted_segment_sum", [tids, inverse], {"axis": 0, "num_segments": int(flat.shape[0])})
    per_key = _F.div(summed, _F.clamp(_F.cast(counts, _dtypes.float32), min=1.0))
    return num, uniq, _F.cast(_F.round(per_key), _dtypes.int32), _F.reshape(inverse, tuple(ids.shape))


def _quantized_comm(rows):
    """OneFlow's ONEFLOW_ONE_EMBEDDING_ENABLE_QUANTIZED_COMM=1 (embedding size < 1025): the rows the shuffles move
    travel as int8, each scaled by its absolute maximum (kept in the rows' dtype) / 127 and rounded half away from
    zero (one_embedding_embedding_shuffle / gradient_shuffle kernels, v0.9.0)."""
    if os.environ.get("ONEFLOW_ONE_EMBEDDING_ENABLE_QUANTIZED_COMM", "0").lower() not in ("1", "true") or \
            int(rows.shape[-1]) >= 1025:
        return rows
    f = _F.cast(rows, _dtypes.float32)
    amax = _F.cast(_F.cast(_T.amax(_F.abs(f), -1, True), rows.dtype), _dtypes.float32)
    safe = _F.where(_F.gt(amax, 0.0), amax, _F.add(_F.mul(amax, 0.0), 1.0))
    scaled = _F.mul(f, _F.div(127.0, safe))
    q = _F.mul(_F.sign(scaled), _F.floor(_F.add(_F.abs(scaled), 0.5)))  # round half away from zero
    q = _F.cast(_F.cast(_F.clamp(q, min=-128.0, max=127.0), _dtypes.int8), _dtypes.float32)
    return _F.cast(_F.mul(q, _F.div(safe, 127.0)), rows.dtype)


def _single_rank():
    return _world()[0] == 1 or _lazy.current() is not None


def one_embedding_unique_key_value_pair(keys, values=None, num_tables=1, embedding_name=""):
    """(num_unique, unique_keys, unique_values (their table ids), inverse_indices): keys == unique_keys[inverse]
    (this rank's keys; without values the i-th key's table is i % num_tables)."""
    return _unique_composed("one_embedding_unique_key_value_pair", keys, values, num_tables)


def _shuffle_plan(ids, tids):
    """This rank's side of the id exchange: (unique ids in partition order, their table ids, the partition of each,
    inverse of ids into them, counts per destination rank)."""
    world, _ = _world()
    uniq, inverse = _oe_k.unique_with_inverse(np, ids)
    first = np.zeros(len(uniq), np.int64)
    first[inverse[::-1]] = np.arange(len(ids))[::-1]
    part = _oe_k.shard_of(np, uniq, world) if world > 1 else np.zeros(len(uniq), np.int64)
    order = np.argsort(part, kind="stable")
    position = np.empty_like(order)
    position[order] = np.arange(len(order))
    counts = np.bincount(part, minlength=world).astype(np.int64)
    return uniq[order], tids[first][order], position[inverse], counts


def one_embedding_id_shuffle(ids, table_ids=None, num_tables=1, embedding_name=""):
    """(num_unique_matrix (world * world: rank r's unique ids owned by rank p at r * world + p),
    inverse_unique_partition_indices, cur_rank_num_unique, cur_rank_unique_ids, cur_rank_unique_table_ids,
    cur_rank_inverse_indices (each id received, in source-rank order, into cur_rank_unique_ids))."""
    fn = "one_embedding_id_shuffle"
    if _single_rank():  # every id is this rank's: the unique op's outputs (composed, also inside nn.Graph)
        num, uniq, tids, inverse = _unique_composed(fn, ids, table_ids, num_tables)
        rows = _row_index(uniq)
        cur_inverse = _F.where(_F.lt(rows, num), rows, _F.mul(rows, 0))
        return num, inverse, num, uniq, tids, cur_inverse
    flat = _np(_tensor(ids, fn, "ids")).reshape(-1)
    tids = _table_ids(flat, table_ids, num_tables, fn)
    world, rank = _world()
    n = len(flat)
    uniq, utids, inverse, counts = _shuffle_plan(flat, tids)
    matrix = _gather(counts)  # (world, world)
    all_ids, all_tids = _gather(_pad(uniq, n)), _gather(_pad(utids, n))
    offsets = np.concatenate([np.zeros((world, 1), np.int64), np.cumsum(matrix, 1)], 1)
    recv_ids = np.concatenate([all_ids[r, offsets[r, rank]:offsets[r, rank + 1]] for r in range(world)])
    recv_tids = np.concatenate([all_tids[r, offsets[r, rank]:offsets[r, rank + 1]] for r in range(world)])
    cur, cur_inverse = _oe_k.unique_with_inverse(np, recv_ids)
    first = np.zeros(len(cur), np.int64)
    first[cur_inverse[::-1]] = np.arange(len(recv_ids))[::-1]
    size = n * world
    return (_local(matrix.reshape(-1).astype(np.int32), ids),
            _local(inverse.astype(np.int32).reshape(tuple(ids.shape)), ids),
            _local(np.array([len(cur)], np.int32), ids), _local(_pad(cur.astype(flat.dtype), size), ids),
            _local(_pad(recv_tids[first].astype(np.int32), size), ids),
            _local(_pad(cur_inverse.astype(np.int32), size), ids))


def _exchange_plan(num_unique_matrix):
    world, rank = _world()
    matrix = _np(num_unique_matrix).reshape(world, world).astype(np.int64)
    return world, rank, matrix


def one_embedding_embedding_shuffle(cur_rank_embeddings, num_unique_matrix, cur_rank_inverse_indices,
                                    inverse_unique_partition_indices, embedding_name=""):
    """The rows of this rank's ids (inverse_unique_partition_indices' shape + (d,)), from the owner ranks'
    cur_rank_embeddings (the rows of their cur_rank_unique_ids)."""
    fn = "one_embedding_embedding_shuffle"
    if _single_rank():  # the rows of the rank's own unique ids: two gathers (composed, also inside nn.Graph)
        emb = _tensor(cur_rank_embeddings, fn, "cur_rank_embeddings")
        inverse = _tensor(inverse_unique_partition_indices, fn, "inverse_unique_partition_indices")
        rows = apply_op("gather", [emb, _F.cast(cur_rank_inverse_indices, _dtypes.int64)], {"axis": 0})
        return apply_op("gather", [_quantized_comm(rows), _F.cast(inverse, _dtypes.int64)], {"axis": 0})
    emb = _np(_tensor(cur_rank_embeddings, fn, "cur_rank_embeddings"))
    world, rank, matrix = _exchange_plan(num_unique_matrix)
    received = int(matrix[:, rank].sum())
    rows = emb[_np(cur_rank_inverse_indices)[:received]]  # in received order: source rank 0's first
    every = _gather(_pad(rows, emb.shape[0]))
    mine = []
    for p in range(world):  # rank p sent rank r's rows after those of ranks < r
        start = int(matrix[:rank, p].sum())
        mine.append(every[p, start:start + matrix[rank, p]])
    unique_rows = np.concatenate(mine) if mine else np.zeros((0,) + emb.shape[1:], emb.dtype)
    inverse = _np(_tensor(inverse_unique_partition_indices, fn, "inverse_unique_partition_indices")).astype(np.int64)
    return _local(unique_rows[inverse], cur_rank_embeddings)


def one_embedding_embedding_gradient_shuffle(embedding_grad, num_unique_matrix, cur_rank_inverse_indices,
                                             inverse_unique_partition_indices, embedding_name=""):
    """The summed gradient of each of this rank's cur_rank_unique_ids ((world * n, d), zero past
    cur_rank_num_unique), from every rank's embedding_grad of its ids."""
    fn = "one_embedding_embedding_gradient_shuffle"
    if _single_rank():  # the ids' gradients summed per unique id, then per row of cur_rank_unique_ids (composed)
        grad = _tensor(embedding_grad, fn, "embedding_grad")
        inverse = _F.reshape(_tensor(inverse_unique_partition_indices, fn, "inverse_unique_partition_indices"), (-1,))
        n = int(inverse.shape[0])
        g = _F.reshape(grad, (n, int(grad.shape[-1])))
        summed = _quantized_comm(apply_op("unsorted_segment_sum", [g, inverse], {"axis": 0, "num_segments": n}))
        return apply_op("unsorted_segment_sum", [summed, _F.reshape(cur_rank_inverse_indices, (-1,))],
                        {"axis": 0, "num_segments": n})
    g = _np(_tensor(embedding_grad, fn, "embedding_grad"))
    world, rank, matrix = _exchange_plan(num_unique_matrix)
    inverse = _np(_tensor(inverse_unique_partition_indices, fn, "inverse_unique_partition_indices")).astype(
        np.int64).reshape(-1)
    n = len(inverse)
    d = g.shape[-1]
    g = g.reshape(n, d)
    mine = int(matrix[rank].sum())
    summed = _oe_k.segment_sum(np, g, inverse, mine)  # in partition order
    every = _gather(_pad(summed, n))
    recv = []
    for r in range(world):
        start = int(matrix[r, :rank].sum())
        recv.append(every[r, start:start + matrix[r, rank]])
    recv = np.concatenate(recv) if recv else np.zeros((0, d), g.dtype)
    cur_inverse = _np(cur_rank_inverse_indices).astype(np.int64)[:len(recv)]
    num_cur = int(cur_inverse.max()) + 1 if len(cur_inverse) else 0
    out = _pad(_oe_k.segment_sum(np, recv, cur_inverse, num_cur), n * world)
    return _local(out, embedding_grad)


# --- the named embedding's lines on this rank ----------------------------------------------------------------------
def _store(embedding_name, fn):
    world, rank = _world()
    try:
        table = _oe_ops.table_of(embedding_name, rank)
    except RuntimeError:
        raise RuntimeError("%s: no one_embedding named '%s' on rank %d (make its MultiTableEmbedding first)"
                           % (fn, embedding_name, rank)) from None
    return table, table.shard(world, rank if world > 1 else 0)


def one_embedding_lookup(num_unique_ids, unique_ids, table_ids, dtype, embedding_dtype, line_size, embedding_size,
                         embedding_name, embedding_tables, state_initializer, seed=0):
    """The lines (unique_ids' count, line_size) of the first num_unique ids (zeros after), new keys given their
    initial lines (the table's initializers, then state_initializer's constants)."""
    fn = "one_embedding_lookup"
    table, store = _store(embedding_name, fn)
    if int(line_size) != table.storage_dim or int(embedding_size) != table.embedding_dim:
        raise RuntimeError("%s: embedding '%s' holds lines of %d (embedding %d), asked for %d (%d)" % (
            fn, embedding_name, table.storage_dim, table.embedding_dim, line_size, embedding_size))
    if state_initializer:
        inits = json.loads(state_initializer)
        if any(i.get("type") != "constant" for i in inits):
            raise ValueError("%s: state_initializer must hold constant initializers, got %r" % (fn, state_initializer))
        table.states = tuple(float(i["value"]) for i in inits)
    n = int(_np(_tensor(num_unique_ids, fn, "num_unique_ids")).reshape(-1)[0])
    ids = _np(_tensor(unique_ids, fn, "unique_ids")).reshape(-1)
    tids = _np(_tensor(table_ids, fn, "table_ids")).reshape(-1)
    rows = store.rows_of(ids[:n], tids[:n].astype(np.int64))
    return _local(_pad(store.lines[rows], len(ids)), unique_ids, dtype=dtype)


def one_embedding_embedding_put(num_unique_ids, unique_ids, unique_embeddings, embedding_name, line_size):
    """The first num_unique lines written into the named embedding's store (returns None)."""
    fn = "one_embedding_embedding_put"
    table, store = _store(embedding_name, fn)
    if int(line_size) != table.storage_dim:
        raise RuntimeError("%s: embedding '%s' holds lines of %d, got line_size %d"
                           % (fn, embedding_name, table.storage_dim, line_size))
    n = int(_np(_tensor(num_unique_ids, fn, "num_unique_ids")).reshape(-1)[0])
    ids = _np(_tensor(unique_ids, fn, "unique_ids")).reshape(-1)[:n]
    lines = _np(_tensor(unique_embeddings, fn, "unique_embeddings"))[:n]
    rows = store.rows_of(ids, np.zeros(n, np.int64))
    store.lines[rows] = lines.astype(table.dtype)


def one_embedding_fused_lookup_grad(ids, embedding_grad, embedding_name, line_size, embedding_size):
    """The backward of a fused lookup: the summed gradient of each id queued for the Optimizer's step (None)."""
    fn = "one_embedding_fused_lookup_grad"
    _, rank = _world()
    table, _ = _store(embedding_name, fn)
    shadow = table.shadow()
    if shadow is None:
        raise RuntimeError("%s: embedding '%s' has no live module" % (fn, embedding_name))
    attrs = {"embedding_name": embedding_name, "embedding_size": int(embedding_size), "line_size": int(line_size),
             "num_tables": len(table.tables), "dtype": table.dtype.name, "seed": table.seed,
             "in_graph": _lazy.current() is not None}
    _dispatch.apply_op("one_embedding_fused_lookup_grad", [shadow, ids, embedding_grad], attrs)


# --- the sparse updates: composed from registered ops (eager, global and inside nn.Graph alike) -------------------
def _scalar(t, fn, arg):
    """An optional 1-element tensor argument, as a float tensor broadcasting over the rows."""
    _check_any(t, fn, arg)
    return _F.cast(_F.reshape(t, (1, 1)), _dtypes.float32) if t.dtype != _dtypes.float32 else _F.reshape(t, (1, 1))


def _check_any(t, fn, arg):
    if not isinstance(t, Tensor):
        raise TypeError("%s(): argument '%s' must be Tensor, not %s" % (fn, arg, type(t).__name__))
    return t


def _update_inputs(fn, num_unique_ids, unique_embeddings, embedding_grad, line_size, embedding_size, factor):
    lines = _check_any(unique_embeddings, fn, "unique_embeddings")
    g = _check_any(embedding_grad, fn, "embedding_grad")
    _check_any(num_unique_ids, fn, "num_unique_ids")
    d, width = int(embedding_size), int(line_size)
    if lines.ndim != 2 or lines.shape[-1] != width or width < factor * d:
        raise RuntimeError("%s: unique_embeddings must be (n, line_size %d) with line_size >= %d * embedding_size "
                           "%d, got %s" % (fn, width, factor, d, tuple(lines.shape)))
    if tuple(g.shape) != (lines.shape[0], d):
        raise RuntimeError("%s: embedding_grad must be (%d, embedding_size %d), got %s"
                           % (fn, lines.shape[0], d, tuple(g.shape)))
    blocks = [_T.narrow(lines, 1, i * d, d) for i in range(factor)]
    return lines, blocks, _F.cast(g, lines.dtype), d


def _scaled(fn, g, scale, down_scale_by_tensor):
    g = _F.mul(g, float(scale))
    return g if down_scale_by_tensor is None else _F.div(g, _scalar(down_scale_by_tensor, fn, "down_scale_by_tensor"))


def _lr(fn, learning_rate, learning_rate_val):
    return float(learning_rate_val) if learning_rate is None else _scalar(learning_rate, fn, "learning_rate")


def _finish(fn, lines, blocks, d, num_unique_ids, skip_if):
    """The updated blocks where the row is one of the first num_unique (the others as they were), unless skip_if."""
    width = lines.shape[1]
    if width > len(blocks) * d:
        blocks = blocks + [_T.narrow(lines, 1, len(blocks) * d, width - len(blocks) * d)]
    new = _F.cat(blocks, dim=1) if len(blocks) > 1 else blocks[0]
    row = _F.sub(_T.cumsum(_F.ones_like(_T.narrow(lines, 1, 0, 1)), 0), 1.0)  # (n, 1): 0, 1, 2, ...
    keep = _F.lt(row, _F.cast(_F.reshape(num_unique_ids, (1, 1)), row.dtype))
    if skip_if is not None:
        keep = _T.logical_and(keep, _F.eq(_F.reshape(_check_any(skip_if, fn, "skip_if"), (1, 1)), 0))
    return _F.where(keep, new, lines)


def one_embedding_sgd_update(num_unique_ids, unique_embeddings, embedding_grad, learning_rate=None,
                             down_scale_by_tensor=None, skip_if=None, learning_rate_val=0.0, scale=1.0,
                             weight_decay=0.0, momentum=0.0, line_size=0, embedding_size=0, embedding_name=""):
    """SGD (momentum 0) or Momentum (the line's second block the buffer): SGDUpdateFunctor / MomentumUpdateFunctor."""
    fn = "one_embedding_sgd_update"
    factor = 1 if momentum == 0 else 2
    lines, blocks, g, d = _update_inputs(fn, num_unique_ids, unique_embeddings, embedding_grad, line_size,
                                         embedding_size, factor)
    lr, wd = _lr(fn, learning_rate, learning_rate_val), float(weight_decay)
    g = _scaled(fn, g, scale, down_scale_by_tensor)
    w = blocks[0]
    if momentum == 0:
        blocks = [_F.sub(w, _F.mul(_F.add(g, _F.mul(w, wd)), lr))]
    else:
        buf = _F.add(_F.mul(blocks[1], float(momentum)), g)
        blocks = [_F.sub(_F.sub(w, _F.mul(buf, lr)), _F.mul(_F.mul(w, wd), lr)), buf]
    return _finish(fn, lines, blocks, d, num_unique_ids, skip_if)


def one_embedding_adam_update(num_unique_ids, unique_embeddings, embedding_grad, learning_rate=None,
                              down_scale_by_tensor=None, skip_if=None, bias_correction1=None, bias_correction2=None,
                              learning_rate_val=0.0, scale=1.0, weight_decay=0.0, beta1=0.9, beta2=0.999,
                              bias_correction1_val=1.0, bias_correction2_val=1.0, epsilon=1e-8,
                              do_bias_correction=True, line_size=0, embedding_size=0, embedding_name=""):
    """AdamUpdateFunctor over [embedding, m, v] lines."""
    fn = "one_embedding_adam_update"
    lines, (w, m0, v0), g, d = _update_inputs(fn, num_unique_ids, unique_embeddings, embedding_grad, line_size,
                                              embedding_size, 3)
    lr = _lr(fn, learning_rate, learning_rate_val)
    g = _scaled(fn, g, scale, down_scale_by_tensor)
    if do_bias_correction:
        bc1 = _scalar(bias_correction1, fn, "bias_correction1") if bias_correction1 is not None else \
            float(bias_correction1_val)
        bc2 = _scalar(bias_correction2, fn, "bias_correction2") if bias_correction2 is not None else \
            float(bias_correction2_val)
    else:
        bc1 = bc2 = 1.0
    b1, b2 = float(beta1), float(beta2)
    m = _F.add(_F.mul(m0, b1), _F.mul(g, 1 - b1))
    v = _F.add(_F.mul(v0, b2), _F.mul(_F.square(g), 1 - b2))
    sqrt_bc2 = _F.sqrt(bc2) if isinstance(bc2, Tensor) else bc2 ** 0.5
    denom = _F.add(_F.div(_F.sqrt(v), sqrt_bc2), float(epsilon))
    step_size = _F.mul(_F.reciprocal(bc1), lr) if isinstance(bc1, Tensor) else \
        (_F.div(lr, bc1) if isinstance(lr, Tensor) else lr / bc1)
    step = _F.mul(_F.div(m, denom), step_size)
    new_w = _F.sub(_F.sub(w, step), _F.mul(_F.mul(w, float(weight_decay)), lr))
    return _finish(fn, lines, [new_w, m, v], d, num_unique_ids, skip_if)


def one_embedding_adagrad_update(num_unique_ids, unique_embeddings, embedding_grad, learning_rate=None,
                                 down_scale_by_tensor=None, skip_if=None, train_step=None, train_step_val=1,
                                 learning_rate_val=0.0, scale=1.0, weight_decay=0.0, lr_decay=0.0, epsilon=1e-10,
                                 line_size=0, embedding_size=0, embedding_name=""):
    """AdagradUpdateFunctor over [embedding, sum] lines, lr / (1 + (train_step - 1) * lr_decay) (a train_step
    tensor counts from 0: its step is the value + 1)."""
    fn = "one_embedding_adagrad_update"
    lines, (w, acc0), g, d = _update_inputs(fn, num_unique_ids, unique_embeddings, embedding_grad, line_size,
                                            embedding_size, 2)
    lr = _lr(fn, learning_rate, learning_rate_val)
    if train_step is not None:
        lr = _F.mul(_F.reciprocal(_F.add(_F.mul(_scalar(train_step, fn, "train_step"), float(lr_decay)), 1.0)), lr)
    else:
        lr = _F.div(lr, 1 + (int(train_step_val) - 1) * float(lr_decay)) if isinstance(lr, Tensor) else \
            lr / (1 + (int(train_step_val) - 1) * float(lr_decay))
    g = _scaled(fn, g, scale, down_scale_by_tensor)
    acc = _F.add(acc0, _F.square(g))
    new_w = _F.sub(_F.sub(w, _F.mul(_F.div(g, _F.add(_F.sqrt(acc), float(epsilon))), lr)),
                   _F.mul(_F.mul(w, float(weight_decay)), lr))
    return _finish(fn, lines, [new_w, acc], d, num_unique_ids, skip_if)


def one_embedding_ftrl_update(num_unique_ids, unique_embeddings, embedding_grad, learning_rate=None,
                              down_scale_by_tensor=None, skip_if=None, learning_rate_val=0.0, scale=1.0,
                              weight_decay=0.0, lr_power=-0.5, lambda1=0.0, lambda2=0.0, beta=0.0, line_size=0,
                              embedding_size=0, embedding_name=""):
    """FtrlUpdateFunctor over [embedding, accumulate, z] lines."""
    fn = "one_embedding_ftrl_update"
    lines, (w, acc, z), g, d = _update_inputs(fn, num_unique_ids, unique_embeddings, embedding_grad, line_size,
                                              embedding_size, 3)
    lr = _lr(fn, learning_rate, learning_rate_val)
    g = _scaled(fn, g, scale, down_scale_by_tensor)
    next_acc = _F.add(acc, _F.square(g))
    p, next_p = _F.pow(acc, float(lr_power)), _F.pow(next_acc, float(lr_power))
    sigma = _F.div(_F.sub(next_p, p), lr)
    new_z = _F.sub(_F.add(z, g), _F.mul(sigma, w))
    l1 = float(lambda1)
    shrunk = _F.div(_F.sub(_F.mul(_F.sign(new_z), l1), new_z),
                    _F.add(_F.div(_F.add(next_p, float(beta)), lr), float(lambda2)))
    shrunk = _F.sub(shrunk, _F.mul(_F.mul(w, float(weight_decay)), lr))
    new_w = _F.where(_F.ge(_F.abs(new_z), l1), shrunk, _F.mul(w, 0.0))
    return _finish(fn, lines, [new_w, next_acc, new_z], d, num_unique_ids, skip_if)
