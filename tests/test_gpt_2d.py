"""A GPT block in OneFlow-Benchmark's 2-D hybrid layout (oneflow_gpt v0.4.0, LanguageModeling/GPT/oneflow_gpt:
model.py and distribute.py) on a (2, 2) legacy hierarchy — data parallel along mesh axis 0, tensor (model) parallel
along axis 1 — trained a few steps equals the same block on one device.

The block is written here after model.py's structure and its parallel distributions (distribute.py @ v0.4.0):
  tokens / hidden states [S(0), B]; wte [B, S(0)] (vocab-parallel, tied to the logits), wpe [B, B];
  column-parallel linear: weight [B, S(1)], bias [B, S(0)], its input cast by `backward_p2b_parallel_cast`
  (forward identity; backward [S(0), P] -> [S(0), B] through grad_mode="manual");
  row-parallel linear: weight [B, S(0)], bias [B, B], its [S(0), P] output cast by `forward_p2b_parallel_cast`
  (forward all-reduce along the model axis, backward identity);
  layer norm parameters [B, B]; logits [S(0), S(1)] into distributed_sparse_softmax_cross_entropy_with_logits.
On one device (`is_non_parallel`) the casts are left out and the variables take no distribution, as in
distribute.py. The hidden states are kept as (batch * seq, hidden) between the attention's reshapes (model.py takes
that 2-D form too: `_infer_split_axis` gives S(0)), so every linear layer is a plain matmul. OneFlow-Benchmark's
own GPT on 1-D placements is the zoo's (tests/test_zoo_gpt.py). (oneflow_gpt itself, run with
--tensor-model-parallel-size 2 --num-gpus-per-node 4, prints the 1-device losses once both pad the vocabulary alike:
its padded size is a multiple of make_vocab_size_divisible_by x the tensor-parallel size.)
"""
import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp
from oneflow_compat.ir import sbp as S
from oneflow_compat.tools import explain as explain_mod

BATCH, SEQ, HIDDEN, HEADS, VOCAB, STEPS = 4, 8, 16, 2, 32, 5
HEAD = HIDDEN // HEADS
MESH = (2, 2)


class Layout:
    """distribute.py's _DistributeUtil reduced to the two cases tested: hybrid on a (2, 2) hierarchy, or none."""

    def __init__(self, hybrid):
        self.hybrid = hybrid
        self.devices = 4 if hybrid else 1
        self.hierarchy = list(MESH) if hybrid else None

    def dist(self, pair):  # _gen_parallel_dist_by_2d_sbp
        return list(pair) if self.hybrid else []

    def scope(self):
        return flow.scope.placement("cpu", "0:0-%d" % (self.devices - 1), self.hierarchy)

    def split_axis(self, x):  # _infer_split_axis for the (b, s, H) and (b*s, H) shapes used here
        return 0

    def forward_p2b(self, x):  # forward [S(0), P] -> [S(0), B] (all-reduce); backward identity
        if not self.hybrid:
            return x
        d = ["S(%d)" % self.split_axis(x), "B"]
        return flow.hierarchical_parallel_cast(x, parallel_distribution=d, grad_mode="manual",
                                               grad_parallel_distribution=d)

    def backward_p2b(self, x):  # forward identity; backward [S(0), P] -> [S(0), B]
        return self.forward_p2b(x)


def _variable(layout, name, shape, init, dist, seed=None):
    return flow.get_variable(name, shape=shape, initializer=init, random_seed=seed,
                             parallel_distribution=layout.dist(dist))


def _linear_params(layout, name, n_in, n_out, wdist, bdist, seed):
    with flow.scope.namespace(name):
        w = _variable(layout, "weight", (n_in, n_out), flow.random_normal_initializer(stddev=0.2), wdist, seed)
        b = _variable(layout, "bias", (n_out,), flow.random_normal_initializer(stddev=0.1), bdist, seed + 1)
    return w, b


def col_parallel_linear(layout, name, x, n_out, seed, gelu=False):
    w, b = _linear_params(layout, name, x.shape[-1], n_out, ("B", "S(1)"), ("B", "S(0)"), seed)
    x = flow.matmul(layout.backward_p2b(x), w)  # [S(0), B] x [B, S(1)] -> [S(0), S(1)]
    if gelu:
        return flow.nn.fused_bias_add_gelu(x, b, data_format="NC")
    return flow.nn.bias_add(x, b, data_format="NC")


def row_parallel_linear(layout, name, x, n_out, seed):
    w, b = _linear_params(layout, name, x.shape[-1], n_out, ("B", "S(0)"), ("B", "B"), seed)
    x = layout.forward_p2b(flow.matmul(x, w))  # [S(0), S(1)] x [B, S(0)] -> [S(0), P] -> [S(0), B]
    return flow.nn.bias_add(x, b, data_format="NC")


def layernorm(layout, name, x):
    with flow.scope.namespace(name):
        beta = _variable(layout, "beta", x.shape[-1:], flow.constant_initializer(0.0), ("B", "B"))
        gamma = _variable(layout, "gamma", x.shape[-1:], flow.constant_initializer(1.0), ("B", "B"))
    return flow.nn.layer_norm(x, gamma, beta, -1, -1, 1e-5, name)


def attention(layout, h):
    with flow.scope.namespace("attn"):
        h = col_parallel_linear(layout, "c_attn", h, 3 * HIDDEN, seed=11)
        h = flow.reshape(h, (BATCH, SEQ, HEADS, 3 * HEAD))  # q, k, v of a head side by side
        q, k, v = (flow.transpose(flow.slice(h, begin=[None, None, None, i * HEAD],
                                             size=[None, None, None, HEAD]), perm=[0, 2, 1, 3]) for i in range(3))
        qk = flow.matmul(q, k, transpose_b=True, alpha=1.0 / np.sqrt(HEAD))  # (b, n, s, s) [S(0), S(1)]
        qk = flow.math.fused_scale_tril_softmax_dropout(qk, diagonal=0, scale=1.0, fill_value=float("-inf"),
                                                         rate=0.0)
        h = flow.reshape(flow.transpose(flow.matmul(qk, v), [0, 2, 1, 3]), (BATCH * SEQ, HIDDEN))
        return row_parallel_linear(layout, "c_proj", h, HIDDEN, seed=13)


def mlp(layout, h):
    with flow.scope.namespace("mlp"):
        h = col_parallel_linear(layout, "c_fc", h, 4 * HIDDEN, seed=15, gelu=True)
        return row_parallel_linear(layout, "c_proj", h, HIDDEN, seed=17)


def gpt_train_job(layout, lr=1e-2):
    flow.clear_default_session()
    flow.config.cpu_device_num(layout.devices)
    cfg = flow.function_config()
    cfg.default_data_type(flow.float)

    @flow.global_function(type="train", function_config=cfg)
    def train(tokens: tp.Numpy.Placeholder((BATCH, SEQ), dtype=flow.int64),
              labels: tp.Numpy.Placeholder((BATCH, SEQ), dtype=flow.int64)) -> tp.Numpy:
        with layout.scope():
            if layout.hybrid:  # input_data_parallel_cast
                tokens = flow.hierarchical_parallel_cast(tokens, parallel_distribution=["S(0)", "B"])
                labels = flow.hierarchical_parallel_cast(labels, parallel_distribution=["S(0)", "B"])
            with flow.scope.namespace("model"):
                wpe = _variable(layout, "wpe", (SEQ, HIDDEN), flow.random_normal_initializer(stddev=0.2),
                                ("B", "B"), seed=3)
                wte = _variable(layout, "wte", (VOCAB, HIDDEN), flow.random_normal_initializer(stddev=0.2),
                                ("B", "S(0)"), seed=4)
                # [B, S(0)] x [S(0), B] -> [S(0), P] -> [S(0), B]
                h = layout.forward_p2b(flow.gather(wte, tokens)) + wpe
                h = flow.flatten(h, start_dim=0, end_dim=1)  # (b*s, H): model.py's 2-D case (see the docstring)
                with flow.scope.namespace("h0"):
                    h = flow.identity(h)
                    h = h + attention(layout, layernorm(layout, "layernorm_1", h))
                    h = h + mlp(layout, layernorm(layout, "layernorm_2", h))
                h = layernorm(layout, "layernorm_f", h)
                h = layout.backward_p2b(h)
                logits = flow.matmul(h, wte, transpose_b=True)  # [S(0), B] x [B, S(0)]^T -> [S(0), S(1)]
            with flow.scope.namespace("loss"):
                labels = flow.flatten(labels)
                if layout.hybrid:
                    loss = flow.nn.distributed_sparse_softmax_cross_entropy_with_logits(labels, logits)
                else:
                    loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
                loss = flow.math.reduce_mean(loss)
            flow.optimizer.AdamW(flow.optimizer.PiecewiseConstantScheduler([], [lr]), weight_decay=1e-2,
                                 grad_clipping=flow.optimizer.grad_clipping.by_global_norm(1.0)).minimize(loss)
        return loss

    return train


def batches(steps=STEPS):
    """Two batches of sequences that follow a rule (next token = token + stride), taken in turn: the loss of each
    must fall as the block learns them."""
    r = np.random.default_rng(0)
    two = []
    for _ in range(2):
        seq = np.stack([(r.integers(0, VOCAB) + r.integers(1, 4) * np.arange(SEQ + 1)) % VOCAB
                        for _ in range(BATCH)]).astype(np.int64)
        two.append((seq[:, :-1].copy(), seq[:, 1:].copy()))
    return [two[i % 2] for i in range(steps)]


def run(hybrid, steps=STEPS):
    layout = Layout(hybrid)
    job = gpt_train_job(layout)
    losses = [float(np.asarray(job(x, y)).reshape(-1)[0]) for x, y in batches(steps)]
    weights = {k: v.numpy() for k, v in flow.get_all_variables().items()}
    return losses, weights, explain_mod.explain_session()


@pytest.fixture(scope="module")
def one_device():
    return run(False)


@pytest.fixture(scope="module")
def hybrid():
    return run(True)


def test_gpt_block_on_a_2x2_hierarchy_equals_one_device(one_device, hybrid):
    assert all(np.isfinite(one_device[0]))
    assert one_device[0][-1] < one_device[0][0] - 0.1  # it learns (steps 0 and 4 see the same batch)
    np.testing.assert_allclose(hybrid[0], one_device[0], rtol=1e-5)
    assert set(hybrid[1]) == set(one_device[1])
    # The keys' bias has a zero gradient in exact arithmetic (q.(k + b) adds the same q.b to every key of a query,
    # which the softmax cancels): what reaches it is rounding noise, which AdamW divides by its own size into
    # lr-sized steps whatever the order of the sums. Those entries are held to AdamW's step bound instead.
    keys = np.zeros(3 * HIDDEN, bool)
    for head in range(HEADS):
        keys[head * 3 * HEAD + HEAD: head * 3 * HEAD + 2 * HEAD] = True
    for name, w in one_device[1].items():
        got = hybrid[1][name]
        if name == "model-h0-attn-c_attn-bias":
            np.testing.assert_allclose(got[keys], w[keys], atol=2 * 1e-2 * STEPS, err_msg=name)
            got, w = got[~keys], w[~keys]
        # (atol: an entry whose gradient is near zero gets an AdamW step of its rounding-noise ratio, up to ~1e-5)
        np.testing.assert_allclose(got, w, rtol=1e-4, atol=5e-5, err_msg=name)


def test_gpt_block_variables_and_casts_lie_as_distribute_py_says(hybrid):
    report = hybrid[2]
    want = {"model-wte": (S.B, S.S(0)), "model-wpe": (S.B, S.B),
            "model-h0-attn-c_attn-weight": (S.B, S.S(1)), "model-h0-attn-c_attn-bias": (S.B, S.S(0)),
            "model-h0-attn-c_proj-weight": (S.B, S.S(0)), "model-h0-attn-c_proj-bias": (S.B, S.B),
            "model-h0-mlp-c_fc-weight": (S.B, S.S(1)), "model-h0-mlp-c_proj-weight": (S.B, S.S(0)),
            "model-h0-layernorm_1-gamma": (S.B, S.B)}
    for name, pair in want.items():
        assert report.op(name).sbp_out == [S.nd(pair, MESH)], name
    text = str(report)
    # the row-parallel matmuls' partial sums are all-reduced along the model axis only (forward_p2b_parallel_cast),
    # the data-parallel gradients along the data axis only
    assert "mesh axis 1: P -> B all-reduce over {0:0,0:1} {0:2,0:3}" in text
    assert "mesh axis 0: P -> B all-reduce over {0:0,0:2} {0:1,0:3}" in text
    casts = [o for o in report.ops if o.type == "hierarchical_parallel_cast"]
    assert casts and all(o.sbp_out[0] == S.nd((S.S(0), S.B), MESH) for o in casts if o.section == "forward")
