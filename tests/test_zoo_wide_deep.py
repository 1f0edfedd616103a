"""OneFlow-Benchmark's Wide & Deep (examples/zoo_wide_deep.py: OneRec / OFRecord readers on CPU reader devices,
`flow.identity_n`, embeddings split along rows and columns with the zoo's parallel casts, dropout, int32 click labels
in sigmoid cross entropy, LazyAdam on the gathered rows): 2 model devices == 1 over 5 steps with the same readers, the
same numbers from OneRec and OFRecord files of the same examples, and a falling loss."""
import importlib.util
import os

import numpy as np

import oneflow_compat as flow

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "zoo_wide_deep.py")
_spec = importlib.util.spec_from_file_location("zoo_wide_deep", EXAMPLE)
zoo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(zoo)

VOCAB, BATCH = 200, 32


def _losses(devices, fmt, data, steps=5):
    flow.clear_default_session()
    flow.config.cpu_device_num(2)
    config_devices = devices

    # the readers on their own 2 CPU devices as the zoo places them, the model on `devices` devices
    def model_scope_job():
        labels, dense, wide, deep = zoo._loader(fmt, data, BATCH, 2)
        with flow.scope.placement("cpu", "0:0-%d" % (config_devices - 1)):
            logits = zoo.model(dense, wide, deep, VOCAB)
            loss = flow.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
            flow.optimizer.LazyAdam(flow.optimizer.PiecewiseConstantScheduler([], [2e-2])).minimize(loss)
            return flow.math.reduce_mean(loss)

    config = flow.FunctionConfig()
    config.default_data_type(flow.float)
    config.indexed_slices_optimizer_conf(dict(include_op_names=dict(op_name=["wide_embedding", "deep_embedding"])))
    job = flow.global_function("train", config)(model_scope_job)
    return [float(job().get().numpy().mean()) for _ in range(steps)]


def test_wide_deep_two_devices_equal_one(tmp_path):
    files = zoo.write_data(str(tmp_path / "onerec"), 2, 256, VOCAB, "onerec")
    one = _losses(1, "onerec", files)
    two = _losses(2, "onerec", files)
    assert all(np.isfinite(one))
    np.testing.assert_allclose(two, one, rtol=1e-4)


def test_onerec_and_ofrecord_give_the_same_steps(tmp_path):
    files = zoo.write_data(str(tmp_path / "onerec"), 2, 256, VOCAB, "onerec")
    zoo.write_data(str(tmp_path / "ofrecord"), 2, 256, VOCAB, "ofrecord")
    # no shuffling: both readers stream their file in order, so both formats feed the same examples
    got = {}
    for fmt, data in (("onerec", files), ("ofrecord", str(tmp_path / "ofrecord"))):
        flow.clear_default_session()
        flow.config.cpu_device_num(2)

        def make(fmt, data):
            def read_job():
                return zoo._loader(fmt, data, BATCH, 2, shuffle=False)
            read_job.__name__ = "read_" + fmt
            return flow.global_function()(read_job)
        job = make(fmt, data)
        got[fmt] = [[b.numpy() for b in job().get()] for _ in range(3)]
    for a, b in zip(got["onerec"], got["ofrecord"]):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


def test_wide_deep_loss_falls(tmp_path):
    files = zoo.write_data(str(tmp_path / "onerec"), 2, 512, VOCAB, "onerec")
    losses = _losses(2, "onerec", files, steps=15)
    assert np.mean(losses[-4:]) < np.mean(losses[:4]) - 0.02
