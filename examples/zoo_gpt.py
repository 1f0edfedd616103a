"""GPT as OneFlow-Benchmark's `LanguageModeling/GPT` (oneflow_gpt, v0.4.0) builds it, on 1-D placements: token and
position embeddings, transformer layers (layer norm, a column-parallel qkv projection through
`flow.nn.fused_self_attention_query_mul_key_and_value`, `flow.math.fused_scale_tril_softmax_dropout`, a row-parallel
projection through `flow.nn.fused_bias_add_dropout`, a gelu MLP through `flow.nn.fused_bias_add_gelu`), the logits
tied to the token embedding, and `flow.nn.distributed_sparse_softmax_cross_entropy_with_logits` when the vocabulary
is split; AdamW with clipping, warmup and cosine decay. Tensor parallelism splits the weights as the zoo's
`distribute.py` says for a model-parallel run (qkv / fc columns `S(1)`, projections' rows `S(0)`, the embedding's
vocabulary `S(0)`); pipeline parallelism places the layers' stages on device groups with
`flow.experimental.scope.config(pipeline_stage_id_hint=...)`. Data: `flow.data.megatron_gpt_mmap_data_loader` on a
Megatron dataset this script writes, or fed token batches (`tokens=` placeholder).

    python examples/zoo_gpt.py [--tensor-parallel T] [--pipeline-parallel P] [--steps S] [--layers L]
    mpiexec -n 2 python examples/zoo_gpt.py --tensor-parallel 2

Data parallelism combined with tensor parallelism needs 2-D SBP (the zoo's `hierarchical_parallel_cast` with two
entries on a 2-D placement hierarchy): this example keeps to 1-D placements, so it asks for devices = tensor x
pipeline; 2-D placements are tests/test_sbp2d.py's. `gpt_train_job(...)` is importable (tests/test_zoo_gpt.py)."""
import argparse
import math
import os
import tempfile

import numpy as np
import oneflow as flow
import oneflow.typing as tp


class Layout:
    """Which device group holds each layer and how weights split (oneflow_gpt/distribute.py, 1-D cases)."""

    def __init__(self, devices, tensor_parallel, pipeline_parallel, layers, machines=1):
        self.tp, self.pp = tensor_parallel, pipeline_parallel
        per_machine = devices
        ids = ["%d:%d" % (i // per_machine, i % per_machine) for i in range(devices * machines)]
        if len(ids) != tensor_parallel * pipeline_parallel:
            raise ValueError("%d devices for tensor parallel %d x pipeline parallel %d: data parallelism combined "
                             "with tensor parallelism needs 2-D SBP, which this 1-D example does not build" % (
                                 len(ids), tensor_parallel, pipeline_parallel))
        per_stage = len(ids) // pipeline_parallel
        self.stages = [ids[i:i + per_stage] for i in range(0, len(ids), per_stage)]
        self.layer_stage = [i * pipeline_parallel // layers for i in range(layers)]

    def split(self, axis):
        return ["S(%d)" % axis] if self.tp > 1 else []

    def scope(self, stage, device="cpu"):
        return _Stage(self, stage, device)


class _Stage:
    def __init__(self, layout, stage, device):
        self.placement = flow.scope.placement(device, layout.stages[stage])
        self.config = flow.experimental.scope.config(pipeline_stage_id_hint=stage) if layout.pp > 1 else None

    def __enter__(self):
        self.placement.__enter__()
        if self.config is not None:
            self.config.__enter__()

    def __exit__(self, *exc):
        if self.config is not None:
            self.config.__exit__(*exc)
        return self.placement.__exit__(*exc)


def _linear(name, x, size, layout, axis, std):
    with flow.scope.namespace(name):
        w = flow.get_variable("weight", shape=(x.shape[-1], size),
                              initializer=flow.random_normal_initializer(stddev=std),
                              parallel_distribution=layout.split(axis))
        b = flow.get_variable("bias", shape=(size,), initializer=flow.constant_initializer(0.0),
                              parallel_distribution=layout.split(0) if axis == 1 else [])
    return flow.matmul(x, w), b


def _layernorm(name, x):
    with flow.scope.namespace(name):
        beta = flow.get_variable("beta", shape=x.shape[-1:], initializer=flow.constant_initializer(0.0))
        gamma = flow.get_variable("gamma", shape=x.shape[-1:], initializer=flow.constant_initializer(1.0))
    return flow.nn.layer_norm(x, gamma, beta, -1, -1, 1e-5, name)


def transformer_layer(name, h, heads, layout, dropout, std, out_std):
    """One GPT block on (seq, batch, hidden) states."""
    hidden = h.shape[-1]
    with flow.scope.namespace(name):
        norm1 = _layernorm("layernorm_1", h)
        with flow.scope.namespace("attn"):
            x, b = _linear("c_attn", norm1, 3 * hidden, layout, 1, std)
            x = flow.nn.bias_add(x, b, data_format="NHC")
            qmk, v = flow.nn.fused_self_attention_query_mul_key_and_value(x, head_size=hidden // heads,
                                                                         alpha=1.0 / math.sqrt(hidden // heads))
            qmk = flow.math.fused_scale_tril_softmax_dropout(qmk, diagonal=0, scale=1.0, fill_value=float("-inf"),
                                                             rate=dropout)
            a = flow.flatten(flow.transpose(flow.matmul(qmk, v), [2, 0, 1, 3]), start_dim=2)
            a, b = _linear("c_proj", a, hidden, layout, 0, out_std)
            a = flow.nn.fused_bias_add_dropout(a, b, data_format="NHC", rate=dropout)
        h = h + a
        norm2 = _layernorm("layernorm_2", h)
        with flow.scope.namespace("mlp"):
            m, b = _linear("c_fc", norm2, 4 * hidden, layout, 1, std)
            m = flow.nn.fused_bias_add_gelu(m, b, data_format="NHC")
            m, b = _linear("c_proj", m, hidden, layout, 0, out_std)
            m = flow.nn.fused_bias_add_dropout(m, b, data_format="NHC", rate=dropout)
        return h + m


def gpt_loss(tokens, labels, layout, vocab, hidden, heads, layers, dropout=0.1, std=0.02):
    """Mean next-token cross entropy of oneflow_gpt's GPTModel + ParallelSparseSoftmaxCrossEntropyLoss."""
    seq = tokens.shape[1]
    with flow.scope.namespace("model"):
        with layout.scope(0):
            wpe = flow.get_variable("wpe", shape=(seq, hidden), initializer=flow.random_normal_initializer(stddev=std))
            wte = flow.get_variable("wte", shape=(vocab, hidden),
                                    initializer=flow.random_normal_initializer(stddev=std),
                                    parallel_distribution=layout.split(0))
            h = flow.nn.dropout(flow.gather(wte, tokens) + wpe, rate=dropout, name="embd_dropout")
            h = flow.transpose(h, [1, 0, 2])  # (s, b, H) for the fused attention
        for i in range(layers):
            with layout.scope(layout.layer_stage[i]):
                h = transformer_layer("h%d" % i, h, heads, layout, dropout, std, std / math.sqrt(2.0 * layers))
        with layout.scope(layout.pp - 1):
            h = _layernorm("layernorm_f", h)
            h = flow.flatten(flow.transpose(h, [1, 0, 2]), start_dim=0, end_dim=1)
            logits = flow.matmul(h, wte, transpose_b=True)
    with flow.scope.namespace("loss"), layout.scope(layout.pp - 1):
        labels = flow.flatten(labels)
        if layout.tp > 1:
            loss = flow.nn.distributed_sparse_softmax_cross_entropy_with_logits(labels, logits)
        else:
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        return flow.math.reduce_mean(loss)


def optimizer(lr, steps, warmup=0, min_lr=1e-5):
    """oneflow_gpt/optimizer.py's AdamW."""
    schedule = flow.optimizer.CosineScheduler(base_lr=lr, steps=steps, alpha=min_lr / lr,
                                              warmup=flow.optimizer.warmup.linear(warmup, 0) if warmup else None)
    return flow.optimizer.AdamW(schedule, do_bias_correction=True, beta1=0.9, beta2=0.999, epsilon=1e-8,
                                weight_decay_excludes=["bias", "LayerNorm", "layernorm"], weight_decay=1e-2,
                                grad_clipping=flow.optimizer.grad_clipping.by_global_norm(1.0))


def gpt_train_job(layout, batch, seq, vocab=256, hidden=32, heads=4, layers=2, lr=3e-3, steps=1000,
                  dataset=None, dropout=0.1, name="gpt_train"):
    """The train job: with `dataset` (a Megatron prefix) the Megatron loader, else a fed (batch, seq + 1) int64
    token placeholder."""
    def body(x):
        with layout.scope(0):
            data = flow.slice(x, begin=(None, 0), size=(None, seq))
        with layout.scope(layout.pp - 1):
            labels = flow.slice(x, begin=(None, 1), size=(None, seq))
        loss = gpt_loss(data, labels, layout, vocab, hidden, heads, layers, dropout)
        optimizer(lr, steps).minimize(loss)
        return loss

    config = flow.function_config()
    config.default_data_type(flow.float)
    if dataset is None:
        def fed(x: tp.Numpy.Placeholder((batch, seq + 1), dtype=flow.int64)) -> tp.Numpy:
            return body(x)
        fed.__name__ = name
        return flow.global_function("train", config)(fed)

    def loaded() -> tp.Numpy:
        with layout.scope(0):
            x = flow.data.megatron_gpt_mmap_data_loader(data_file_prefix=dataset, seq_length=seq,
                                                        num_samples=batch * steps, batch_size=batch,
                                                        dtype=flow.int64, shuffle=True, random_seed=1234,
                                                        split_sizes=[949, 50, 1], split_index=0,
                                                        name="gpt_data_loader")
        return body(x)
    loaded.__name__ = name
    return flow.global_function("train", config)(loaded)


def write_dataset(prefix, vocab, documents=64, seed=3):
    """A Megatron indexed dataset (`prefix`.bin / .idx) of learnable documents (arithmetic progressions)."""
    from oneflow_compat.datasets.megatron_io import write_dataset as write

    r = np.random.default_rng(seed)
    docs = [((r.integers(0, vocab) + r.integers(1, 4) * np.arange(r.integers(80, 200))) % vocab).astype(np.int64)
            for _ in range(documents)]
    write(prefix, docs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tensor-parallel", type=int, default=1)
    ap.add_argument("--pipeline-parallel", type=int, default=1)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--micro-batch-size", type=int, default=4)
    ap.add_argument("--seq-length", type=int, default=32)
    a = ap.parse_args()
    ranks = flow.distributed.get_world_size()
    devices = a.tensor_parallel * a.pipeline_parallel // ranks
    flow.config.gpu_device_num(devices)
    if ranks > 1:
        flow.env.machine([{"addr": "127.0.0.%d" % (r + 1)} for r in range(ranks)])
    prefix = os.path.join(tempfile.gettempdir(), "zoo_gpt_%d" % flow.distributed.get_rank(), "text_document")
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    write_dataset(prefix, 256)
    layout = Layout(devices, a.tensor_parallel, a.pipeline_parallel, a.layers, ranks)
    job = gpt_train_job(layout, a.micro_batch_size, a.seq_length, layers=a.layers, dataset=prefix)
    for step in range(a.steps):
        print("step %d loss %.6f" % (step + 1, float(np.mean(job()))))


if __name__ == "__main__":
    main()
