"""Writing `flow.summary`'s events as TensorBoard event files, through the `tensorboard` package's own writer and
protocol buffers (the optional `summary` extra: `pip install oneflow_compat[summary]`).

Values as OneFlow v0.3.4 builds them (`oneflow/user/summary/event_writer_helper.cpp`, `histogram.cpp`): a scalar
with the "scalars" plugin, a histogram with TensorFlow's default bucket limits (±1e-12 · 1.1^k up to 1e20, and
±DBL_MAX) and the "histograms" plugin, images encoded as PNG with the "images" plugin (tag, or tag + index for a
batch of several). OneFlow wrote `logdir/event/event.<seconds>.log`; the files here go to the same folder under
TensorBoard's name (`events.out.tfevents.*`) so that TensorBoard finds them.
"""
import io
import os
import time

import numpy

NEEDS = ("flow.summary writes TensorBoard event files with the `tensorboard` package's writer: install it "
         "(pip install tensorboard, or the project's [summary] extra)")


def _tb():
    try:
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError as e:
        raise ImportError("%s (%s)" % (NEEDS, e)) from None
    return event_pb2, summary_pb2, EventFileWriter


def summary_protos():
    """The tensorboard package's summary_pb2, tensor_pb2 and plugin_data_pb2 (hparams) modules."""
    try:
        from tensorboard.compat.proto import summary_pb2, tensor_pb2, tensor_shape_pb2
        from tensorboard.plugins.hparams import plugin_data_pb2
    except ImportError as e:
        raise ImportError("%s (%s)" % (NEEDS, e)) from None
    return summary_pb2, tensor_pb2, tensor_shape_pb2, plugin_data_pb2


class Writer:
    """One event file under `logdir/event`, written as the job runs."""

    def __init__(self, logdir):
        _, _, EventFileWriter = _tb()
        self.logdir = os.path.join(logdir, "event")
        os.makedirs(self.logdir, exist_ok=True)
        self._writer = EventFileWriter(self.logdir)

    def _add(self, summary, step):
        event_pb2, _, _ = _tb()
        self._writer.add_event(event_pb2.Event(wall_time=time.time(), step=int(step), summary=summary))

    def scalar(self, value, step, tag):
        _, summary_pb2, _ = _tb()
        s = summary_pb2.Summary()
        v = s.value.add(tag=tag, simple_value=float(numpy.asarray(value).reshape(-1)[0]))
        v.metadata.plugin_data.plugin_name = "scalars"
        self._add(s, step)

    def histogram(self, values, step, tag):
        _, summary_pb2, _ = _tb()
        s = summary_pb2.Summary()
        v = s.value.add(tag=tag)
        v.metadata.plugin_data.plugin_name = "histograms"
        fill_histogram(v.histo, numpy.asarray(values, dtype=numpy.float64).reshape(-1))
        self._add(s, step)

    def image(self, images, step, tag):
        from PIL import Image

        _, summary_pb2, _ = _tb()
        images = numpy.asarray(images)
        if images.ndim != 4 or images.shape[3] not in (1, 3, 4) or images.dtype != numpy.uint8:
            raise ValueError("flow.summary.image: uint8 images (n, h, w, 1|3|4) expected, got %s %s" % (
                images.dtype, images.shape))
        s = summary_pb2.Summary()
        mode = {1: "L", 3: "RGB", 4: "RGBA"}[images.shape[3]]
        for i, image in enumerate(images):
            buf = io.BytesIO()
            Image.fromarray(image[:, :, 0] if mode == "L" else image, mode).save(buf, format="PNG")
            v = s.value.add(tag=tag if len(images) == 1 else tag + str(i))
            v.metadata.plugin_data.plugin_name = "images"
            v.image.height, v.image.width, v.image.colorspace = image.shape[0], image.shape[1], image.shape[2]
            v.image.encoded_image_string = buf.getvalue()
        self._add(s, step)

    def summary_bytes(self, raw, step):
        """A serialized Summary proto (binary, or the text format OneFlow's own test fed)."""
        _, summary_pb2, _ = _tb()
        from google.protobuf import message, text_format

        # a static int8 blob may carry zero padding after the message: tried as it is first, then without it
        for candidate in (raw, raw.rstrip(b"\0")):
            s = summary_pb2.Summary()
            try:
                s.ParseFromString(candidate)
                break
            except message.DecodeError:
                continue
        else:
            s = summary_pb2.Summary()
            text_format.Parse(raw.rstrip(b"\0").decode("utf-8"), s)
        self._add(s, step)

    def flush(self):
        self._writer.flush()

    def close(self):
        self._writer.close()


def _bucket_limits():
    limits, v = [], 1e-12
    while v < 1e20:
        limits.append(v)
        v *= 1.1
    limits.append(numpy.finfo(numpy.float64).max)
    negative = [-x for x in reversed(limits)]
    return negative + limits  # OneFlow/TensorFlow: -DBL_MAX, …, -1e-12, then 1e-12, …, DBL_MAX


_LIMITS = numpy.array(_bucket_limits())


def fill_histogram(histo, values):
    """TensorFlow's Histogram::AppendToProto: min, max, num, sum, sum of squares, and the non-empty buckets with
    runs of empty ones collapsed (their limits kept)."""
    counts = numpy.bincount(numpy.searchsorted(_LIMITS, values, side="right"), minlength=_LIMITS.size + 1)
    counts = counts[:_LIMITS.size]
    histo.min = float(values.min()) if values.size else float(_LIMITS[-1])
    histo.max = float(values.max()) if values.size else float(-_LIMITS[-1])
    histo.num = float(values.size)
    histo.sum = float(values.sum())
    histo.sum_squares = float((values * values).sum())
    for i, c in enumerate(counts):
        if c > 0 or (i + 1 < counts.size and counts[i + 1] > 0) or i == 0:
            histo.bucket_limit.append(float(_LIMITS[i]))
            histo.bucket.append(float(c))
