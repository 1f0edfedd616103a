"""`flow.summary` (OneFlow v0.3.4): the jobs of OneFlow's own test_summary.py write TensorBoard event files that
TensorBoard's own reader (EventAccumulator) loads back with the values written; the projector files decode as
OneFlow's projector.proto; the structure graph lists the compiled jobs. Skips without the `tensorboard` package
(the project's [summary] extra)."""
import glob
import json
import os

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import typing as tp

tensorboard = pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing import event_accumulator  # noqa: E402
from tensorboard.plugins.hparams import plugin_data_pb2  # noqa: E402


def _jobs(logdir, devices=1):
    """OneFlow's test jobs: mirrored view with ListNumpy placeholders on one device (as OneFlow's test), the
    consistent view with Numpy placeholders on several (each value written once)."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    cfg = flow.FunctionConfig()
    if devices == 1:
        cfg.default_logical_view(flow.scope.mirrored_view())
    Ph = tp.ListNumpy.Placeholder if devices == 1 else (  # noqa: N806
        lambda shape, dtype: tp.Numpy.Placeholder(shape, dtype=dtype, batch_axis=None))

    @flow.global_function(function_config=cfg)
    def CreateWriter():
        flow.summary.create_summary_writer(logdir)

    @flow.global_function(function_config=cfg)
    def ScalarJob(value: Ph((1,), dtype=flow.float),
                  step: Ph((1,), dtype=flow.int64),
                  tag: Ph((1000,), dtype=flow.int8)):
        flow.summary.scalar(value, step, tag)

    @flow.global_function(function_config=cfg)
    def HistogramJob(value: Ph((20, 30), dtype=flow.float),
                     step: Ph((1,), dtype=flow.int64),
                     tag: Ph((9,), dtype=flow.int8)):
        flow.summary.histogram(value, step, tag)

    @flow.global_function(function_config=cfg)
    def PbJob(value: Ph((1500,), dtype=flow.int8),
              step: Ph((1,), dtype=flow.int64)):
        flow.summary.pb(value, step=step)

    @flow.global_function(function_config=cfg)
    def ImageJob(value: Ph((3, 8, 6, 3), dtype=flow.uint8),
                 step: Ph((1,), dtype=flow.int64),
                 tag: Ph((10,), dtype=flow.int8)):
        flow.summary.image(value, step=step, tag=tag)

    @flow.global_function(function_config=cfg)
    def FlushJob():
        flow.summary.flush_summary_writer()

    return CreateWriter, ScalarJob, HistogramJob, PbJob, ImageJob, FlushJob


def _tag(s):
    return np.frombuffer(s.encode(), dtype=np.int8).copy()


def _accumulator(logdir):
    files = glob.glob(os.path.join(logdir, "event", "events.out.tfevents.*"))
    assert len(files) == 1, files
    acc = event_accumulator.EventAccumulator(os.path.join(logdir, "event"), size_guidance={
        event_accumulator.SCALARS: 0, event_accumulator.HISTOGRAMS: 0, event_accumulator.IMAGES: 0,
        event_accumulator.TENSORS: 0})
    return acc.Reload()


@pytest.mark.parametrize("devices", [1, 2])
def test_summary_jobs_write_what_tensorboard_reads(tmp_path, devices):
    logdir = str(tmp_path / "log")
    jobs = _jobs(logdir, devices)
    create, flush = jobs[0], jobs[5]

    def feed(job, byte_sizes):
        """One array per device in the mirrored view; in the consistent view the array itself, int8 strings
        zero-padded to their placeholder's static size (the kernels drop the trailing zeros)."""
        if devices == 1:
            return job

        def call(*arrays):
            out = []
            for a, n in zip(arrays, byte_sizes):
                a = a[0]
                out.append(np.pad(a, (0, n - a.size)) if n else a)
            return job(*out)
        return call

    scalar = feed(jobs[1], [0, 0, 1000])
    histogram = feed(jobs[2], [0, 0, 9])
    pb = feed(jobs[3], [1500, 0])
    image = feed(jobs[4], [0, 0, 10])
    create()
    for i in range(5):
        scalar([np.array([i * 0.5], np.float32)], [np.array([i], np.int64)], [_tag("loss")])
    values = np.random.default_rng(0).standard_normal((20, 30)).astype(np.float32)
    histogram([values], [np.array([3], np.int64)], [_tag("weights")])
    text = flow.summary.text(["vgg16", "resnet50"])
    pb([np.frombuffer(text.SerializeToString(), np.int8).copy()], [np.array([7], np.int64)])
    hp = flow.summary.hparams({flow.summary.HParam("learning_rate", flow.summary.RealRange(1e-2, 1e-1)): 0.02,
                               flow.summary.HParam("optimizer", flow.summary.ValueSet(["adam", "sgd"])): "adam",
                               flow.summary.HParam("magic", flow.summary.ValueSet([False, True])): True,
                               flow.summary.Metric("loss", float): 0.5, "dropout": 0.6})
    pb([np.frombuffer(str(hp).encode(), np.int8).copy()], [np.array([8], np.int64)])  # text format, as OneFlow
    images = np.random.default_rng(1).integers(0, 256, (3, 8, 6, 3)).astype(np.uint8)
    image([images], [np.array([2], np.int64)], [_tag("pics")])
    flush()

    acc = _accumulator(logdir)
    scalars = acc.Scalars("loss")
    assert [e.step for e in scalars] == [0, 1, 2, 3, 4]
    np.testing.assert_allclose([e.value for e in scalars], [0.0, 0.5, 1.0, 1.5, 2.0])
    (h,) = acc.Histograms("weights")
    assert h.step == 3 and h.histogram_value.num == 600
    np.testing.assert_allclose(h.histogram_value.sum, values.astype(np.float64).sum(), rtol=1e-6)
    np.testing.assert_allclose(h.histogram_value.min, values.min())
    assert sum(h.histogram_value.bucket) == 600
    pics = [acc.Images("pics%d" % i)[0] for i in range(3)]
    from PIL import Image
    import io

    for i, p in enumerate(pics):
        assert (p.step, p.width, p.height) == (2, 6, 8)
        np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(p.encoded_image_string))), images[i])
    (t,) = acc.Tensors("text")
    assert t.step == 7 and list(t.tensor_proto.string_val) == [b"vgg16", b"resnet50"]
    (hp_event,) = acc.Tensors("_hparams_/session_start_info")
    content = acc.SummaryMetadata("_hparams_/session_start_info").plugin_data.content
    info = plugin_data_pb2.HParamsPluginData.FromString(content).session_start_info
    assert hp_event.step == 8
    assert info.hparams["optimizer"].string_value == "adam" and info.hparams["magic"].bool_value is True
    assert info.hparams["learning_rate"].number_value == 0.02 and info.hparams["dropout"].number_value == 0.6


def test_summary_without_a_writer_is_an_error(tmp_path):
    _, scalar, *_ = _jobs(str(tmp_path))
    with pytest.raises(RuntimeError, match="no summary writer: call flow.summary.create_summary_writer"):
        scalar([np.array([1.0], np.float32)], [np.array([0], np.int64)], [_tag("x")])


def test_hparam_domains_check_their_values():
    with pytest.raises(TypeError, match="max_value is not an integer value"):
        flow.summary.IntegerRange(1, 2.0)
    with pytest.raises(ValueError, match="max_value must bigger than min_value"):
        flow.summary.RealRange(2.0, 1.0)
    with pytest.raises(ValueError, match="Hparam dtype must be"):
        flow.summary.HParam("x", 3)
    with pytest.raises(ValueError, match="the key is already exist"):
        flow.summary.hparams({"a": 1, flow.summary.HParam("a"): 2})
    assert flow.summary.text([]) is None


def _decode(data):
    """A minimal protobuf reader (field number -> list of values) for the projector file."""
    out, i = {}, 0
    while i < len(data):
        key, i = _varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(data, i)
        elif wire == 1:
            v, i = np.frombuffer(data[i:i + 8], "<f8")[0], i + 8
        else:
            n, i = _varint(data, i)
            v, i = data[i:i + n], i + n
        out.setdefault(field, []).append(v)
    return out


def _varint(data, i):
    shift = value = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def test_projector_files_and_structure_graph(tmp_path):
    p = flow.summary.Projector(str(tmp_path))
    p.create_embedding_projector()
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    label = np.array([1, 2], np.int64)
    p.embedding_projector(value=value, label=label, tag="emb", step=3, sample_name="s", sample_type="image",
                          x=np.zeros((2, 2), np.uint8))
    msg = _decode(open(p.embedding_filename, "rb").read())
    assert _decode(msg[6][0])[1] == [0]  # EMBEDDING
    pro = _decode(msg[1][0])
    assert pro[1] == [b"emb"] and pro[2] == [3]
    tensor = _decode(pro[4][0])
    assert tensor[1] == [b"float32"] and np.array_equal(np.frombuffer(tensor[3][0], np.float32), value.ravel())
    assert [_decode(d)[1][0] for d in _decode(tensor[2][0])[1]] == [2, 3]
    assert _decode(msg[2][0])[1] == [b"s"]
    with pytest.raises(Exception, match="logdir should not be None"):
        flow.summary.Projector()

    flow.clear_default_session()

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return flow.math.relu(x)

    job(np.ones((2, 3), np.float32))
    g = flow.summary.Graph(str(tmp_path))
    g.write_structure_graph()
    graph = json.load(open(g.structure_graph_filename))
    (j,) = graph["jobs"]
    assert j["name"] == "job" and any(op["type"] == "relu" for op in j["ops"])
