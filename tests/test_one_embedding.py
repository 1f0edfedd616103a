"""flow.one_embedding (OneFlow 0.9): option dicts and their checks, lookups with per-table initializers, training
in nn.Graph and eagerly against torch's dense embedding trained the same way, snapshots in OneFlow's persistent
table format (atomic saves), the persistent table reader and writer, the sharding hash."""
import os

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat.one_embedding import persistent_table as pt

oe = flow.one_embedding
try:
    import torch
except ImportError:  # the torch references skip
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

M64 = (1 << 64) - 1


def xxh64_8bytes(v, seed):
    """XXH64 of one little-endian 8-byte input, written from the xxHash specification (independent reference)."""
    p1, p2, p3, p4, p5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x85EBCA77C2B2AE63,
                          0x27D4EB2F165667C5)

    def rotl(x, r):
        return ((x << r) | (x >> (64 - r))) & M64

    acc = (seed + p5 + 8) & M64
    k1 = (rotl((v * p2) & M64, 31) * p1) & M64
    acc ^= k1
    acc = (rotl(acc, 27) * p1 + p4) & M64
    acc ^= acc >> 33
    acc = (acc * p2) & M64
    acc ^= acc >> 29
    acc = (acc * p3) & M64
    acc ^= acc >> 32
    return acc


_names = iter(range(10 ** 6))


def _shard(e):
    (_, store), = e._table.local_shards()
    return store


def _name():
    return "emb%d" % next(_names)


def _tables3():
    return [oe.make_table_options(oe.make_uniform_initializer(low=-0.1, high=0.1)),
            oe.make_table_options(oe.make_uniform_initializer(low=-0.05, high=0.05)),
            oe.make_table_options(oe.make_uniform_initializer(low=0.5, high=0.6))]


def _embedding(tmp_path, dim=4, tables=None, size_factor=1, name=None, **kw):
    """An embedding; one named by the test keeps its table under tmp_path/tab, the others in folders of their own."""
    folder = tmp_path / "tab" if name is not None else tmp_path / _name()
    store = oe.make_device_mem_store_options(persistent_path=str(folder), capacity=1000, size_factor=size_factor)
    return oe.MultiTableEmbedding(name or _name(), dim, flow.float, flow.int64, tables, store, **kw)


# --- options -----------------------------------------------------------------------------------------------------
def test_option_dicts_have_oneflows_layout():
    assert oe.make_uniform_initializer(low=-1, high=2) == {"type": "uniform", "low": -1, "high": 2}
    assert oe.make_normal_initializer(mean=0, std=1) == {"type": "normal", "mean": 0, "std": 1}
    init = oe.make_uniform_initializer(0, 1)
    assert oe.make_table_options(init) == {"initializer": init} == oe.make_table(init)
    assert oe.make_table_options([{"initializer": init}]) == {"columns": [{"initializer": init}]}
    assert oe.make_device_mem_store_options("/p", 10) == {
        "kv_store": {"caches": [{"policy": "full", "capacity": 10, "value_memory_kind": "device"}],
                     "persistent_table": {"path": "/p", "physical_block_size": 4096, "capacity_hint": 10}},
        "size_factor": 1, "storage_dim": -1}
    ssd = oe.make_cached_ssd_store_options(8142, "/p", capacity=400, size_factor=2, physical_block_size=512,
                                           host_cache_budget_mb=16)
    assert ssd["kv_store"]["caches"] == [
        {"policy": "lru", "cache_memory_budget_mb": 8142, "value_memory_kind": "device"},
        {"policy": "lru", "cache_memory_budget_mb": 16, "value_memory_kind": "host"}]
    assert ssd["kv_store"]["persistent_table"] == {"path": "/p", "physical_block_size": 512, "capacity_hint": 400}
    assert oe.make_cached_ssd_store_options(1, "/p")["kv_store"]["persistent_table"]["capacity_hint"] == 0
    host = oe.make_cached_host_mem_store_options(64, ["/a", "/b"], 100, storage_dim=12)
    assert host["kv_store"]["caches"][1] == {"policy": "full", "capacity": 100, "value_memory_kind": "host"}
    assert host["storage_dim"] == 12


def test_option_checks_are_oneflows():
    with pytest.raises(AssertionError, match="capacity must be > 0"):
        oe.make_device_mem_store_options("/p", 0)
    with pytest.raises(AssertionError, match="cache_budget_mb or host_cache_budget_mb must be > 0"):
        oe.make_cached_ssd_store_options(0, "/p")
    with pytest.raises(AssertionError, match="capacity must be > 0"):
        oe.make_cached_ssd_store_options(1, "/p", capacity=-1)
    with pytest.raises(AssertionError, match="cache_budget_mb must be > 0"):
        oe.make_cached_host_mem_store_options(0, "/p", 10)
    with pytest.raises(AssertionError, match="persistent_path must be a str"):
        oe.make_device_mem_store_options(3, 10)
    with pytest.raises(ValueError, match="param must be initializer or columns"):
        oe.make_table_options(3)


def test_embedding_checks(tmp_path):
    bad_block = oe.make_device_mem_store_options(str(tmp_path), 10, physical_block_size=1000)
    with pytest.raises(AssertionError, match="physical_block_size must be 512 or 4096, got 1000"):
        oe.MultiTableEmbedding(_name(), 4, flow.float, flow.int64, None, bad_block)
    with pytest.raises(AssertionError, match="initializer type must be uniform, normal or constant"):
        _embedding(tmp_path, tables=[oe.make_table_options({"type": "zeros"})])
    with pytest.raises(AssertionError, match="embedding_dim must be an int"):
        oe.MultiTableEmbedding(_name(), [2, 2], flow.float, flow.int64, None,
                               oe.make_device_mem_store_options(str(tmp_path), 10))
    e = _embedding(tmp_path, name="twice")
    with pytest.raises(RuntimeError, match="Can't create an embedding with same name of an existing embedding, "
                                           "the name: twice"):
        _embedding(tmp_path, name="twice")
    with pytest.raises(AssertionError, match="ids data_type must equals key_type"):
        e(flow.tensor([1, 2], dtype=flow.int32))
    with pytest.raises(ValueError, match=r"one_embedding 'other': persistent_path .*tab/0-1 is the table folder of "
                                         r"embedding 'twice'; two embeddings need different persistent paths"):
        _embedding(tmp_path, name="other")
    del e
    import gc

    gc.collect()
    _embedding(tmp_path, name="other")  # the folder is free once its embedding is gone


# --- lookups -----------------------------------------------------------------------------------------------------
def _lookup(e, ids, table_ids=None):
    with flow.no_grad():
        out = e(flow.tensor(np.asarray(ids), dtype=flow.int64),
                None if table_ids is None else flow.tensor(np.asarray(table_ids), dtype=flow.int32))
    return out.numpy()


def test_lookup_initialises_each_table_by_its_initializer_and_keeps_rows(tmp_path):
    e = _embedding(tmp_path, dim=8, tables=_tables3())
    ids = np.arange(300, dtype=np.int64).reshape(100, 3) * 7 + 1
    y = _lookup(e, ids)
    assert y.shape == (100, 3, 8)
    assert np.abs(y[:, 0]).max() <= 0.1 and np.abs(y[:, 1]).max() <= 0.05
    assert y[:, 2].min() >= 0.5 and y[:, 2].max() <= 0.6
    assert np.abs(y[:, 0]).max() > 0.09  # draws spread over the range, not constants
    assert len(np.unique(y[:, 0])) == 800
    # the table of each id derived from the shape (i % num_tables) equals table_ids given explicitly
    e2 = _embedding(tmp_path, dim=8, tables=_tables3())
    np.testing.assert_array_equal(_lookup(e2, ids.reshape(-1), np.tile([0, 1, 2], 100)), y.reshape(300, 8))
    # rows stay: a key looked up again (in another batch and order) has the same row
    np.testing.assert_array_equal(_lookup(e, ids[::-1, 0]), y[::-1, 0])
    # broadcast table_ids (OneFlow broadcasts a trailing-shape table_ids to ids)
    e3 = _embedding(tmp_path, dim=8, tables=_tables3())
    np.testing.assert_array_equal(_lookup(e3, ids, [0, 1, 2]), y)
    with pytest.raises(RuntimeError, match="table_ids must be able to be broadcast to ids_shape"):
        _lookup(e3, ids, [0, 1])


def test_initial_rows_depend_on_seed_only_and_normal_moments(tmp_path):
    normal = [oe.make_table_options(oe.make_normal_initializer(mean=0.5, std=2.0))]
    keys = np.arange(4000, dtype=np.int64) * 1000003 - 2 ** 40
    a = _lookup(_embedding(tmp_path, dim=4, tables=normal), keys)
    flow.manual_seed(123)
    b = _lookup(_embedding(tmp_path, dim=4, tables=normal), keys)
    c = _lookup(_embedding(tmp_path, dim=4, tables=normal, seed=1), keys)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    assert abs(a.mean() - 0.5) < 0.05 and abs(a.std() - 2.0) < 0.05
    default = _lookup(_embedding(tmp_path, dim=4), keys)  # OneFlow's default initializer: N(0, 0.05)
    assert abs(default.std() - 0.05) < 0.002


def test_padding_idx_rows_are_zero(tmp_path):
    e = _embedding(tmp_path, dim=3, tables=[oe.make_table_options(oe.make_uniform_initializer(1, 2))],
                   padding_idx=0)
    y = _lookup(e, [[0, 5], [5, 0]])
    np.testing.assert_array_equal(y[0, 0], 0)
    np.testing.assert_array_equal(y[1, 1], 0)
    assert y[0, 1].min() >= 1


def test_multi_column_embedding(tmp_path):
    cols = [oe.make_column_options(oe.make_constant_initializer(3.0)),
            oe.make_column_options(oe.make_uniform_initializer(-1, 0))]
    store = oe.make_device_mem_store_options(str(tmp_path / "mc"), 100)
    e = oe.MultiTableMultiColumnEmbedding(_name(), [2, 3], flow.float, flow.int64, [oe.make_table_options(cols)],
                                          store)
    y = _lookup(e, [4, 9])
    assert y.shape == (2, 5)
    np.testing.assert_array_equal(y[:, :2], 3.0)
    assert y[:, 2:].max() <= 0 and y[:, 2:].min() >= -1


# --- training ----------------------------------------------------------------------------------------------------
KEYS = np.array([5, 2 ** 40 + 3, 77, -9, 123456789], dtype=np.int64)


def _batches(steps, seed=0):
    rng = np.random.RandomState(seed)
    out = []
    for _ in range(steps):
        # every key at least once (a dense optimizer then moves the same rows), some repeated
        idx = np.concatenate([rng.permutation(len(KEYS)), rng.randint(0, len(KEYS), 7)])
        out.append(idx.reshape(3, 4))
    return out


TARGET = np.linspace(-1, 1, 12 * 3, dtype=np.float32).reshape(3, 4, 3)

OPTIMIZERS = {
    "sgd": (1, lambda p: flow.optim.SGD(p, lr=0.3), lambda p: torch.optim.SGD(p, lr=0.3)),
    "momentum": (2, lambda p: flow.optim.SGD(p, lr=0.2, momentum=0.9),
                 lambda p: torch.optim.SGD(p, lr=0.2, momentum=0.9)),
    "adam": (3, lambda p: flow.optim.Adam(p, lr=0.05), lambda p: torch.optim.Adam(p, lr=0.05)),
    "adagrad": (2, lambda p: flow.optim.Adagrad(p, lr=0.2, initial_accumulator_value=0.1),
                lambda p: torch.optim.Adagrad(p, lr=0.2, initial_accumulator_value=0.1)),
}


def _torch_reference(kind, initial, batches):
    w = torch.nn.Parameter(torch.tensor(initial))
    opt = OPTIMIZERS[kind][2]([w])
    for idx in batches:
        opt.zero_grad()
        y = w[torch.tensor(idx)]
        ((y - torch.tensor(TARGET)) ** 2).sum().backward()
        opt.step()
    return w.detach().numpy()


class _Train(flow.nn.Graph):
    def __init__(self, emb, opt):
        super().__init__()
        self.emb = emb
        self.add_optimizer(opt)

    def build(self, ids):
        loss = ((self.emb(ids) - flow.tensor(TARGET)) ** 2).sum()
        loss.backward()
        return loss


@needs_torch
@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
def test_graph_training_matches_dense_torch_embedding(tmp_path, kind):
    factor, make_flow, _ = OPTIMIZERS[kind]
    e = _embedding(tmp_path, dim=3, size_factor=factor,
                   tables=[oe.make_table_options(oe.make_uniform_initializer(-0.5, 0.5))])
    graph = _Train(e, make_flow(e.parameters()))
    batches = _batches(4)
    for idx in batches:
        graph(flow.tensor(KEYS[idx]))
    got = _lookup(e, KEYS)
    # the dense reference starts from the rows a fresh embedding of the same seed creates for these keys
    e2 = _embedding(tmp_path, dim=3, tables=[oe.make_table_options(oe.make_uniform_initializer(-0.5, 0.5))])
    initial = _lookup(e2, KEYS)
    want = _torch_reference(kind, initial, batches)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
    assert not np.allclose(got, initial)


@needs_torch
def test_rows_not_looked_up_do_not_move_and_repeats_add_up(tmp_path):
    e = _embedding(tmp_path, dim=2, tables=[oe.make_table_options(oe.make_constant_initializer(1.0))])

    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.emb = e
            self.add_optimizer(flow.optim.SGD(e.parameters(), lr=0.1))

        def build(self, ids):
            loss = self.emb(ids).sum()
            loss.backward()
            return loss

    g = G()
    g(flow.tensor(np.array([7, 8, 8, 8], dtype=np.int64)))
    g(flow.tensor(np.array([8, 9, 9, 9], dtype=np.int64)))
    np.testing.assert_allclose(_lookup(e, [7, 8, 9]), [[0.9, 0.9], [0.6, 0.6], [0.7, 0.7]], rtol=1e-6)


def test_line_size_must_hold_the_optimizer_states(tmp_path):
    e = _embedding(tmp_path, dim=3, size_factor=1)
    graph = _Train(e, flow.optim.SGD(e.parameters(), lr=0.1, momentum=0.9))
    with pytest.raises(ValueError, match=r"when using Momentum optimizer, line_size should equals to "
                                         r"embedding_size \* 2, but get line_size: 3 embedding_size: 3, please set "
                                         r"size_factor of store_options to 2."):
        graph(flow.tensor(KEYS[_batches(1)[0]]))


@needs_torch
@pytest.mark.parametrize("kind", ["momentum", "adam"])
def test_eager_training_with_one_embedding_optimizer(tmp_path, kind):
    factor, make_flow, _ = OPTIMIZERS[kind]
    init = [oe.make_table_options(oe.make_uniform_initializer(-0.5, 0.5))]
    e = _embedding(tmp_path, dim=3, size_factor=factor, tables=init)
    opt = oe.Optimizer(make_flow(e.parameters()), [e])
    batches = _batches(3, seed=1)
    for idx in batches:
        loss = ((e(flow.tensor(KEYS[idx])) - flow.tensor(TARGET)) ** 2).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
    initial = _lookup(_embedding(tmp_path, dim=3, tables=init), KEYS)
    np.testing.assert_allclose(_lookup(e, KEYS), _torch_reference(kind, initial, batches), rtol=2e-5, atol=2e-6)


def test_eager_training_without_the_embedding_optimizer_is_refused(tmp_path):
    e = _embedding(tmp_path, dim=3)
    e(flow.tensor(KEYS)).sum().backward()
    with pytest.raises(ValueError, match="You are training without set embedding optimizer, Please add "
                                         "flow.one_embedding.Optimizer after optimizer."):
        e(flow.tensor(KEYS))
    other = flow.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="embedding must in optimizers param_group"):
        oe.Optimizer(flow.optim.SGD(other.parameters(), lr=0.1), [e])
    with pytest.raises(NotImplementedError, match="only support sgd, adam, adagrad and ftrl"):
        oe.Optimizer(flow.optim.RMSprop(e.parameters(), lr=0.1), [e])


def test_global_tensors_in_a_graph(tmp_path):
    placement = flow.placement("cpu", ranks=[0])
    e = _embedding(tmp_path, dim=2, tables=[oe.make_table_options(oe.make_constant_initializer(1.0))])
    e.to_global(placement, flow.sbp.broadcast)

    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.emb = e
            self.add_optimizer(flow.optim.SGD(e.parameters(), lr=0.25))

        def build(self, ids):
            loss = self.emb(ids).sum()
            loss.backward()
            return loss

    ids = flow.tensor(np.array([[3, 4], [4, 4]], dtype=np.int64)).to_global(placement, flow.sbp.broadcast)
    loss = G()(ids)
    assert loss.is_global and float(loss.to_local().numpy()) == 8.0
    with flow.no_grad():
        y = e(ids).to_local().numpy()
    np.testing.assert_allclose(y[0], [[0.75, 0.75], [0.25, 0.25]])


# --- snapshots -----------------------------------------------------------------------------------------------------
def _train_some(e, steps, seed):
    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.emb = e
            self.add_optimizer(flow.optim.SGD(e.parameters(), lr=0.1, momentum=0.5))

        def build(self, ids):
            loss = ((self.emb(ids) - flow.tensor(TARGET)) ** 2).sum()
            loss.backward()
            return loss

    g = G()
    for idx in _batches(steps, seed):
        g(flow.tensor(KEYS[idx]))


def test_snapshot_round_trip_in_oneflows_layout(tmp_path):
    e = _embedding(tmp_path, dim=3, size_factor=2, name="snap")
    _train_some(e, 2, 0)
    saved_rows = _lookup(e, KEYS)
    saved_lines = _shard(e).items()
    e.save_snapshot("s1")
    _train_some(e, 2, 1)
    assert not np.allclose(_lookup(e, KEYS), saved_rows)
    e.load_snapshot("s1")
    np.testing.assert_array_equal(_lookup(e, KEYS), saved_rows)
    keys, lines = _shard(e).items()
    order = np.argsort(keys)
    np.testing.assert_array_equal(lines[order], saved_lines[1][np.argsort(saved_lines[0])])  # momentum too
    root = tmp_path / "tab" / "0-1"  # OneFlow's per-rank folder: rank-parallel_num
    assert (root / "KEY_SIZE").read_text() == "8\n"
    assert (root / "VALUE_SIZE").read_text() == "24\n"  # storage_dim 6 float32
    assert (root / "PHYSICAL_BLOCK_SIZE").read_text() == "4096\n"
    assert (root / "NUM_LOGICAL_BLOCKS_PER_CHUNK").read_text() == "%d\n" % (4 * 1024 ** 3 // 4096)
    assert (root / "snapshots" / "s1" / "LIST").read_text() == "index-000000000000\n"
    index = np.fromfile(root / "snapshots" / "s1" / "index-000000000000", dtype="<u8")
    assert sorted(index.tolist()) == list(range(len(KEYS)))
    file_keys = np.fromfile(root / "keys" / "key-000000000000", dtype="<i8")
    assert sorted(file_keys[index.astype(np.int64)].tolist()) == sorted(KEYS.tolist())
    with pytest.raises(FileNotFoundError, match="has no snapshot named 'nope'"):
        e.load_snapshot("nope")


def test_an_interrupted_save_keeps_the_previous_snapshot(tmp_path, monkeypatch):
    e = _embedding(tmp_path, dim=3, name="atomic")
    before = _lookup(e, KEYS)
    e.save_snapshot("s")
    _shard(e).lines[:] += 1.0

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(pt.os, "rename", fail)
    with pytest.raises(OSError, match="disk full"):
        e.save_snapshot("s")
    monkeypatch.undo()
    snapdir = tmp_path / "tab" / "0-1" / "snapshots"
    assert sorted(os.listdir(snapdir)) == ["s"]  # no temporary folder left behind
    e.load_snapshot("s")
    np.testing.assert_array_equal(_lookup(e, KEYS), before)


# --- persistent table reader and writer ----------------------------------------------------------------------------
def test_sharding_hash_is_oneflows_xxh64():
    from oneflow_compat.kernels import one_embedding as k

    keys = np.array([0, 1, 7, -1, 2 ** 40 + 5, -(2 ** 62)], dtype=np.int64)
    got = k.xxh64_uint64(np, keys.view(np.uint64), 1)
    assert got.tolist() == [xxh64_8bytes(int(v) & M64, 1) for v in keys.tolist()]
    k32 = np.array([-1, 3], dtype=np.int32)  # int32 keys: zero-extended to 64 bits
    assert k.shard_of(np, k32, 7).tolist() == [xxh64_8bytes(0xFFFFFFFF, 1) % 7, xxh64_8bytes(3, 1) % 7]


def test_writer_shards_by_key_and_reader_round_trips(tmp_path):
    paths = [str(tmp_path / "r0"), str(tmp_path / "r1")]
    rng = np.random.RandomState(0)
    keys = rng.randint(-10 ** 12, 10 ** 12, 300).astype(np.int64)
    keys = np.unique(keys)
    values = rng.randn(len(keys), 5).astype(np.float32)
    with oe.make_persistent_table_writer(paths, "init", flow.int64, flow.float, 5, physical_block_size=512) as w:
        w.write(keys[:100], values[:100])
        w.write(keys[100:], values[100:])
    got = {}
    with oe.make_persistent_table_reader(paths, "init", flow.int64, flow.float, 5, physical_block_size=512) as r:
        for k, v in r:
            assert v.dtype == np.float32 and v.shape == (len(k), 5)
            got.update(zip(k.tolist(), v))
    assert sorted(got) == sorted(keys.tolist())
    for kk, vv in zip(keys.tolist(), values):
        np.testing.assert_array_equal(got[kk], vv)
    # each table holds the keys of its shard: xxh64(key, 1) % 2
    for s, p in enumerate(paths):
        in_table = [k for k, _ in pt.PersistentTable(p, np.int64, 20, 512, read_only=True).read_snapshot("init")]
        held = np.concatenate(in_table)
        assert all(xxh64_8bytes(int(k) & M64, 1) % 2 == s for k in held.tolist())
    with pytest.raises(TypeError, match="keys must be int64 and values float32"):
        with oe.make_persistent_table_writer(paths, "x", flow.int64, flow.float, 5, 512) as w:
            w.write(keys[:3].astype(np.int32), values[:3])
    with pytest.raises(RuntimeError, match="Check failed: .*VALUE_SIZE"):
        oe.make_persistent_table_reader(paths, "init", flow.int64, flow.float, 6, physical_block_size=512)
    with pytest.raises(RuntimeError, match="The table must be initialized in read only mode"):
        oe.make_persistent_table_reader([str(tmp_path / "none")], "init", flow.int64, flow.float, 5)


def test_reads_a_table_laid_out_as_oneflow_lays_it_out(tmp_path):
    """A table written byte by byte from OneFlow's layout (persistent_table.cpp): 512-byte blocks of 12-byte
    values (42 per block), keys by slot, two puts (the second starts at the next block), a snapshot naming a
    subset of the rows."""
    root = tmp_path / "t"
    (root / "keys").mkdir(parents=True)
    (root / "values").mkdir()
    for name, v in (("KEY_SIZE", 4), ("VALUE_SIZE", 12), ("PHYSICAL_BLOCK_SIZE", 512),
                    ("NUM_LOGICAL_BLOCKS_PER_CHUNK", 4 * 1024 ** 3 // 512)):
        (root / name).write_text("%d\n" % v)
    (root / "LOCK").write_text("")
    per_block = 512 // 12
    keys = np.zeros(2 * per_block, np.int32)
    values = np.zeros(2 * 512, np.uint8)
    first = np.array([10, 11, 12], np.int32)
    second = np.array([-5, 99], np.int32)
    vals = {}
    for slot, k in list(enumerate(first)) + [(per_block + i, k) for i, k in enumerate(second)]:
        keys[slot] = k
        row = np.array([k, k * 2, k + 0.5], np.float32)
        vals[int(k)] = row
        off = (slot // per_block) * 512 + (slot % per_block) * 12
        values[off:off + 12] = row.view(np.uint8)
    keys.tofile(root / "keys" / "key-000000000000")
    values.tofile(root / "values" / "value-000000000000")
    snap = root / "snapshots" / "mine"
    snap.mkdir(parents=True)
    np.array([per_block + 1, 0, 2], "<u8").tofile(snap / "index-000000000000")
    (snap / "LIST").write_text("index-000000000000\n")
    got = {}
    for k, v in oe.make_persistent_table_reader([str(root)], "mine", flow.int32, flow.float, 3, 512):
        got.update(zip(k.tolist(), v))
    assert sorted(got) == [10, 12, 99]
    for k in got:
        np.testing.assert_array_equal(got[k], vals[k])
    # and an embedding whose persistent_path lists this folder loads it as its table
    store = oe.make_device_mem_store_options([str(root)], 100, physical_block_size=512)
    e = oe.MultiTableEmbedding(_name(), 3, flow.float, flow.int32, None, store)
    e.load_snapshot("mine")
    with flow.no_grad():
        y = e(flow.tensor(np.array([12, 99], np.int32), dtype=flow.int32)).numpy()
    np.testing.assert_array_equal(y, [vals[12], vals[99]])


def test_embedding_loads_a_writers_snapshot(tmp_path):
    keys = np.array([1, 2, 3], np.int64)
    values = np.arange(9, dtype=np.float32).reshape(3, 3)
    with oe.make_persistent_table_writer([str(tmp_path / "w" / "0-1")], "pre", flow.int64, flow.float, 3) as w:
        w.write(keys, values)
    store = oe.make_cached_ssd_store_options(64, str(tmp_path / "w"), capacity=10)
    e = oe.MultiTableEmbedding(_name(), 3, flow.float, flow.int64, None, store)
    e.load_snapshot("pre")
    np.testing.assert_array_equal(_lookup(e, [3, 1]), values[[2, 0]])


# --- Ftrl --------------------------------------------------------------------------------------------------------
def _np_ftrl(w, g, acc, z, lr, lr_power=-0.5, lambda1=0.0, lambda2=0.0, beta=0.0, wd=0.0):
    """FtrlUpdateFunctor (model_update_kernel_util.h@v0.9.0), in float64."""
    g = g + wd * w
    nacc = acc + g * g
    sigma = (nacc ** lr_power - acc ** lr_power) / lr
    z = z + g - sigma * w
    new = (np.sign(z) * lambda1 - z) / ((beta + nacc ** lr_power) / lr + lambda2)
    return np.where(np.abs(z) >= lambda1, new, 0.0), nacc, z


def test_ftrl_dense_eager_and_graph_match_numpy():
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    w0 = np.array([[0.3, -0.2, 0.1], [0.05, 0.4, -0.3]], np.float32)
    kw = dict(lr=0.5, lambda1=0.01, lambda2=0.1, beta=0.2, weight_decay=0.01)
    got = []
    for mode in ("eager", "graph"):
        lin = flow.nn.Linear(3, 2, bias=False)
        with flow.no_grad():
            lin.weight.copy_(flow.tensor(w0))
        opt = oe.Ftrl(lin.parameters(), **kw)

        class G(flow.nn.Graph):
            def __init__(self):
                super().__init__()
                self.lin = lin
                self.add_optimizer(opt)

            def build(self, x):
                loss = (self.lin(x) ** 2).sum()
                loss.backward()
                return loss

        g = G()
        for _ in range(3):
            if mode == "graph":
                g(flow.tensor(x))
            else:
                (lin(flow.tensor(x)) ** 2).sum().backward()
                opt.step()
                opt.zero_grad()
        got.append(lin.weight.numpy())
    w, acc, z = w0.astype(np.float64), np.full(w0.shape, 0.1), np.zeros(w0.shape)
    for _ in range(3):
        grad = 2 * (x @ w.T).T @ x
        w, acc, z = _np_ftrl(w, grad, acc, z, 0.5, lambda1=0.01, lambda2=0.1, beta=0.2, wd=0.01)
    np.testing.assert_allclose(got[0], w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], w, rtol=1e-5, atol=1e-6)
    with pytest.raises(AssertionError, match="Invalid learning rate: -1"):
        oe.Ftrl(lin.parameters(), lr=-1)


def test_ftrl_embedding_rows_match_numpy(tmp_path):
    init = [oe.make_table_options(oe.make_uniform_initializer(-0.5, 0.5))]
    e = _embedding(tmp_path, dim=3, size_factor=3, tables=init)
    graph = _Train(e, oe.Ftrl(e.parameters(), lr=0.3, lambda1=0.001, beta=0.1))
    batches = _batches(3, seed=2)
    for idx in batches:
        graph(flow.tensor(KEYS[idx]))
    w = _lookup(_embedding(tmp_path, dim=3, tables=init), KEYS).astype(np.float64)
    acc = np.full(w.shape, 0.1)
    z = np.full(w.shape, 0.1)  # an embedding line's z starts at initial_accumulator_value too (OneFlow)
    for idx in batches:
        grad = np.zeros_like(w)
        np.add.at(grad, idx.reshape(-1), 2 * (w[idx] - TARGET).reshape(-1, 3))
        w, acc, z = _np_ftrl(w, grad, acc, z, 0.3, lambda1=0.001, beta=0.1)
    np.testing.assert_allclose(_lookup(e, KEYS), w, rtol=1e-5, atol=1e-6)


def test_padding_idx_gets_no_gradient(tmp_path):
    e = _embedding(tmp_path, dim=2, tables=[oe.make_table_options(oe.make_constant_initializer(1.0))],
                   padding_idx=4)
    opt = oe.Optimizer(flow.optim.SGD(e.parameters(), lr=0.5), [e])
    e(flow.tensor(np.array([4, 6, 4], np.int64))).sum().backward()
    opt.step()
    np.testing.assert_allclose(_shard(e).lines[np.argsort(_shard(e).keys)], [[1.0, 1.0], [0.5, 0.5]])


# (gradient accumulation, loss scalers and clipping with one_embedding in nn.Graph: tests/test_limits_one_embedding.py)


def test_state_dict_saves_a_snapshot_and_load_state_dict_loads_it(tmp_path):
    e = _embedding(tmp_path, dim=3, name="sd")
    model = flow.nn.Sequential(e)
    before = _lookup(e, KEYS)
    sd = model.state_dict()
    name = sd["0.OneEmbeddingSnapshot"]
    assert (tmp_path / "tab" / "0-1" / "snapshots" / name / "LIST").exists()
    assert '"name": "sd"' in sd["0.OneEmbeddingKeyValueOptions"]
    flow.save(sd, str(tmp_path / "ckpt"))
    _shard(e).lines[:] = 7.0
    model.load_state_dict(flow.load(str(tmp_path / "ckpt")))
    np.testing.assert_array_equal(_lookup(e, KEYS), before)
    bad = dict(sd, **{"0.OneEmbeddingSnapshot": "2000-01-01-00-00-00-000000"})
    _shard(e).lines[:] = 7.0
    with pytest.raises(RuntimeError, match='While Loading OneEmbedding Snapshot named "2000-01-01-00-00-00-000000" '
                                           'failed, please check whether the Snapshot exist'):
        model.load_state_dict(bad)
    np.testing.assert_array_equal(_shard(e).lines, 7.0)  # a failed load changes nothing


def test_functional_lookup_is_bound_in_C(tmp_path):
    e = _embedding(tmp_path, dim=3, tables=_tables3())
    ids = flow.tensor(np.array([[1, 2, 3], [4, 5, 6]], np.int64))
    with flow.no_grad():
        y = flow._C.one_embedding_fused_lookup(e.shadow, ids, None, flow.float, e.embedding_name, e.storage_dim,
                                               e.embedding_dim, e.is_full_cache, e.num_tables, e.embedding_tables)
    np.testing.assert_array_equal(y.numpy(), _lookup(e, ids.numpy()))
    with pytest.raises(RuntimeError, match="Can not find embedding: nobody-0"):
        flow._C.one_embedding_fused_lookup(e.shadow, ids, None, flow.float, "nobody", 3, 3, True, 3, "")


def test_a_save_interrupted_while_appending_lines_keeps_every_snapshot(tmp_path, monkeypatch):
    e = _embedding(tmp_path, dim=3, name="appending")
    before = _lookup(e, KEYS)
    e.save_snapshot("s")
    _shard(e).lines[:] += 1.0
    after = _lookup(e, KEYS)
    real = pt.os.pwrite

    def torn(fd, data, offset):  # half the bytes reach the file, then the process "dies"
        real(fd, data[:len(data) // 2], offset)
        raise OSError("power cut")

    monkeypatch.setattr(pt.os, "pwrite", torn)
    with pytest.raises(OSError, match="power cut"):
        e.save_snapshot("t")
    monkeypatch.undo()
    snapdir = tmp_path / "tab" / "0-1" / "snapshots"
    assert sorted(os.listdir(snapdir)) == ["s"]
    e.save_snapshot("t")  # appends after the torn bytes, in whole blocks
    e.load_snapshot("s")
    np.testing.assert_array_equal(_lookup(e, KEYS), before)
    e.load_snapshot("t")
    np.testing.assert_array_equal(_lookup(e, KEYS), after)


def test_initial_values_are_curand_philox_draws_as_oneflow_makes_them(tmp_path):
    from oneflow_compat.kernels import one_embedding as k

    # Philox4x32-10 known-answer vectors (Random123's kat_vectors)
    for ctr, key, want in [((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
                           ((0xffffffff,) * 4, (0xffffffff,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
                           ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
                            (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]:
        assert [int(v) for v in k.philox4x32_10(*ctr, *key)] == list(want)
    # curand_init(seed, subsequence=id, offset=col): counter (col // 4, 0, id lo, id hi), word col % 4
    seed, key_id = 5, -3
    sub = key_id & M64
    words = k.philox4x32_10(1, 0, sub & 0xFFFFFFFF, sub >> 32, seed, 0)
    e = _embedding(tmp_path, dim=6, tables=[oe.make_table_options(oe.make_uniform_initializer(-2.0, 3.0))],
                   seed=seed)
    row = _lookup(e, [key_id])[0]
    for col in (4, 5):
        u = np.float32(np.float64(np.float32(int(words[col - 4]))) * np.float64(np.float32(2.3283064e-10))
                       + np.float64(np.float32(2.3283064e-10) / np.float32(2)))
        assert row[col] == np.float32(np.float64(u) * 5.0 + -2.0)


@needs_torch
def test_multi_column_embedding_trains_like_a_dense_one(tmp_path):
    cols = [oe.make_column_options(oe.make_normal_initializer(0.0, 0.5)),
            oe.make_column_options(oe.make_uniform_initializer(0.0, 1.0))]

    def make():
        store = oe.make_device_mem_store_options(str(tmp_path / _name()), 100, size_factor=3)
        return oe.MultiTableMultiColumnEmbedding(_name(), [1, 2], flow.float, flow.int64,
                                                 [oe.make_table_options(cols)], store)

    e = make()
    graph = _Train(e, flow.optim.Adam(e.parameters(), lr=0.05))
    batches = _batches(3, seed=3)
    for idx in batches:
        graph(flow.tensor(KEYS[idx]))
    initial = _lookup(make(), KEYS)
    assert initial[:, 1:].min() >= 0
    np.testing.assert_allclose(_lookup(e, KEYS), _torch_reference("adam", initial, batches), rtol=2e-5, atol=2e-6)
