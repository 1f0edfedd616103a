"""BERT pretraining as OneFlow-Benchmark's `LanguageModeling/BERT/run_pretraining.py` builds it (v0.4.0: `bert.py`,
`pretrain.py`, `util.py`): embeddings (word, token type, position) with layer norm and dropout, encoder layers of
self-attention and a gelu feed-forward, the masked-LM head (positions gathered with `flow.gather(..., batch_dims=2)`,
a transform, logits tied to the word embeddings) and the next-sentence head; AdamW with weight decay excluding
biases and layer norms, global-norm clipping, linear warmup then polynomial decay. The data are OFRecords with the
zoo's seven features, written by this script (`write_records`), read with `flow.data.ofrecord_reader`.

    python examples/zoo_bert_pretrain.py [--devices N] [--steps S] [--layers L] [--heads H] [--seq-length T]
    mpiexec -n 2 python examples/zoo_bert_pretrain.py

`pretrain_job(...)` and `write_records(...)` are importable (tests/test_zoo_bert.py)."""
import argparse
import math
import os
import tempfile

import struct

import numpy as np
import oneflow as flow
from oneflow.core.record import record_pb2

FEATURES = ("input_ids", "next_sentence_labels", "input_mask", "segment_ids", "masked_lm_ids",
            "masked_lm_positions", "masked_lm_weights")


def write_records(directory, parts, examples, seq_length, max_predictions, vocab_size, seed=0):
    """`parts` OFRecord part files of learnable examples: each masked token is the token two places before it, the
    next-sentence label the parity of the first token."""
    r = np.random.default_rng(seed)
    os.makedirs(directory, exist_ok=True)

    def ints(v):
        return record_pb2.Feature(int32_list=record_pb2.Int32List(value=[int(x) for x in v]))

    records = []
    for _ in range(examples):
        ids = r.integers(5, vocab_size, seq_length)
        positions = np.sort(r.choice(np.arange(2, seq_length), max_predictions, replace=False))
        targets = ids[positions - 2]
        ids[positions] = 3  # [MASK]
        segment = (np.arange(seq_length) >= seq_length // 2).astype(int)
        records.append(record_pb2.OFRecord(feature={
            "input_ids": ints(ids), "next_sentence_labels": ints([ids[0] % 2]), "input_mask": ints(np.ones(seq_length)),
            "segment_ids": ints(segment), "masked_lm_ids": ints(targets), "masked_lm_positions": ints(positions),
            "masked_lm_weights": record_pb2.Feature(float_list=record_pb2.FloatList(value=[1.0] * max_predictions))}))
    per = -(-examples // parts)
    for p in range(parts):
        # an OFRecord part file: each record's length (int64, little-endian), then the serialized record
        with open(os.path.join(directory, "part-%d" % p), "wb") as f:
            for rec in records[p * per:(p + 1) * per]:
                payload = rec.SerializeToString()
                f.write(struct.pack("<q", len(payload)) + payload)


def _init(std):
    return flow.truncated_normal(std)


def _dense(x, units, name, std=0.02):
    w = flow.get_variable(name + "-weight", shape=[x.shape[-1], units], dtype=x.dtype, initializer=_init(std))
    b = flow.get_variable(name + "-bias", shape=[units], dtype=x.dtype, initializer=flow.constant_initializer(0.0))
    return flow.nn.bias_add(flow.matmul(x, w), b)


def _dropout(x, rate):
    return x if rate == 0.0 else flow.nn.dropout(x, rate=rate)


def _layer_norm(x):
    return flow.layers.layer_norm(x, name="LayerNorm", begin_norm_axis=-1, begin_params_axis=-1)


def _attention(x, mask_add, heads, seq_length, dropout):
    width = x.shape[-1] // heads

    def scores(blob):
        return flow.transpose(flow.reshape(blob, [-1, seq_length, heads, width]), perm=[0, 2, 1, 3])

    q, k = scores(_dense(x, x.shape[-1], "query")), scores(_dense(x, x.shape[-1], "key"))
    v = scores(_dense(x, x.shape[-1], "value"))
    s = flow.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(float(width))) + mask_add
    probs = _dropout(flow.nn.softmax(s), dropout)
    context = flow.transpose(flow.matmul(probs, v), perm=[0, 2, 1, 3])
    return flow.reshape(context, [-1, heads * width])


def bert(input_ids, input_mask, segment_ids, vocab_size, seq_length, hidden, layers, heads, dropout,
         type_vocab_size=2, max_positions=512):
    """The sequence output (batch * seq, hidden) and the word embedding table."""
    with flow.scope.namespace("bert"):
        with flow.scope.namespace("embeddings"):
            table = flow.get_variable("word_embeddings", shape=[vocab_size, hidden], initializer=_init(0.02))
            out = flow.gather(params=table, indices=input_ids, axis=0)
            types = flow.get_variable("token_type_embeddings", shape=[type_vocab_size, hidden],
                                      initializer=_init(0.02))
            out = out + flow.reshape(flow.matmul(flow.one_hot(flow.reshape(segment_ids, [-1]), depth=type_vocab_size,
                                                              dtype=flow.float), types), out.shape)
            positions = flow.get_variable("position_embeddings", shape=[1, max_positions, hidden],
                                          initializer=_init(0.02))
            out = out + flow.slice(positions, [None, 0, 0], [None, seq_length, -1])
            out = _dropout(_layer_norm(out), dropout)
        with flow.scope.namespace("encoder"):
            mask = flow.reshape(flow.cast(input_mask, dtype=flow.float), [-1, 1, 1, seq_length])
            mask_add = (mask - 1.0) * 10000.0
            h = flow.reshape(out, (-1, hidden))
            for i in range(layers):
                with flow.scope.namespace("layer_%d" % i):
                    with flow.scope.namespace("attention"):
                        with flow.scope.namespace("self"):
                            a = _attention(h, mask_add, heads, seq_length, dropout)
                        with flow.scope.namespace("output"):
                            a = _layer_norm(_dropout(_dense(a, hidden, "dense"), dropout) + h)
                    with flow.scope.namespace("intermediate"):
                        m = flow.math.gelu(_dense(a, 4 * hidden, "dense"))
                    with flow.scope.namespace("output"):
                        h = _layer_norm(_dropout(_dense(m, hidden, "dense"), dropout) + a)
    return h, table


def pretraining_losses(data, vocab_size, seq_length, max_predictions, hidden, layers, heads, dropout):
    """(total, masked-LM, next-sentence) losses of the zoo's PreTrain."""
    h, table = bert(data["input_ids"], data["input_mask"], data["segment_ids"], vocab_size, seq_length, hidden,
                    layers, heads, dropout)
    weights = data["masked_lm_weights"]
    with flow.scope.namespace("cls-predictions"):
        seq = flow.reshape(h, [-1, seq_length, hidden])
        picked = flow.reshape(flow.gather(params=seq, indices=data["masked_lm_positions"], axis=2, batch_dims=2),
                              [-1, hidden])
        with flow.scope.namespace("transform"):
            picked = _layer_norm(flow.math.gelu(_dense(picked, hidden, "dense")))
        bias = flow.get_variable("output_bias", shape=[vocab_size], initializer=flow.constant_initializer(1.0))
        logits = flow.nn.bias_add(flow.matmul(picked, table, transpose_b=True), bias)
        per = flow.nn.sparse_softmax_cross_entropy_with_logits(
            logits=logits, labels=flow.reshape(data["masked_lm_ids"], [-1]))
        per = flow.reshape(per, [-1, max_predictions]) * weights
        mlm = flow.math.reduce_mean(flow.math.reduce_sum(per, axis=[-1]) / (flow.math.reduce_sum(weights, axis=[-1])
                                                                            + 1e-5))
    with flow.scope.namespace("bert-pooler"):
        first = flow.reshape(flow.slice(flow.reshape(h, [-1, seq_length, hidden]), [None, 0, 0], [None, 1, -1]),
                             [-1, hidden])
        pooled = flow.math.tanh(_dense(first, hidden, "dense"))
    with flow.scope.namespace("cls-seq_relationship"):
        w = flow.get_variable("output_weights", shape=[2, hidden], initializer=_init(0.02))
        b = flow.get_variable("output_bias", shape=[2], initializer=flow.constant_initializer(0.0))
        nsp = flow.math.reduce_mean(flow.nn.sparse_softmax_cross_entropy_with_logits(
            logits=flow.nn.bias_add(flow.matmul(pooled, w, transpose_b=True), b),
            labels=flow.reshape(data["next_sentence_labels"], [-1])))
    return mlm + nsp, mlm, nsp


def create_optimizer(lr, steps, warmup_proportion=0.1, weight_decay=0.01):
    """util.CreateOptimizer of the zoo."""
    warmup = flow.optimizer.warmup.linear(int(steps * warmup_proportion), 0)
    schedule = flow.optimizer.PolynomialScheduler(lr, steps, 0.0, warmup=warmup)
    return flow.optimizer.AdamW(schedule, epsilon=1e-6, weight_decay=weight_decay,
                                weight_decay_excludes=["bias", "LayerNorm", "layer_norm"],
                                grad_clipping=flow.optimizer.grad_clipping.by_global_norm(1.0))


def decoders(data_dir, batch_size, data_part_num, seq_length, max_predictions):
    """BertDecoder of run_pretraining.py."""
    ofrecord = flow.data.ofrecord_reader(data_dir, batch_size=batch_size, data_part_num=data_part_num,
                                         random_shuffle=True, shuffle_after_epoch=True)
    shapes = {"input_ids": [seq_length], "next_sentence_labels": [1], "input_mask": [seq_length],
              "segment_ids": [seq_length], "masked_lm_ids": [max_predictions],
              "masked_lm_positions": [max_predictions], "masked_lm_weights": [max_predictions]}
    return {k: flow.data.OFRecordRawDecoder(ofrecord, k, shape=shapes[k],
                                            dtype=flow.float if k == "masked_lm_weights" else flow.int32)
            for k in FEATURES}


def pretrain_job(data_dir, data_part_num, batch_size, steps, lr=1e-3, seq_length=16, max_predictions=3,
                 vocab_size=100, hidden=32, layers=2, heads=2, dropout=0.1, name="PretrainJob"):
    """The train job of run_pretraining.py, returning {total_loss, mlm_loss, nsp_loss} per call."""
    def job():
        if data_part_num == 1:  # the zoo's own rule: one part file is read on one CPU device
            with flow.scope.placement("cpu", "0:0"):
                data = decoders(data_dir, batch_size, data_part_num, seq_length, max_predictions)
        else:
            data = decoders(data_dir, batch_size, data_part_num, seq_length, max_predictions)
        total, mlm, nsp = pretraining_losses(data, vocab_size, seq_length, max_predictions, hidden, layers, heads,
                                             dropout)
        create_optimizer(lr, steps).minimize(total)
        return {"total_loss": total, "mlm_loss": mlm, "nsp_loss": nsp}

    job.__name__ = name
    config = flow.function_config()
    config.default_data_type(flow.float)
    return flow.global_function(type="train", function_config=config)(job)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", type=int, default=1)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch-size-per-device", type=int, default=8)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--seq-length", type=int, default=32)
    ap.add_argument("--vocab-size", type=int, default=1000)
    ap.add_argument("--data-part-num", type=int, default=1)
    a = ap.parse_args()
    flow.config.gpu_device_num(a.devices)
    ranks = flow.distributed.get_world_size()
    if ranks > 1:
        flow.env.machine([{"addr": "127.0.0.%d" % (r + 1)} for r in range(ranks)])
    # every rank writes the same files into its own folder (no rank waits for another's)
    data_dir = os.path.join(tempfile.gettempdir(), "zoo_bert_pretrain_data_%d" % flow.distributed.get_rank())
    write_records(data_dir, a.data_part_num, 512, a.seq_length, 5, a.vocab_size)
    job = pretrain_job(data_dir, a.data_part_num, a.batch_size_per_device * a.devices * ranks, a.steps,
                       seq_length=a.seq_length, max_predictions=5, vocab_size=a.vocab_size, hidden=64 * a.heads,
                       layers=a.layers, heads=a.heads)
    for step in range(a.steps):
        out = job().get()
        print("step %d total_loss %.6f mlm_loss %.6f nsp_loss %.6f" % (
            step + 1, out["total_loss"].numpy().mean(), out["mlm_loss"].numpy().mean(),
            out["nsp_loss"].numpy().mean()))


if __name__ == "__main__":
    main()
