"""`flow.summary`: TensorBoard logging as OneFlow v0.3.4 offers it (`oneflow/python/ops/summary_ops.py`,
`oneflow/python/summary/*.py`).

Inside job functions: `create_summary_writer(logdir)`, `scalar(value, step, tag)`, `histogram(value, step, tag)`,
`image(value, step, tag)`, `pb(value, step)`, `flush_summary_writer()` add ops that write when the job runs; tags
and serialized protos are int8 blobs (as OneFlow's own test feeds them: `np.fromstring("loss", dtype=np.int8)`).
Outside: `text(...)` and `hparams(...)` build Summary protos (feed them to `pb`), `HParam` / `Metric` /
`IntegerRange` / `RealRange` / `ValueSet` describe hyperparameters, `Projector` writes OneFlow's embedding /
exception projector files and `Graph` the compiled jobs' structure. The event files are TensorBoard's (written by
the `tensorboard` package's writer, the `summary` extra; `core/summary/events.py`).
"""
import hashlib
import json
import os
import time

import numpy as np

from oneflow_compat.core.summary import events, projector_pb
from oneflow_compat.ir import builder
from oneflow_compat.ops.registry import new_op


def _name(name, prefix, what):
    return name if name is not None else builder.current(what).job.unique_name(prefix)


def create_summary_writer(logdir, name=None):
    """Opens the session's event writer on `logdir` (files under logdir/event) when the job runs."""
    new_op("create_summary_writer", [], {"logdir": str(logdir)},
           name=_name(name, "CreateWriter_", "flow.summary.create_summary_writer"))


def flush_summary_writer(name=None):
    new_op("flush_summary_writer", [], {}, name=_name(name, "FlushWriter_", "flow.summary.flush_summary_writer"))


def scalar(value, step, tag, name=None):
    """Writes value[0] at step[0] under the tag (an int8 blob of its bytes)."""
    new_op("summary_write_scalar", [value, step, tag], {}, name=_name(name, "WriteScalar_", "flow.summary.scalar"))


def histogram(value, step, tag, name=None):
    """Writes the histogram of every entry of value."""
    new_op("summary_write_histogram", [value, step, tag], {},
           name=_name(name, "WriteHistogram_", "flow.summary.histogram"))


def image(value, step=None, tag=None, name=None):
    """Writes uint8 NHWC images (1, 3 or 4 channels) as PNG; without a tag blob the tag is "image" (OneFlow's
    default)."""
    if step is None:
        raise TypeError("flow.summary.image: step is required (an int64 blob of shape (1,))")
    ins = [value, step] + ([tag] if tag is not None else [])
    new_op("summary_write_image", ins, {"tag": "image"}, name=_name(name, "WriteImage_", "flow.summary.image"))


def pb(value, step=None, name=None):
    """Writes a serialized Summary proto (an int8 blob of its bytes, binary or text format) at step."""
    ins = [value] + ([step] if step is not None else [])
    new_op("summary_write_pb", ins, {}, name=_name(name, "WritePb_", "flow.summary.pb"))


# --- protos built outside jobs --------------------------------------------------------------------------------------
def text(text, tag=None):
    """A Summary proto holding a list of strings for TensorBoard's text plugin (None for an empty list)."""
    summary_pb2, tensor_pb2, tensor_shape_pb2, _ = events.summary_protos()
    if isinstance(text, (tuple, list)) and len(text) > 0:
        if not isinstance(tag, str) or tag is None:
            tag = "text"
        shape = tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=len(text))])
        tensor = tensor_pb2.TensorProto(dtype=7, tensor_shape=shape)  # DT_STRING
        tensor.string_val.extend(t.encode("utf-8") for t in text)
        summary = summary_pb2.Summary()
        value = summary.value.add(tag=tag, tensor=tensor)
        value.metadata.plugin_data.plugin_name = "text"
        return summary
    return None


class IntegerRange:
    def __init__(self, min_value, max_value):
        if not isinstance(max_value, int):
            raise TypeError("max_value is not an integer value: %r" % (max_value,))
        if not isinstance(min_value, int):
            raise TypeError("min_value is not an integer value: %r" % (min_value,))
        if min_value > max_value:
            raise ValueError("max_value must bigger than min_value: %r > %r" % (min_value, max_value))
        self.min_value, self.max_value = min_value, max_value


class RealRange:
    def __init__(self, min_value, max_value):
        if not isinstance(max_value, float):
            raise TypeError("max_value is not an float value: %r" % (max_value,))
        if not isinstance(min_value, float):
            raise TypeError("min_value is not an float value: %r" % (min_value,))
        if min_value > max_value:
            raise ValueError("max_value must bigger than min_value: %r > %r" % (min_value, max_value))
        self.min_value, self.max_value = min_value, max_value


class ValueSet:
    def __init__(self, values, dtype=None):
        self.values = list(values)
        if dtype is None:
            dtype = type(self.values[0]) if self.values else str
        if dtype not in (int, float, bool, str):
            raise ValueError("Value type must in (int, float, bool, str), %r is not supported!" % (dtype,))
        for v in self.values:
            if not isinstance(v, dtype):
                raise TypeError("The type of value is not supported by hparams: %r" % (v,))
        self.dtype = dtype


class HParam:
    """A hyperparameter's name and domain (IntegerRange, RealRange, ValueSet or None)."""

    def __init__(self, name, dtype=None):
        if not isinstance(dtype, (IntegerRange, RealRange, ValueSet, type(None))):
            raise ValueError("Hparam dtype must be: (IntegerRange, RealRange, ValueSet) : %r" % (dtype,))
        self.name, self.dtype = name, dtype

    def __hash__(self):
        return hash(("HParam", self.name))

    def __eq__(self, other):
        return isinstance(other, HParam) and other.name == self.name


Hparam = HParam


class Metric:
    """A metric reported with the hyperparameters (a number)."""

    def __init__(self, name, dtype=None):
        dtype = float if dtype is None else dtype
        if dtype not in (int, float):
            raise ValueError("Value type must in (int, float), %r is not supported!" % (dtype,))
        self.name, self.dtype = name, dtype

    def __hash__(self):
        return hash(("Metric", self.name))

    def __eq__(self, other):
        return isinstance(other, Metric) and other.name == self.name


def _value(v):
    return v.item() if isinstance(v, np.generic) else v


def hparams(hparams):
    """A Summary proto with the HParams plugin's session_start_info: each hyperparameter's value (string, number
    or bool) and each metric's, grouped by a hash of the hyperparameters (OneFlow's layout)."""
    summary_pb2, tensor_pb2, tensor_shape_pb2, plugin_data_pb2 = events.summary_protos()
    values, metrics = {}, {}
    for key, value in dict.items(hparams):
        if isinstance(key, Metric):
            if key.name in values or key.name in metrics:
                raise ValueError("the key is already exist %r" % (key.name,))
            metrics[key.name] = _value(value)
            continue
        key = key.name if isinstance(key, HParam) else key
        if key in values or key in metrics:
            raise ValueError("the key is already exist %r" % (key,))
        values[key] = _value(value)
    group = hashlib.sha256(json.dumps(values, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()
    start = plugin_data_pb2.SessionStartInfo(group_name=group, start_time_secs=time.time())
    for key in sorted(values):
        v = values[key]
        if isinstance(v, bool):
            start.hparams[key].bool_value = v
        elif isinstance(v, str):
            start.hparams[key].string_value = v
        elif isinstance(v, (float, int)):
            start.hparams[key].number_value = v
        else:
            raise TypeError("the type of value: %r is not supported!" % (v,))
    for key, v in metrics.items():
        if not isinstance(v, (float, int)):
            raise TypeError("the type of value: %r is not supported!" % (v,))
        # metrics ride along as hyperparameters of the session, as OneFlow writes them
        start.hparams[key].number_value = v
    plugin = plugin_data_pb2.HParamsPluginData(version=0, session_start_info=start)
    summary = summary_pb2.Summary()
    value = summary.value.add(tag="_hparams_/session_start_info",
                              tensor=tensor_pb2.TensorProto(dtype=1, tensor_shape=tensor_shape_pb2.TensorShapeProto(
                                  dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=0)])))
    value.metadata.plugin_data.plugin_name = "hparams"
    value.metadata.plugin_data.content = plugin.SerializeToString()
    return summary


# --- files of OneFlow's own tools ------------------------------------------------------------------------------------
class Projector:
    """Embedding and exception projector files under logdir/projector (OneFlow's projector.proto)."""

    def __init__(self, logdir=None):
        if logdir is None:
            raise Exception("logdir should not be None!")
        self.logdir = os.path.join(logdir, "projector")
        os.makedirs(self.logdir, exist_ok=True)
        self.embedding_filename = None
        self.exception_filename = None

    def create_embedding_projector(self):
        if self.embedding_filename is not None and os.path.exists(self.embedding_filename):
            raise OSError("You must create only one embedding projector!")
        self.embedding_filename = os.path.join(self.logdir, "projector.%d.log" % int(time.time()))

    def create_exception_projector(self):
        if self.exception_filename is not None and os.path.exists(self.exception_filename):
            raise OSError("You must create only one embedding projector!")
        self.exception_filename = os.path.join(self.logdir, "projector.gradit.%d.log" % int(time.time()))

    def _write(self, filename, kind, tag, step, value, label, sample_name, sample_type, x):
        if filename is None:
            raise OSError("create the projector file first (create_embedding_projector / "
                          "create_exception_projector)")
        sample = None
        if sample_name is not None and sample_type is not None:
            kind_code = projector_pb.SAMPLE_TYPES.get(str(sample_type).lower())
            if kind_code is None:
                raise NotImplementedError("sample_type must be image, audio or text, got %r" % (sample_type,))
            sample = projector_pb.sample(sample_name, kind_code, None if x is None else np.asarray(x))
        pro = projector_pb.projector(tag, step, time.time(), np.asarray(value),
                                     None if label is None else np.asarray(label))
        data = projector_pb.summary_projector(kind, [pro], sample)
        tmp = filename + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, filename)  # never a half-written file

    def embedding_projector(self, value=None, label=None, tag=None, step=None, sample_name=None, sample_type=None,
                            x=None):
        self._write(self.embedding_filename, projector_pb.EMBEDDING, tag or "embedding_projector", step, value,
                    label, sample_name, sample_type, x)

    def exception_projector(self, value=None, tag=None, step=None, sample_name=None, sample_type=None, x=None):
        self._write(self.exception_filename, projector_pb.EXCEPTION, tag or "exception_projector", step, value,
                    None, sample_name, sample_type, x)


class Graph:
    """`write_structure_graph()` writes logdir/graph/structure_graph.json: the default session's compiled jobs,
    their ops (name, type, placement, SBP, inputs and outputs with shapes and dtypes)."""

    def __init__(self, logdir=None):
        if logdir is None:
            raise Exception("logdir should not be None!")
        self.logdir = os.path.join(logdir, "graph")
        os.makedirs(self.logdir, exist_ok=True)
        self.structure_graph_filename = None
        self.compute_graph_filename = None

    def write_structure_graph(self):
        from oneflow_compat.framework import session as sess

        if self.structure_graph_filename is not None and os.path.exists(self.structure_graph_filename):
            raise OSError("You must create only one structure graph log file!")
        self.structure_graph_filename = os.path.join(self.logdir, "structure_graph.json")
        s = sess.default_session()
        s.try_init()
        graph = {"jobs": [_job_dict(job) for job in s.jobs.values()]}
        with open(self.structure_graph_filename, "w", encoding="utf-8") as f:
            json.dump(graph, f, indent=1)


def _job_dict(job):
    def blob(b):
        return {"name": b.logical_blob_name, "shape": list(b.shape), "dtype": b.dtype.name}

    return {"name": job.name, "type": job.type, "ops": [
        {"name": op.name, "type": op.type, "placement": repr(op.placement),
         "sbp_in": [repr(s) for s in op.sbp_in or []], "sbp_out": [repr(s) for s in op.sbp_out or []],
         "inputs": [blob(x) for x in op.inputs], "outputs": [blob(y) for y in op.outputs]} for op in job.ops]}
