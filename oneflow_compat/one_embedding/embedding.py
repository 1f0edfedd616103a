"""`flow.one_embedding.MultiTableEmbedding` / `MultiTableMultiColumnEmbedding`, the eager `Optimizer` wrapper and
the persistent-table reader and writer (OneFlow 0.9: python/oneflow/one_embedding.py and
oneflow/api/python/framework/one_embedding.cpp at v0.9.0).

The embedding's lines live in an `ops.one_embedding_ops.EmbeddingStore` named by the embedding; its lookup is the
registered op `one_embedding_fused_lookup` (eager and inside nn.Graph), whose gradient op updates the rows looked up
with the graph's optimizer (the one holding the module's `shadow` parameter), or eagerly keeps the summed gradient
for `flow.one_embedding.Optimizer(optimizer, [embedding]).step()`, OneFlow 0.9's eager protocol.
"""
import datetime
import json
import os
import weakref

import numpy as np

from oneflow_compat import env as flow_env
from oneflow_compat.ir import dtypes
from oneflow_compat.kernels import one_embedding as oe_k
from oneflow_compat.ops import one_embedding_ops as oe_ops
from oneflow_compat._global import creation, dispatch, lazy
from oneflow_compat._global.modules import Module, Parameter
from oneflow_compat._global.tensor import Tensor
from oneflow_compat.one_embedding import options as opts
from oneflow_compat.one_embedding.persistent_table import PersistentTable, rank_paths


def _np_dtype(dtype, what):
    try:
        return np.dtype(dtypes.convert_oneflow_dtype_to_numpy_dtype(dtype))
    except (TypeError, KeyError, AttributeError):
        raise TypeError("one_embedding: %s must be a oneflow dtype, got %r" % (what, dtype)) from None


def _tables(tables, column_dims, default_initializer):
    """OneFlow's _init: every table as a list of column options, one per column."""
    if tables is None:
        init = default_initializer or {"type": "normal", "mean": 0, "std": 0.05}
        opts.check_initializer(init)
        return [[opts.make_column_options(init) for _ in column_dims]]
    if not isinstance(tables, (list, tuple)):
        raise AssertionError("tables must be a list of table options, got %s" % type(tables).__name__)
    out = []
    for i, table in enumerate(tables):
        if not isinstance(table, dict):
            raise AssertionError("table %d must be a dict made by make_table_options" % i)
        if "columns" in table:
            if "initializer" in table:
                raise AssertionError("table %d has both columns and an initializer" % i)
            columns = table["columns"]
            if len(columns) != len(column_dims):
                raise AssertionError("table %d has %d columns, the embedding %d" % (i, len(columns),
                                                                                   len(column_dims)))
            for c in columns:
                if not isinstance(c, dict) or "initializer" not in c:
                    raise AssertionError("table %d: every column needs an initializer" % i)
                opts.check_initializer(c["initializer"])
            out.append(list(columns))
        else:
            if "initializer" not in table:
                raise AssertionError("table %d has no initializer" % i)
            opts.check_initializer(table["initializer"])
            out.append([opts.make_column_options(table["initializer"]) for _ in column_dims])
    return out


_FOLDERS = weakref.WeakValueDictionary()  # this rank's table folder -> the live embedding using it


def one_embedding_fused_lookup(shadow, ids, table_ids, dtype, embedding_name, line_size, embedding_size,
                               is_full_cache, num_tables, embedding_tables, padding_idx=None, seed=0):
    """`flow._C.one_embedding_fused_lookup` (functional_api.yaml@v0.9.0): the rows of `ids` in the table of the
    embedding named `embedding_name` (made by a MultiTableEmbedding module on this rank, whose tables, seed and
    padding_idx it uses); a `table_ids` of a trailing shape of ids' is broadcast to it, as OneFlow's functor does."""
    if table_ids is not None:
        if not isinstance(table_ids, Tensor):
            table_ids = creation.tensor(np.asarray(table_ids), dtype=ids.dtype, device=ids.device) \
                if not ids.is_global else creation.tensor(np.asarray(table_ids), dtype=ids.dtype,
                                                          placement=ids.placement, sbp=ids.sbp)
        ts, is_ = tuple(table_ids.shape), tuple(ids.shape)
        if ts != is_:
            if len(ts) > len(is_):
                raise RuntimeError("table_ids num_axes should be less equal to ids num_axes, but got table_ids "
                                   "num_axes %d and ids num_axes %d" % (len(ts), len(is_)))
            if is_[len(is_) - len(ts):] != ts:
                raise RuntimeError("when table_ids's shape not equals ids shape, table_ids must be able to be "
                                   "broadcast to ids_shape but got table_ids_shape: %s, ids_shape: %s" % (ts, is_))
            table_ids = table_ids.expand(*is_)
    attrs = {"embedding_name": embedding_name, "embedding_size": int(embedding_size), "line_size": int(line_size),
             "num_tables": int(num_tables), "dtype": _np_dtype(dtype, "dtype").name, "seed": int(seed),
             "in_graph": lazy.current() is not None}
    inputs = [shadow, ids] + ([table_ids] if table_ids is not None else [])
    return dispatch.apply_op("one_embedding_fused_lookup", inputs, attrs)


class Embedding(Module):
    """OneFlow 0.9's one_embedding.Embedding: the base of the two public classes."""

    def __init__(self, name, embedding_dim, dtype, key_type, tables, store_options, default_initializer=None,
                 padding_idx=None, seed=0):
        super().__init__()
        self.dtype, self.key_type = dtype, key_type
        np_value, np_key = _np_dtype(dtype, "dtype"), _np_dtype(key_type, "key_type")
        if isinstance(embedding_dim, (list, tuple)):
            column_dims = [int(d) for d in embedding_dim]
        else:
            if not embedding_dim > 0:
                raise AssertionError("embedding_dim must be > 0, got %r" % (embedding_dim,))
            column_dims = [int(embedding_dim)]
        self.embedding_dim = sum(column_dims)
        if not isinstance(store_options, dict) or "kv_store" not in store_options:
            raise AssertionError("store_options must be made by make_*_store_options (no 'kv_store')")
        kv = store_options["kv_store"]
        caches = kv.get("caches", [])
        caches = [caches] if isinstance(caches, dict) else list(caches)
        if len(caches) > 2:
            raise AssertionError("at most 2 caches, got %d" % len(caches))
        for c in caches:
            opts.check_cache(c)
        table = kv.get("persistent_table")
        if not isinstance(table, dict) or "path" not in table:
            raise AssertionError("store_options' persistent_table needs a path")
        pbs = table.get("physical_block_size", 4096)
        if pbs not in (512, 4096):
            raise AssertionError("physical_block_size must be 512 or 4096, got %r" % (pbs,))
        if table.get("capacity_hint", 0) < 0:
            raise AssertionError("capacity_hint must be >= 0")
        self.world_size, self.rank_id = flow_env.get_world_size(), flow_env.get_rank()
        self.local_rank = flow_env.get_local_rank()
        self._persistent_path = table["path"]
        if isinstance(table["path"], (list, tuple)) and len(table["path"]) != self.world_size:
            raise AssertionError("persistent_path lists %d paths for %d ranks" % (len(table["path"]),
                                                                                 self.world_size))
        self.physical_block_size = pbs
        storage_dim = store_options.get("storage_dim", -1)
        self.storage_dim = int(storage_dim if storage_dim != -1 else store_options["size_factor"] * self.embedding_dim)
        self.embedding_name, self.seed, self.padding_idx = name, int(seed), padding_idx
        self.is_full_cache = bool(caches) and caches[0]["policy"] == "full"
        columns = _tables(tables, column_dims, default_initializer)
        self.num_tables = len(columns)
        self.embedding_tables = json.dumps({"tables": [{"columns": c} for c in columns],
                                            "column_dims": column_dims})
        self.key_value_store_options = json.dumps({"name": name, "key_type_size": np_key.itemsize,
                                                   "value_type_size": np_value.itemsize,
                                                   "value_type": str(dtype), "storage_dim": self.storage_dim,
                                                   "kv_store": kv, "parallel_num": self.world_size})
        self._np_key, self._np_value = np_key, np_value
        self._table = oe_ops.EmbeddingTable(name, self.rank_id, self.embedding_dim, self.storage_dim, np_value,
                                            np_key, columns, column_dims, self.seed, padding_idx)
        # OneFlow holds the table folder's LOCK for the store's life: two live embeddings never share a folder
        # (their snapshots of one name would overwrite each other's)
        folder = os.path.realpath(rank_paths(self._persistent_path, self.world_size)[self.rank_id])
        other = _FOLDERS.get(folder)
        if other is not None:
            raise ValueError("one_embedding '%s': persistent_path %s is the table folder of embedding '%s'; two "
                             "embeddings need different persistent paths" % (name, folder, other.embedding_name))
        _FOLDERS[folder] = self
        self.shadow = Parameter(creation.zeros(1))
        owner = weakref.ref(self)
        self._table.shadow = lambda: getattr(owner(), "shadow", None)
        self._eager_forward = False

    def forward(self, ids, table_ids=None):
        """Embedding lookup: `ids` (key_type), optional `table_ids` (the table of each id, ids' shape or
        broadcastable to it); without them, table i % num_tables for the i-th id of the flat batch."""
        if self.key_type != ids.dtype:
            raise AssertionError("ids data_type must equals key_type")
        if self.world_size > 1 and not ids.is_global:
            raise ValueError("one_embedding '%s': on %d ranks the table is sharded over the ranks: ids must be a "
                             "global tensor placed on all of them (ids.to_global(placement, sbp))"
                             % (self.embedding_name, self.world_size))
        tracing = lazy.current() is not None
        out = one_embedding_fused_lookup(self.shadow, ids, table_ids, self.dtype, self.embedding_name,
                                         self.storage_dim, self.embedding_dim, self.is_full_cache, self.num_tables,
                                         self.embedding_tables, self.padding_idx, self.seed)
        if out.requires_grad and not tracing:
            if self._eager_forward:
                raise ValueError("You are training without set embedding optimizer, Please add "
                                 "flow.one_embedding.Optimizer after optimizer.")
            self._eager_forward = True
        return out

    # --- snapshots -------------------------------------------------------------------------------------------
    def _shard_tables(self, read_only=False):
        """[(shard, its persistent table)] of this process: shard d of a table sharded over P devices lives in
        persistent_path's d-th rank folder (ROOT/<d>-<P>, or the list's d-th path)."""
        shards = self._table.local_shards(self.world_size)
        paths = rank_paths(self._persistent_path, self._table.parallel_num)
        return [(store, PersistentTable(paths[d], self._np_key, self.storage_dim * self._np_value.itemsize,
                                        self.physical_block_size, read_only=read_only)) for d, store in shards]

    def save_snapshot(self, snapshot_name):
        """Saves every line (embedding and optimizer states) of this process's shards as snapshot
        `snapshot_name` of their persistent tables under persistent_path (OneFlow's format; atomic: an
        interrupted save leaves no partial snapshot)."""
        for store, table in self._shard_tables():
            keys, lines = store.items()
            table.save_snapshot(snapshot_name, table.put(keys, lines))

    def load_snapshot(self, snapshot_name):
        """Replaces this process's shards by snapshot `snapshot_name` of their persistent tables (every shard is
        read before any is replaced)."""
        loaded = []
        for store, table in self._shard_tables(read_only=True):
            parts = list(table.read_snapshot(snapshot_name))
            keys = np.concatenate([k for k, _ in parts]) if parts else np.zeros(0, self._np_key)
            vals = np.concatenate([v for _, v in parts]) if parts else np.zeros((0, table.value_size), np.uint8)
            loaded.append((store, keys, vals.view(self._np_value).reshape(len(keys), self.storage_dim)))
        for store, keys, lines in loaded:
            store.replace(keys, lines)

    # --- state_dict (OneFlow 0.9: a snapshot named by the time of the save, the name in the state dict) -------------
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        stamp = creation.tensor([datetime.datetime.now().timestamp()], dtype=dtypes.float64)
        if self.world_size > 1:  # every rank names the snapshot by rank 0's time (OneFlow broadcasts it)
            from oneflow_compat._global import comm_ops

            comm_ops.broadcast(stamp, 0)
        stamp = stamp.numpy()
        name = datetime.datetime.fromtimestamp(float(stamp[0])).strftime("%Y-%m-%d-%H-%M-%S-%f")
        self.save_snapshot(name)
        destination[prefix + "OneEmbeddingSnapshot"] = name
        destination[prefix + "OneEmbeddingKeyValueOptions"] = self.key_value_store_options

    def _extra_state_keys(self, prefix):
        return [prefix + "OneEmbeddingSnapshot", prefix + "OneEmbeddingKeyValueOptions"]

    def _check_extra_state(self, state_dict, prefix):
        name = state_dict.get(prefix + "OneEmbeddingSnapshot")
        if name is None:
            return None
        for _, table in self._shard_tables(read_only=True) if self._tables_exist() else [(None, None)]:
            if table is None or not table.snapshot_exists(name):
                return ('While Loading OneEmbedding Snapshot named "{}" failed, please check whether the Snapshot '
                        'exist'.format(name))
        return None

    def _tables_exist(self):
        paths = rank_paths(self._persistent_path, self._table.parallel_num or self.world_size)
        return all(os.path.exists(os.path.join(p, "LOCK")) for p in paths if p)

    def _load_extra_state(self, state_dict, prefix):
        name = state_dict.get(prefix + "OneEmbeddingSnapshot")
        if name is not None:
            self.load_snapshot(name)

    # --- the eager update (flow.one_embedding.Optimizer) -------------------------------------------------------
    def _eager_update(self, leaf):
        self._eager_forward = False
        for _, store in sorted(self._table.shards.items()):
            pending, store.pending = store.pending, None
            if pending is not None:
                store.apply_update(pending[0], pending[1], leaf)


class MultiTableEmbedding(Embedding):
    """Several embedding tables of one embedding_dim, dtype and key_type (OneFlow 0.9)."""

    def __init__(self, name, embedding_dim, dtype, key_type, tables, store_options, default_initializer=None,
                 padding_idx=None, seed=0):
        if not isinstance(embedding_dim, int):
            raise AssertionError("embedding_dim must be an int, got %r" % (embedding_dim,))
        super().__init__(name, embedding_dim, dtype, key_type, tables, store_options, default_initializer,
                         padding_idx, seed)


class MultiTableMultiColumnEmbedding(Embedding):
    """Several embedding tables whose lines are columns of different sizes (`embedding_dim`: a list)."""

    def __init__(self, name, embedding_dim, dtype, key_type, tables, store_options, default_initializer=None,
                 padding_idx=None, seed=0):
        dims = embedding_dim if isinstance(embedding_dim, (list, tuple)) else [embedding_dim]
        for d in dims:
            if not isinstance(d, int):
                raise AssertionError("embedding_dim must be an int or a list of ints, got %r" % (embedding_dim,))
        super().__init__(name, embedding_dim, dtype, key_type, tables, store_options, default_initializer,
                         padding_idx, seed)


class Optimizer:
    """OneFlow 0.9's eager wrapper: `flow.one_embedding.Optimizer(optimizer, [embedding, ...])`; `step()` updates
    the rows each embedding looked up since the last step with `optimizer`'s group holding it, then steps
    `optimizer`."""

    def __init__(self, optimizer, embeddings):
        from oneflow_compat._global.graph_optim import GroupLeaf
        from oneflow_compat.optim import adam as adam_mod
        from oneflow_compat.optim import sgd as sgd_mod
        from oneflow_compat.optim.adaptive import Adagrad
        from oneflow_compat.one_embedding.ftrl import Ftrl

        self.optimizer, self.embeddings = optimizer, list(embeddings)
        self.param_groups = optimizer.param_groups
        # OneFlow 0.9 dispatches on the exact type (Optimizer.step: `type(self.optimizer) is ...`)
        if type(optimizer) not in (sgd_mod.SGD, adam_mod.Adam, Adagrad, Ftrl):
            raise NotImplementedError("only support sgd, adam, adagrad and ftrl")
        self._leaves = {}
        for emb in self.embeddings:
            for group in self.param_groups:
                if any(p is emb.shadow for p in group["params"]):
                    if isinstance(optimizer, adam_mod.Adam) and group["amsgrad"]:
                        raise AssertionError("one_embedding's adam not support amsgrad")
                    leaf = GroupLeaf(optimizer, group, {id(emb.shadow): emb.embedding_name + ".shadow"})
                    emb._table.bind_optimizer(leaf)
                    self._leaves[emb.embedding_name] = leaf
            if emb.embedding_name not in self._leaves:
                raise ValueError("embedding must in optimizers param_group")

    def step(self, closure=None):
        for emb in self.embeddings:
            emb._eager_update(self._leaves[emb.embedding_name])
        return self.optimizer.step(closure) if closure is not None else self.optimizer.step()

    def zero_grad(self, set_to_none=False):
        return self.optimizer.zero_grad(set_to_none)

    def state_dict(self):
        return self.optimizer.state_dict()

    def load_state_dict(self, state_dict):
        return self.optimizer.load_state_dict(state_dict)


# --- persistent tables ---------------------------------------------------------------------------------------------
class PersistentTableWriter:
    """Writes keys and values into the tables of `paths` (a key goes to table xxh64(key, 1) % len(paths), as
    OneFlow shards it over ranks); `close()` (or leaving a `with` block) saves the snapshot."""

    def __init__(self, paths, snapshot_name, key_type, value_type, storage_dim, physical_block_size=4096):
        self.key_dtype = _np_dtype(key_type, "key_type")
        self.value_dtype = _np_dtype(value_type, "value_type")
        if self.value_dtype != np.float32:
            raise NotImplementedError("make_persistent_table_writer: value_type must be flow.float32 (OneFlow 0.9 "
                                      "writes float tables only), got %s" % self.value_dtype.name)
        self.snapshot_name, self.storage_dim = snapshot_name, int(storage_dim)
        self.tables = [PersistentTable(p, self.key_dtype, self.storage_dim * 4, physical_block_size)
                       for p in paths]
        self.rows = [dict() for _ in self.tables]  # key -> row index, the last write of a key wins
        self.closed = False

    def write(self, keys, values):
        if self.closed:
            raise RuntimeError("Write on closed table")
        keys, values = np.asarray(keys), np.asarray(values)
        if keys.ndim != 1 or values.ndim != 2 or keys.shape[0] != values.shape[0] or \
                values.shape[1] != self.storage_dim:
            raise ValueError("persistent table write: keys must be (n,) and values (n, %d), got %s and %s"
                             % (self.storage_dim, keys.shape, values.shape))
        if keys.dtype != self.key_dtype or values.dtype != self.value_dtype:
            raise TypeError("persistent table write: keys must be %s and values %s, got %s and %s"
                            % (self.key_dtype, self.value_dtype, keys.dtype, values.dtype))
        shards = oe_k.shard_of(np, keys, len(self.tables))
        for s, table in enumerate(self.tables):
            sel = shards == s
            if sel.any():
                idx = table.put(keys[sel], values[sel])
                self.rows[s].update(zip(keys[sel].tolist(), idx.tolist()))

    def close(self):
        if not self.closed:
            for table, rows in zip(self.tables, self.rows):
                table.save_snapshot(self.snapshot_name, np.fromiter(rows.values(), np.uint64, len(rows)))
        self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class PersistentTableReader:
    """Iterates (keys, values) batches (at most 65536 keys) of snapshot `snapshot_name` of the tables of `paths`."""

    def __init__(self, paths, snapshot_name, key_type, value_type, storage_dim, physical_block_size=4096):
        self.key_dtype = _np_dtype(key_type, "key_type")
        self.value_dtype = _np_dtype(value_type, "value_type")
        self.storage_dim = int(storage_dim)
        self.tables = [PersistentTable(p, self.key_dtype, self.storage_dim * self.value_dtype.itemsize,
                                       physical_block_size, read_only=True) for p in paths]
        self._iter = (batch for t in self.tables for batch in t.read_snapshot(snapshot_name))

    def __iter__(self):
        return self

    def __next__(self):
        keys, raw = next(self._iter)
        return keys, raw.view(self.value_dtype).reshape(len(keys), self.storage_dim)

    def close(self):
        self._iter = iter(())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def make_persistent_table_reader(paths, snapshot_name, key_type, value_type, storage_dim, physical_block_size=4096):
    """A reader of snapshot `snapshot_name` of the persistent tables at `paths`."""
    return PersistentTableReader(paths, snapshot_name, key_type, value_type, storage_dim, physical_block_size)


def make_persistent_table_writer(paths, snapshot_name, key_type, value_type, storage_dim, physical_block_size=4096):
    """A writer of the persistent tables at `paths`, saving snapshot `snapshot_name` when closed."""
    return PersistentTableWriter(paths, snapshot_name, key_type, value_type, storage_dim, physical_block_size)
