"""oneflow._C's one_embedding internals (functional_api.yaml v0.9.0) with the yaml's keyword names: unique /
shuffle of ids, lookup and put of a named embedding's lines, the sparse updates against numpy written from
OneFlow's update functors; the id / embedding / gradient shuffles on two simulated ranks; bad input."""
import json

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import _C
from simulated_ranks import on_ranks

oe = flow.one_embedding
_names = iter(range(10 ** 6))


def _embedding(tmp_path, dim=3, size_factor=1):
    name = "cb_emb%d" % next(_names)
    store = oe.make_device_mem_store_options(persistent_path=str(tmp_path / name), capacity=100,
                                             size_factor=size_factor)
    tables = [oe.make_table_options(oe.make_uniform_initializer(low=-0.1, high=0.1))]
    return oe.MultiTableEmbedding(name, dim, flow.float, flow.int64, tables, store), name


def test_unique_key_value_pair():
    keys = flow.tensor(np.array([5, 3, 5, 9, 3], np.int64))
    values = flow.tensor(np.array([1, 0, 1, 1, 0], np.int32))  # each key's table
    num, uniq, tids, inverse = _C.one_embedding_unique_key_value_pair(keys=keys, values=values, num_tables=2,
                                                                     embedding_name="x")
    n = int(num.numpy()[0])
    assert n == 3
    np.testing.assert_array_equal(uniq.numpy()[:n], [5, 3, 9])  # first-seen order
    np.testing.assert_array_equal(uniq.numpy()[:n][inverse.numpy()], keys.numpy())
    np.testing.assert_array_equal(tids.numpy()[:n], [1, 0, 1])
    # without values the i-th key's table is i % num_tables
    _, _, tids, _ = _C.one_embedding_unique_key_value_pair(flow.tensor(np.array([7, 8, 9], np.int64)), None, 2)
    np.testing.assert_array_equal(tids.numpy(), [0, 1, 0])


def test_id_shuffle_and_the_row_exchanges_on_one_rank():
    ids = flow.tensor(np.array([[4, 7], [4, 2]], np.int64))
    (matrix, inv_part, cur_num, cur_ids, cur_tids,
     cur_inv) = _C.one_embedding_id_shuffle(ids=ids, table_ids=None, num_tables=1, embedding_name="x")
    n = int(cur_num.numpy()[0])
    assert n == 3 and matrix.numpy().tolist() == [3]
    assert inv_part.shape == (2, 2)  # shaped as the ids
    np.testing.assert_array_equal(cur_ids.numpy()[cur_inv.numpy()][inv_part.numpy()], ids.numpy())
    table = {4: [1.0, 2.0], 7: [3.0, 4.0], 2: [5.0, 6.0]}
    rows = np.zeros((4, 2), np.float32)
    rows[:n] = [table[k] for k in cur_ids.numpy()[:n]]
    emb = _C.one_embedding_embedding_shuffle(cur_rank_embeddings=flow.tensor(rows), num_unique_matrix=matrix,
                                             cur_rank_inverse_indices=cur_inv,
                                             inverse_unique_partition_indices=inv_part, embedding_name="x")
    np.testing.assert_array_equal(emb.numpy(), [[table[4], table[7]], [table[4], table[2]]])
    grad = flow.tensor(np.arange(8, dtype=np.float32).reshape(4, 2))
    g = _C.one_embedding_embedding_gradient_shuffle(embedding_grad=grad, num_unique_matrix=matrix,
                                                    cur_rank_inverse_indices=cur_inv,
                                                    inverse_unique_partition_indices=inv_part, embedding_name="x")
    want = {4: [0.0 + 4.0, 1.0 + 5.0], 7: [2.0, 3.0], 2: [6.0, 7.0]}
    np.testing.assert_array_equal(g.numpy()[:n], [want[k] for k in cur_ids.numpy()[:n]])
    assert not g.numpy()[n:].any()


def test_shuffles_on_two_ranks_route_ids_to_their_owner():
    ids_of = {0: np.array([1, 2, 3, 1], np.int64), 1: np.array([2, 5, 8, 13], np.int64)}

    def body():
        rank = flow.env.get_rank()
        ids = flow.tensor(ids_of[rank])
        matrix, inv_part, cur_num, cur_ids, _, cur_inv = _C.one_embedding_id_shuffle(ids, None, 1, "x")
        n = int(cur_num.numpy()[0])
        owned = cur_ids.numpy()[:n]
        # the owner's rows: the id itself, twice
        rows = np.zeros((8, 2), np.float32)
        rows[:n] = np.stack([owned, owned], 1)
        emb = _C.one_embedding_embedding_shuffle(flow.tensor(rows), matrix, cur_inv, inv_part, "x")
        g = _C.one_embedding_embedding_gradient_shuffle(flow.ones(4, 2), matrix, cur_inv, inv_part, "x")
        return matrix.numpy(), owned, emb.numpy(), g.numpy()[:n]

    from oneflow_compat.kernels import one_embedding as oe_k

    got = on_ranks(2, body)
    every = np.concatenate(list(ids_of.values()))
    for rank, (matrix, owned, emb, g) in enumerate(got):
        assert set(owned.tolist()) == {k for k in every.tolist() if oe_k.shard_of(np, np.array([k]), 2)[0] == rank}
        np.testing.assert_array_equal(emb, np.stack([ids_of[rank], ids_of[rank]], 1).astype(np.float32))
        counts = {k: int((every == k).sum()) for k in owned.tolist()}
        np.testing.assert_array_equal(g, np.array([[counts[k]] * 2 for k in owned.tolist()], np.float32))
        np.testing.assert_array_equal(matrix, got[0][0])
    m = got[0][0].reshape(2, 2)
    assert m.sum(1).tolist() == [3, 4]  # unique ids per rank: {1, 2, 3}, {2, 5, 8, 13}


def test_lookup_and_put_read_and_write_the_named_store(tmp_path):
    emb, name = _embedding(tmp_path, dim=3, size_factor=2)
    ids = flow.tensor(np.array([11, 12], np.int64))
    with flow.no_grad():
        dense = emb(ids).numpy()  # the module's own lookup creates the lines
    state = json.dumps([oe.make_constant_initializer(0.25)])
    num = flow.tensor(np.array([2], np.int32))
    tids = flow.tensor(np.zeros(2, np.int32))
    lines = _C.one_embedding_lookup(num_unique_ids=num, unique_ids=ids, table_ids=tids, dtype=flow.float32,
                                    embedding_dtype=flow.float32, line_size=6, embedding_size=3,
                                    embedding_name=name, embedding_tables="", state_initializer=state, seed=0)
    np.testing.assert_array_equal(lines.numpy()[:, :3], dense)
    new = _C.one_embedding_lookup(flow.tensor(np.array([1], np.int32)), flow.tensor(np.array([99], np.int64)),
                                  flow.tensor(np.zeros(1, np.int32)), flow.float32, flow.float32, 6, 3, name, "",
                                  state)
    np.testing.assert_array_equal(new.numpy()[0, 3:], [0.25] * 3)  # a new key's state starts at the initializer
    assert np.abs(new.numpy()[0, :3]).max() <= 0.1
    put = np.arange(12, dtype=np.float32).reshape(2, 6)
    assert _C.one_embedding_embedding_put(num_unique_ids=num, unique_ids=ids, unique_embeddings=flow.tensor(put),
                                          embedding_name=name, line_size=6) is None
    with flow.no_grad():
        np.testing.assert_array_equal(emb(ids).numpy(), put[:, :3])


def test_fused_lookup_grad_queues_the_gradient_for_the_optimizer(tmp_path):
    emb, name = _embedding(tmp_path, dim=2)
    ids = flow.tensor(np.array([3, 4, 3], np.int64))
    with flow.no_grad():
        before = emb(ids).numpy()
    opt = oe.Optimizer(flow.optim.SGD(emb.parameters(), lr=0.5), [emb])
    grad = flow.tensor(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32))
    assert _C.one_embedding_fused_lookup_grad(ids=ids, embedding_grad=grad, embedding_name=name, line_size=2,
                                              embedding_size=2) is None
    opt.step()
    with flow.no_grad():
        after = emb(ids).numpy()
    np.testing.assert_allclose(after[0], before[0] - 0.5 * np.array([6.0, 8.0]), rtol=1e-6)
    np.testing.assert_allclose(after[1], before[1] - 0.5 * np.array([3.0, 4.0]), rtol=1e-6)


RNG = np.random.RandomState(2)
D = 2


def _lines(k):
    lines = RNG.rand(3, k * D).astype(np.float32) + 0.1
    return lines, RNG.randn(3, D).astype(np.float32)  # the first 2 of 3 rows are the unique ones


def test_sgd_and_momentum_updates():
    num = flow.tensor(np.array([2], np.int32))
    lines, g = _lines(1)
    out = _C.one_embedding_sgd_update(num_unique_ids=num, unique_embeddings=flow.tensor(lines),
                                      embedding_grad=flow.tensor(g), learning_rate_val=0.1, scale=2.0,
                                      weight_decay=0.01, momentum=0.0, line_size=D, embedding_size=D,
                                      embedding_name="x").numpy()
    w = lines[:2]
    np.testing.assert_allclose(out[:2], w - 0.1 * (2 * g[:2] + 0.01 * w), rtol=1e-5)
    np.testing.assert_array_equal(out[2], lines[2])
    lines, g = _lines(2)
    out = _C.one_embedding_sgd_update(num, flow.tensor(lines), flow.tensor(g), learning_rate_val=0.1, scale=1.0,
                                      weight_decay=0.0, momentum=0.9, line_size=2 * D, embedding_size=D,
                                      embedding_name="x").numpy()
    buf = 0.9 * lines[:2, D:] + g[:2]
    np.testing.assert_allclose(out[:2, D:], buf, rtol=1e-5)
    np.testing.assert_allclose(out[:2, :D], lines[:2, :D] - 0.1 * buf, rtol=1e-5)
    skipped = _C.one_embedding_sgd_update(num, flow.tensor(lines), flow.tensor(g), None, None,
                                          flow.tensor(np.array([1], np.int64)), 0.1, 1.0, 0.0, 0.0, 2 * D, D, "x")
    np.testing.assert_array_equal(skipped.numpy(), lines)
    np.testing.assert_array_equal(out[2], lines[2])
    # the optional tensors: lr and the down scale read from tensors, skip_if 0 updates
    tensors = _C.one_embedding_sgd_update(num, flow.tensor(lines), flow.tensor(g), flow.tensor([0.1]),
                                          flow.tensor([4.0]), flow.tensor(np.array([0], np.int64)), 9.9, 4.0, 0.0,
                                          0.9, 2 * D, D, "x")
    np.testing.assert_allclose(tensors.numpy(), out, rtol=1e-6)


def test_updates_run_inside_nn_graph():
    lines, g = _lines(3)

    class Update(flow.nn.Graph):
        def build(self, num, lines, g, lr):
            return _C.one_embedding_adam_update(num, lines, g, lr, learning_rate_val=0.0, beta1=0.9, beta2=0.99,
                                                bias_correction1_val=0.1, bias_correction2_val=0.01,
                                                line_size=3 * D, embedding_size=D, embedding_name="x")

    args = (flow.tensor(np.array([2], np.int32)), flow.tensor(lines), flow.tensor(g))
    eager = _C.one_embedding_adam_update(*args, learning_rate_val=0.01, beta1=0.9, beta2=0.99,
                                         bias_correction1_val=0.1, bias_correction2_val=0.01, line_size=3 * D,
                                         embedding_size=D, embedding_name="x")
    np.testing.assert_allclose(Update()(*args, flow.tensor([0.01])).numpy(), eager.numpy(), rtol=1e-6)


def test_adam_adagrad_ftrl_updates():
    num = flow.tensor(np.array([2], np.int32))
    lines, g = _lines(3)
    out = _C.one_embedding_adam_update(num_unique_ids=num, unique_embeddings=flow.tensor(lines),
                                       embedding_grad=flow.tensor(g), learning_rate_val=0.01, scale=1.0,
                                       weight_decay=0.1, beta1=0.9, beta2=0.99, bias_correction1_val=0.1,
                                       bias_correction2_val=0.01, epsilon=1e-8, do_bias_correction=True,
                                       line_size=3 * D, embedding_size=D, embedding_name="x").numpy()
    w, m0, v0 = lines[:2, :D], lines[:2, D:2 * D], lines[:2, 2 * D:]
    g = g[:2]
    m, v = 0.9 * m0 + 0.1 * g, 0.99 * v0 + 0.01 * g * g
    want = w - 0.01 / 0.1 * m / (np.sqrt(v) / np.sqrt(0.01) + 1e-8) - 0.01 * 0.1 * w
    np.testing.assert_allclose(out[:2, :D], want, rtol=1e-5)
    np.testing.assert_allclose(out[:2, D:2 * D], m, rtol=1e-5)
    np.testing.assert_allclose(out[:2, 2 * D:], v, rtol=1e-5)

    lines, g = _lines(2)
    out = _C.one_embedding_adagrad_update(num_unique_ids=num, unique_embeddings=flow.tensor(lines),
                                          embedding_grad=flow.tensor(g), train_step_val=3, learning_rate_val=0.1,
                                          scale=1.0, weight_decay=0.0, lr_decay=0.5, epsilon=1e-10,
                                          line_size=2 * D, embedding_size=D, embedding_name="x").numpy()
    lr = 0.1 / (1 + 2 * 0.5)
    g = g[:2]
    acc = lines[:2, D:] + g * g
    np.testing.assert_allclose(out[:2, :D], lines[:2, :D] - lr / (np.sqrt(acc) + 1e-10) * g, rtol=1e-5)
    np.testing.assert_allclose(out[:2, D:], acc, rtol=1e-5)

    lines, g = _lines(3)
    out = _C.one_embedding_ftrl_update(num_unique_ids=num, unique_embeddings=flow.tensor(lines),
                                       embedding_grad=flow.tensor(g), learning_rate_val=0.1, scale=1.0,
                                       weight_decay=0.0, lr_power=-0.5, lambda1=0.01, lambda2=0.1, beta=1.0,
                                       line_size=3 * D, embedding_size=D, embedding_name="x").numpy()
    w, acc, z = (lines[:2, i * D:(i + 1) * D].astype(np.float64) for i in range(3))
    g = g[:2]
    nacc = acc + g * g
    sigma = (nacc ** -0.5 - acc ** -0.5) / 0.1
    nz = z + g - sigma * w
    nw = np.where(np.abs(nz) >= 0.01, (np.sign(nz) * 0.01 - nz) / ((1.0 + nacc ** -0.5) / 0.1 + 0.1), 0.0)
    np.testing.assert_allclose(out[:2, :D], nw, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(out[:2, 2 * D:], nz, rtol=1e-5)


def test_bad_input_is_named(tmp_path):
    with pytest.raises(RuntimeError, match=r"^one_embedding_lookup: no one_embedding named 'nope' on rank 0 "
                                           r"\(make its MultiTableEmbedding first\)$"):
        _C.one_embedding_lookup(flow.tensor([1]), flow.tensor([1]), flow.tensor([0]), flow.float32, flow.float32,
                                4, 4, "nope", "", "")
    with pytest.raises(RuntimeError, match=r"^one_embedding_adam_update: unique_embeddings must be \(n, line_size "
                                           r"2\) with line_size >= 3 \* embedding_size 2, got \(3, 2\)$"):
        _C.one_embedding_adam_update(flow.tensor([1]), flow.zeros(3, 2), flow.zeros(1, 2), learning_rate_val=0.1,
                                     line_size=2, embedding_size=2)
    with pytest.raises(RuntimeError, match=r"^one_embedding_sgd_update: embedding_grad must be \(3, embedding_size "
                                           r"2\), got \(2, 2\)$"):
        _C.one_embedding_sgd_update(flow.tensor([1]), flow.zeros(3, 2), flow.zeros(2, 2), learning_rate_val=0.1,
                                    line_size=2, embedding_size=2)
    with pytest.raises(ValueError, match=r"^one_embedding_id_shuffle: table_ids must be in \[0, 2\), got 0..5$"):
        _C.one_embedding_id_shuffle(flow.tensor([1, 2]), flow.tensor([0, 5]), 2, "x")


def test_shuffles_run_inside_nn_graph_and_quantize_as_oneflow(monkeypatch):
    ids = np.array([[3, 9], [3, 1]], np.int64)
    data = np.array([[0.5, -1.0, 0.25]] * 10, np.float32) * np.arange(1, 11, dtype=np.float32)[:, None]

    class Shuffle(flow.nn.Graph):
        def build(self, ids, data):
            matrix, inv, _, uniq, _, cur_inv = _C.one_embedding_id_shuffle(ids, None, 1, "x")
            rows = _C.gather(data, uniq, axis=0)
            return _C.one_embedding_embedding_shuffle(rows, matrix, cur_inv, inv, "x")

    np.testing.assert_allclose(Shuffle()(flow.tensor(ids), flow.tensor(data)).numpy(), data[ids], rtol=1e-6)
    # ONEFLOW_ONE_EMBEDDING_ENABLE_QUANTIZED_COMM=1: rows travel as int8 scaled by their absolute maximum / 127
    monkeypatch.setenv("ONEFLOW_ONE_EMBEDDING_ENABLE_QUANTIZED_COMM", "1")
    rows = np.array([[0.3, -1.0, 0.01], [2.0, 0.5, -0.7]], np.float32)
    matrix, inv, _, uniq, _, cur_inv = _C.one_embedding_id_shuffle(flow.tensor(np.array([0, 1], np.int64)), None, 1)
    got = _C.one_embedding_embedding_shuffle(flow.tensor(rows), matrix, cur_inv, inv, "x").numpy()
    amax = np.abs(rows).max(1, keepdims=True)
    q = rows * (127.0 / amax)
    want = np.sign(q) * np.floor(np.abs(q) + 0.5) * (amax / 127.0)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert not np.allclose(got, rows, rtol=1e-6)
