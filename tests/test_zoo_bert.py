"""OneFlow-Benchmark's BERT pretraining (examples/zoo_bert_pretrain.py: the zoo's encoder, masked-LM head through
`flow.gather(batch_dims=2)`, next-sentence head, AdamW with weight-decay exclusions, clipping, warmup and polynomial
decay; OFRecord data read as run_pretraining.py reads it) at small sizes: finite falling losses and 2 devices ==
1 device over 5 steps, dropout included (masks depend on the logical position only)."""
import importlib.util
import os

import numpy as np

import oneflow_compat as flow

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples",
                       "zoo_bert_pretrain.py")
_spec = importlib.util.spec_from_file_location("zoo_bert_pretrain", EXAMPLE)
zoo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(zoo)

SEQ, PRED, VOCAB, BATCH, STEPS = 16, 3, 100, 8, 5


def run(devices, data_dir, steps=STEPS, parts=1):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    job = zoo.pretrain_job(data_dir, parts, BATCH, 50, lr=2e-3, seq_length=SEQ, max_predictions=PRED,
                           vocab_size=VOCAB, hidden=32, layers=2, heads=2, dropout=0.1)
    out = [job().get() for _ in range(steps)]
    return {k: [float(o[k].numpy().mean()) for o in out] for k in ("total_loss", "mlm_loss", "nsp_loss")}


def test_bert_two_devices_equal_one(tmp_path):
    zoo.write_records(str(tmp_path), 1, 64, SEQ, PRED, VOCAB)
    one = run(1, str(tmp_path))
    assert all(np.isfinite(one["total_loss"]))
    two = run(2, str(tmp_path))
    for k in one:
        np.testing.assert_allclose(two[k], one[k], rtol=1e-4)


def test_bert_loss_falls(tmp_path):
    zoo.write_records(str(tmp_path), 2, 64, SEQ, PRED, VOCAB)
    losses = run(2, str(tmp_path), steps=12, parts=2)["total_loss"]
    assert all(np.isfinite(losses))
    assert np.mean(losses[-3:]) < np.mean(losses[:3]) - 0.05
