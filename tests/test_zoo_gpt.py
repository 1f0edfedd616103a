"""OneFlow-Benchmark's GPT (examples/zoo_gpt.py: the fused attention / softmax-dropout / bias-dropout / bias-gelu
ops, layer norm, tied embedding, AdamW with clipping and a cosine schedule) on 1-D placements: tensor parallel 2,
pipeline parallel 2 and both on 4 devices give the 1-device losses over 5 steps, dropout included; what needs 2-D SBP
(data parallel x tensor parallel) is refused with a clear error."""
import importlib.util
import os

import numpy as np
import pytest

import oneflow_compat as flow
from cpu_reference import device_under_test

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "zoo_gpt.py")
_spec = importlib.util.spec_from_file_location("zoo_gpt", EXAMPLE)
zoo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(zoo)

BATCH, SEQ, VOCAB, STEPS = 4, 16, 64, 5


def tokens(steps=STEPS):
    r = np.random.default_rng(0)
    return [np.stack([(r.integers(0, VOCAB) + r.integers(1, 4) * np.arange(SEQ + 1)) % VOCAB
                      for _ in range(BATCH)]).astype(np.int64) for _ in range(steps)]


def losses(tensor_parallel, pipeline_parallel, steps=STEPS):
    devices = tensor_parallel * pipeline_parallel
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    layout = zoo.Layout(devices, tensor_parallel, pipeline_parallel, layers=2)
    job = zoo.gpt_train_job(layout, BATCH, SEQ, vocab=VOCAB, hidden=32, heads=4, layers=2, lr=1e-2, steps=100)
    return [float(np.mean(job(x))) for x in tokens(steps)]


@pytest.fixture(scope="module")
def one_device():
    return losses(1, 1)


@pytest.mark.parametrize("tp_size,pp_size", [(2, 1), (1, 2), (2, 2)])
def test_gpt_parallel_layouts_equal_one_device(one_device, tp_size, pp_size):
    assert all(np.isfinite(one_device))
    np.testing.assert_allclose(losses(tp_size, pp_size), one_device, rtol=1e-4)


def test_gpt_loss_falls():
    got = losses(2, 1, steps=12)
    assert np.mean(got[-3:]) < np.mean(got[:3]) - 0.05


def test_data_with_tensor_parallelism_asks_for_a_2d_example():
    # this example keeps to 1-D placements; 2-D SBP (hierarchical_parallel_cast with two entries) is sbp2d's
    with pytest.raises(ValueError, match="data parallelism combined with tensor parallelism needs 2-D SBP"):
        zoo.Layout(4, 2, 1, 2)
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def cast_job(x: flow.typing.Numpy.Placeholder((4, 8))):
        return flow.hierarchical_parallel_cast(x, parallel_distribution=["S(0)", "B"])

    # two entries on a flat placement of 2 devices: OneFlow checks one entry per hierarchy dimension
    with pytest.raises(ValueError, match="has 2 entries, but the placement %s 0:0-1 has 1 dimension" % device_under_test()):
        cast_job(np.zeros((4, 8), np.float32))
