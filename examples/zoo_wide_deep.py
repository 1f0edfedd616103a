"""Wide & Deep as OneFlow-Benchmark's `ClickThroughRate/WideDeepLearning/wdl_train_eval.py` trains it (v0.4.0): the
data read by `flow.data.onerec_reader` / `onerec_decoder` (or OFRecord, or `decode_random`) on CPU reader devices and
joined with `flow.identity_n`; a wide embedding split along its rows and a deep embedding split along its columns
(`distribute=split(0)` / `split(1)`), `parallel_cast`s with gradient distributes, a relu MLP with dropout, sigmoid
cross entropy on int32 click labels, LazyAdam updating only the gathered rows (`indexed_slices_optimizer_conf`).
This script writes its OneRec / OFRecord files (`write_data`).

    python examples/zoo_wide_deep.py [--devices N] [--steps S] [--dataset-format onerec|ofrecord|synthetic]

`train_job(...)` and `write_data(...)` are importable (tests/test_zoo_wide_deep.py)."""
import argparse
import os
import struct
import tempfile

import numpy as np
import oneflow as flow
from oneflow.core.record import record_pb2
from oneflow_compat.datasets.onerec_io import write_onerec

DENSE, WIDE, DEEP = 13, 2, 26


def write_data(directory, files, examples, vocab, fmt="onerec", seed=2):
    """Learnable click data: label = dense_fields[0] + dense_fields[1] > 1; `files` OneRec files
    (part-0000k.onerec) or OFRecord parts (part-0000k)."""
    r = np.random.default_rng(seed)
    os.makedirs(directory, exist_ok=True)
    rows = []
    for _ in range(examples):
        dense = r.random(DENSE).astype(np.float32)
        rows.append({"labels": np.array([int(dense[0] + dense[1] > 1.0)], np.int32), "dense_fields": dense,
                     "wide_sparse_fields": r.integers(0, vocab, WIDE).astype(np.int32),
                     "deep_sparse_fields": r.integers(0, vocab, DEEP).astype(np.int32)})
    per = -(-examples // files)
    paths = []
    for f in range(files):
        chunk = rows[f * per:(f + 1) * per]
        if fmt == "onerec":
            paths.append(os.path.join(directory, "part-%05d.onerec" % f))
            write_onerec(paths[-1], chunk)
        else:
            paths.append(os.path.join(directory, "part-%05d" % f))
            with open(paths[-1], "wb") as out:
                for row in chunk:
                    feats = {k: (record_pb2.Feature(float_list=record_pb2.FloatList(value=v.tolist()))
                                 if v.dtype == np.float32 else
                                 record_pb2.Feature(int32_list=record_pb2.Int32List(value=v.tolist())))
                             for k, v in row.items()}
                    payload = record_pb2.OFRecord(feature=feats).SerializeToString()
                    out.write(struct.pack("<q", len(payload)) + payload)
    return paths


def _loader(fmt, data, batch_size, reader_devices, machines=1, shuffle=True):
    # the zoo's reader placement: `reader_devices` CPU devices on every machine
    with flow.scope.placement("cpu", ["%d:0-%d" % (m, reader_devices - 1) for m in range(machines)]):
        if fmt == "onerec":
            recs = flow.data.onerec_reader(files=data, batch_size=batch_size, random_shuffle=shuffle,
                                           verify_example=False, shuffle_mode="batch", shuffle_buffer_size=4,
                                           shuffle_after_epoch=shuffle)

            def field(key, shape, dtype=flow.int32):
                return flow.data.onerec_decoder(recs, key=key, shape=shape, dtype=dtype)
        elif fmt == "ofrecord":
            recs = flow.data.ofrecord_reader(data, batch_size=batch_size, data_part_num=reader_devices * machines,
                                             part_name_suffix_length=5, random_shuffle=shuffle,
                                             shuffle_after_epoch=shuffle)

            def field(key, shape, dtype=flow.int32):
                return flow.data.OFRecordRawDecoder(recs, key, shape=shape, dtype=dtype)
        else:
            def field(key, shape, dtype=flow.int32):
                init = (flow.random_uniform_initializer() if dtype is flow.float else
                        flow.random_uniform_initializer(dtype=flow.int32) if key == "labels" else
                        flow.zeros_initializer(flow.int32))
                return flow.data.decode_random(shape=shape, dtype=dtype, batch_size=batch_size, initializer=init)
        out = [field("labels", (1,)), field("dense_fields", (DENSE,), flow.float),
               field("wide_sparse_fields", (WIDE,)), field("deep_sparse_fields", (DEEP,))]
    return flow.identity_n(out)


def model(dense_fields, wide_sparse_fields, deep_sparse_fields, vocab, embedding_size=8, hidden=(32, 32),
          dropout=0.5):
    wide_ids = flow.parallel_cast(wide_sparse_fields, distribute=flow.distribute.broadcast())
    wide_table = flow.get_variable(name="wide_embedding", shape=(vocab, 1),
                                   initializer=flow.random_uniform_initializer(minval=-0.05, maxval=0.05),
                                   distribute=flow.distribute.split(0))
    wide = flow.gather(params=wide_table, indices=wide_ids)
    wide = flow.reshape(wide, shape=(-1, wide.shape[-1] * wide.shape[-2]))
    wide_scores = flow.math.reduce_sum(wide, axis=[1], keepdims=True)
    wide_scores = flow.parallel_cast(wide_scores, distribute=flow.distribute.split(0),
                                     gradient_distribute=flow.distribute.broadcast())
    deep_ids = flow.parallel_cast(deep_sparse_fields, distribute=flow.distribute.broadcast())
    deep_table = flow.get_variable(name="deep_embedding", shape=(vocab, embedding_size),
                                   initializer=flow.random_uniform_initializer(minval=-0.05, maxval=0.05),
                                   distribute=flow.distribute.split(1))
    deep = flow.gather(params=deep_table, indices=deep_ids)
    deep = flow.parallel_cast(deep, distribute=flow.distribute.split(0), gradient_distribute=flow.distribute.split(2))
    deep = flow.reshape(deep, shape=(-1, deep.shape[-1] * deep.shape[-2]))
    features = flow.concat([deep, dense_fields], axis=1)
    for i, units in enumerate(hidden):
        features = flow.layers.dense(features, units=units, kernel_initializer=flow.glorot_uniform_initializer(),
                                     bias_initializer=flow.constant_initializer(0.0), activation=flow.math.relu,
                                     name="fc%d" % (i + 1))
        features = flow.nn.dropout(features, rate=dropout)
    deep_scores = flow.layers.dense(features, units=1, kernel_initializer=flow.glorot_uniform_initializer(),
                                    bias_initializer=flow.constant_initializer(0.0), name="fc%d" % (len(hidden) + 1))
    return wide_scores + deep_scores


def train_job(fmt, data, batch_size, vocab, reader_devices, machines=1, lr=1e-2, name="wdl_train_job"):
    """The zoo's train_job: the mean loss of a LazyAdam step."""
    def job():
        labels, dense, wide, deep = _loader(fmt, data, batch_size, reader_devices, machines)
        logits = model(dense, wide, deep, vocab)
        loss = flow.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        flow.optimizer.LazyAdam(flow.optimizer.PiecewiseConstantScheduler([], [lr])).minimize(loss)
        return flow.math.reduce_mean(loss)

    job.__name__ = name
    config = flow.FunctionConfig()
    config.default_data_type(flow.float)
    config.indexed_slices_optimizer_conf(dict(include_op_names=dict(op_name=["wide_embedding", "deep_embedding"])))
    return flow.global_function("train", config)(job)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", type=int, default=1)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--vocab-size", type=int, default=1000)
    ap.add_argument("--dataset-format", default="onerec", choices=["onerec", "ofrecord", "synthetic"])
    a = ap.parse_args()
    flow.config.gpu_device_num(a.devices)
    ranks = flow.distributed.get_world_size()
    if ranks > 1:
        flow.env.machine([{"addr": "127.0.0.%d" % (r + 1)} for r in range(ranks)])
    reader_devices = 2 * a.devices  # the zoo's num_dataloader_thread_per_gpu = 2
    directory = os.path.join(tempfile.gettempdir(), "zoo_wide_deep_%s_%d" % (a.dataset_format,
                                                                           flow.distributed.get_rank()))
    data = None
    if a.dataset_format != "synthetic":
        paths = write_data(directory, reader_devices * ranks, 1024, a.vocab_size, a.dataset_format)
        data = paths if a.dataset_format == "onerec" else directory
    job = train_job(a.dataset_format, data, a.batch_size, a.vocab_size, reader_devices, ranks)
    for step in range(a.steps):
        print("step %d loss %.6f" % (step + 1, float(job().get().numpy().mean())))


if __name__ == "__main__":
    main()
