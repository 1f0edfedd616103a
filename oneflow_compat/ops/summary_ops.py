"""The summary ops of OneFlow v0.3.4 (`oneflow/user/ops/summary_ops.cpp`): create_summary_writer,
flush_summary_writer, summary_write_scalar / _histogram / _pb / _image. They run on the host when the job runs and
write through the session's event writer (`core/summary/events.py`). Each value is written once: by the device of
the placement's first position (one process holds it), whatever the number of devices and ranks; inputs are read
whole (B).
"""
import weakref

from oneflow_compat.backend import devices
from oneflow_compat.core.summary import events
from oneflow_compat.ir.sbp import B
from oneflow_compat.ops.registry import OpDef, register

_WRITERS = weakref.WeakKeyDictionary()  # session -> events.Writer


def _writer(session, what):
    w = _WRITERS.get(session) if session is not None else None
    if w is None:
        raise RuntimeError("%s: no summary writer: call flow.summary.create_summary_writer(logdir) in a job that "
                           "runs first" % what)
    return w


def _sig(op):
    return [(tuple([B] * len(op.inputs)), ())]


def _writes(op, dev):
    return dev.index == 0  # the placement's first device: one process, one device


def _create_build(op, dev):
    def run():
        if _writes(op, dev) and dev.session is not None:
            old = _WRITERS.get(dev.session)
            if old is None or old.logdir != events.os.path.join(op.attrs["logdir"], "event"):
                if old is not None:
                    old.close()
                _WRITERS[dev.session] = events.Writer(op.attrs["logdir"])
    return run


def _flush_build(op, dev):
    def run():
        if _writes(op, dev):
            _writer(dev.session, "flow.summary.flush_summary_writer").flush()
    return run


def _tag(tag):
    return bytes(devices.to_host(tag).astype("int8").tobytes()).rstrip(b"\0").decode("utf-8")


def _step(step):
    return int(devices.to_host(step).reshape(-1)[0])


def _value_build(method, what):
    def build(op, dev):
        def run(value, step, *tag):
            if _writes(op, dev):
                name = _tag(tag[0]) if tag else op.attrs["tag"]
                getattr(_writer(dev.session, what), method)(devices.to_host(value), _step(step), name)
        return run
    return build


def _pb_build(op, dev):
    def run(value, *step):
        if _writes(op, dev):
            raw = bytes(devices.to_host(value).astype("int8").tobytes())
            _writer(dev.session, "flow.summary.pb").summary_bytes(raw, _step(step[0]) if step else 0)
    return run


def _no_outputs(op):
    return []


register(OpDef("create_summary_writer", infer=_no_outputs, build=_create_build, sbp=_sig, stateful=True))
register(OpDef("flush_summary_writer", infer=_no_outputs, build=_flush_build, sbp=_sig, stateful=True))
register(OpDef("summary_write_scalar", infer=_no_outputs, build=_value_build("scalar", "flow.summary.scalar"),
               sbp=_sig, stateful=True))
register(OpDef("summary_write_histogram", infer=_no_outputs,
               build=_value_build("histogram", "flow.summary.histogram"), sbp=_sig, stateful=True))
register(OpDef("summary_write_image", infer=_no_outputs, build=_value_build("image", "flow.summary.image"),
               sbp=_sig, stateful=True))
register(OpDef("summary_write_pb", infer=_no_outputs, build=_pb_build, sbp=_sig, stateful=True))
