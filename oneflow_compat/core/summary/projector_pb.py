"""OneFlow's projector messages (`oneflow/core/summary/projector.proto` at v0.3.4, proto2) in protobuf's wire
format, written by hand as `core/record/record_pb2.py` is: `flow.summary.Projector` files are read by OneFlow's own
visualisation tools, not by TensorBoard.

    MetaData {ProjectorType type = 1; string content = 2}        EMBEDDING 0, EXCEPTION 1
    Tensor {string dtype = 1; TensorShape shape = 2; bytes content = 3}, TensorShape {Dim dim = 1},
        Dim {int64 size = 1; string name = 2}
    Sample {string name = 1; SampleType type = 2; Tensor X = 3}  IMAGE 0, AUDIO 1, TEXT 2
    Projector {string tag = 1; int64 step = 2; double WALL_TIME = 3; Tensor value = 4; Tensor label = 5}
    SummaryProjector {Projector projector = 1 (repeated); Sample sample = 2; MetaData metadata = 6}
"""
import struct

EMBEDDING, EXCEPTION = 0, 1
SAMPLE_TYPES = {"image": 0, "audio": 1, "text": 2}


def _varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field, wire):
    return _varint((field << 3) | wire)


def _int(field, n):
    return _key(field, 0) + _varint(int(n))


def _bytes(field, data):
    data = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    return _key(field, 2) + _varint(len(data)) + data


def _double(field, x):
    return _key(field, 1) + struct.pack("<d", float(x))


def tensor(value):
    """Tensor {dtype, shape, content} of a numpy array."""
    shape = b"".join(_bytes(1, _int(1, d)) for d in value.shape)
    return _bytes(1, str(value.dtype)) + _bytes(2, shape) + _bytes(3, value.tobytes())


def projector(tag, step, wall_time, value, label=None):
    out = _bytes(1, str(tag))
    if step is not None:
        out += _int(2, step)
    out += _double(3, wall_time) + _bytes(4, tensor(value))
    if label is not None:
        out += _bytes(5, tensor(label))
    return out


def sample(name, sample_type, x):
    out = _bytes(1, name) + _int(2, sample_type)
    return out if x is None else out + _bytes(3, tensor(x))


def summary_projector(kind, projectors, sample_bytes=None):
    out = b"".join(_bytes(1, p) for p in projectors)
    if sample_bytes is not None:
        out += _bytes(2, sample_bytes)
    return out + _bytes(6, _int(1, kind))
