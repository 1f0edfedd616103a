"""OneRec files (OneFlow v0.4.0's `flow.data.onerec_reader` / `onerec_decoder`): framing, checksums, the
FlatBuffers `Example` table, reading with OneFlow's sharding and shuffling, and decoding a feature into an array.

Facts from OneFlow v0.4.0 (`oneflow/user/data/onerec_dataset.h`, `onerec_data_reader.h`,
`batch_random_shuffle_dataset.h`, `random_shuffle_dataset.h`, `oneflow/user/kernels/onerec_decoder_kernels.cpp`,
`oneflow/user/kernels/example_generated.h`):

* A file is a sequence of frames. A frame is a 24-byte header — magic `^ONEREC$` (int64 0x24434552454E4F5E,
  little-endian), a reserved int32 0, the payload size (int32, 0 .. 2^31-1), the XXH64 (seed 0) of those first 16
  bytes stored big-endian — then the payload, zero padding to a multiple of 8 bytes, and the XXH64 (seed 0) of the
  payload, big-endian. A reader's files are one stream: it restarts at the first file after the last.
* The payload is a FlatBuffers buffer with file identifier "1REC" whose root table is
  `Example { features: [Feature] (sorted by name, looked up by binary search); metaDigest: Digest }`,
  `Feature { name: string (required); tensor: Tensor }`,
  `Tensor { shape: [int32]; data: TensorData }` with the union
  `TensorData { Int8List=1, Int16List, Int32List, Int64List, Float32List, Float64List, StringList, BinaryList }`,
  each `XList { values: [x] }`, `Digest { value: int64 }`.
* Readers on N devices take contiguous balanced shares of the file list. `shuffle_after_epoch` shuffles the file
  list at every (re)start of the stream, the first included; `random_shuffle` either swaps every sample with a
  random one of a buffer of `shuffle_buffer_size` samples ("instance") or every batch with one of a buffer of
  `shuffle_buffer_size` batches ("batch").
* The decoder reads feature `key` of every example as the list type of the requested dtype (int8, int32, int64,
  float32, float64): its tensor shape must be the static shape (or `reshape`, one dim of which may be -1), dim 0 may
  be padded per batch (`batch_padding`: 0 = all equal, -1 = to the longest, n > 0 = to n) and the output may be
  dynamic (`is_dynamic`: the batch's own instance shape, at most the static one).

Python's generators stand in for OneFlow's mt19937 (file order) and default_random_engine (shuffle buffers): the
orders are OneFlow's rules with this project's seeds, not its exact permutations. FlatBuffers and XXH64 are
written here (no dependency); `write_onerec` / `encode_example` make files for tests and small datasets.
"""
import random
import struct

import numpy as np

from oneflow_compat.backend.balanced_split import balanced_ranges
from oneflow_compat.kernels.random import derived_seed

__all__ = ["xxh64", "encode_example", "Example", "write_onerec", "iter_payloads", "OneRecReader", "decode_feature",
           "LIST_TYPES", "OneRecError"]

MAGIC = 0x24434552454E4F5E  # '^ONEREC$' read as a little-endian int64
HEADER = struct.Struct("<qiiQ")
FOOTER = struct.Struct(">Q")
IDENTIFIER = b"1REC"
MAX_PAYLOAD = 2 ** 31 - 1

# the union TensorData: type code -> (list name, numpy dtype or None for strings / binaries)
LIST_TYPES = {1: ("Int8List", np.int8), 2: ("Int16List", np.int16), 3: ("Int32List", np.int32),
              4: ("Int64List", np.int64), 5: ("Float32List", np.float32), 6: ("Float64List", np.float64),
              7: ("StringList", None), 8: ("BinaryList", None)}
_CODE_OF_DTYPE = {np.dtype(t): code for code, (_, t) in LIST_TYPES.items() if t is not None}


class OneRecError(ValueError):
    """A OneRec file or example that does not follow the format (names the file and the frame)."""


# --- XXH64 -----------------------------------------------------------------------------------------------------------
_P1, _P2, _P3, _P4, _P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x85EBCA77C2B2AE63,
                           0x27D4EB2F165667C5)
_M64 = (1 << 64) - 1


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & _M64


def _round(acc, lane):
    return (_rotl((acc + lane * _P2) & _M64, 31) * _P1) & _M64


def _merge(acc, val):
    return ((acc ^ _round(0, val)) * _P1 + _P4) & _M64


def xxh64(data, seed=0):
    """The XXH64 hash of `data` (bytes-like) with `seed` (the reference algorithm, in Python integers)."""
    data = memoryview(data).cast("B")
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + _P1 + _P2) & _M64, (seed + _P2) & _M64, seed & _M64, (seed - _P1) & _M64]
        lanes = np.frombuffer(data[: n - n % 32], dtype="<u8").tolist()
        for j in range(0, len(lanes), 4):
            v = [_round(v[0], lanes[j]), _round(v[1], lanes[j + 1]), _round(v[2], lanes[j + 2]),
                 _round(v[3], lanes[j + 3])]
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M64
        for lane in v:
            h = _merge(h, lane)
        i = n - n % 32
    else:
        h = (seed + _P5) & _M64
    h = (h + n) & _M64
    while i + 8 <= n:
        h ^= _round(0, struct.unpack_from("<Q", data, i)[0])
        h = (_rotl(h, 27) * _P1 + _P4) & _M64
        i += 8
    if i + 4 <= n:
        h ^= (struct.unpack_from("<I", data, i)[0] * _P1) & _M64
        h = (_rotl(h, 23) * _P2 + _P3) & _M64
        i += 4
    while i < n:
        h ^= (data[i] * _P5) & _M64
        h = (_rotl(h, 11) * _P1) & _M64
        i += 1
    h ^= h >> 33
    h = (h * _P2) & _M64
    h ^= h >> 29
    h = (h * _P3) & _M64
    return h ^ (h >> 32)


# --- FlatBuffers: writing --------------------------------------------------------------------------------------------
class _Writer:
    """A forward-laid-out FlatBuffers writer: a parent is placed before its children and its offsets are patched
    once they are placed (uoffset_t points forward, as the format requires)."""

    def __init__(self):
        self.buf = bytearray()

    def align(self, n, then=0):
        # pad so that (position + then) is a multiple of n
        while (len(self.buf) + then) % n:
            self.buf.append(0)

    def patch_offset(self, at, target):
        struct.pack_into("<I", self.buf, at, target - at)

    def table(self, fields):
        """fields: list of (vtable slot, kind, value): kind 'offset' (value: a function placing the child and
        returning its position), 'u8' or 'i64'. Returns the table's position."""
        slots = max(slot for slot, _, _ in fields) + 1
        # inline layout: soffset (4) then each field at its alignment
        layout, size = [], 4
        for slot, kind, value in fields:
            width = {"offset": 4, "u8": 1, "i64": 8}[kind]
            size = (size + width - 1) // width * width
            layout.append((slot, kind, value, size))
            size += width
        self.align(2)
        vtable = len(self.buf)
        entries = [0] * slots
        for slot, _, _, at in layout:
            entries[slot] = at
        self.buf += struct.pack("<HH", 4 + 2 * slots, size) + struct.pack("<%dH" % slots, *entries)
        self.align(8)
        table = len(self.buf)
        self.buf += bytes(size)
        struct.pack_into("<i", self.buf, table, table - vtable)
        children = []
        for slot, kind, value, at in layout:
            if kind == "u8":
                struct.pack_into("<B", self.buf, table + at, value)
            elif kind == "i64":
                struct.pack_into("<q", self.buf, table + at, value)
            else:
                children.append((table + at, value))
        for at, place in children:
            self.patch_offset(at, place())
        return table

    def vector(self, array):
        array = np.ascontiguousarray(array)
        self.align(max(4, array.dtype.itemsize), then=4)
        at = len(self.buf)
        self.buf += struct.pack("<I", array.size) + array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        return at

    def string(self, raw):
        self.align(4)
        at = len(self.buf)
        self.buf += struct.pack("<I", len(raw)) + raw + b"\0"
        return at

    def offsets_vector(self, places):
        self.align(4)
        at = len(self.buf)
        self.buf += struct.pack("<I", len(places)) + bytes(4 * len(places))
        for i, place in enumerate(places):
            self.patch_offset(at + 4 + 4 * i, place())
        return at


def _list_code(value):
    """The TensorData type code of a feature value."""
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], (bytes, str)):
        return 7 if isinstance(value[0], str) else 8
    dtype = np.asarray(value).dtype
    code = _CODE_OF_DTYPE.get(dtype)
    if code is None:
        raise TypeError("OneRec tensors hold int8/16/32/64 or float32/64 values (or lists of str / bytes), got %s"
                        % dtype)
    return code


def _place_list(w, value, code):
    """Places the XList table of `value` and returns its position."""
    if code == 7:
        items = [lambda r=v.encode(): w.string(r) for v in value]
    elif code == 8:
        items = [lambda r=bytes(v): w.table([(0, "offset", lambda: w.vector(np.frombuffer(r, np.int8)))])
                 for v in value]
    else:
        return w.table([(0, "offset", lambda: w.vector(np.asarray(value).reshape(-1)))])
    return w.table([(0, "offset", lambda: w.offsets_vector(items))])


def encode_example(features, meta_digest=None):
    """A OneRec payload (FlatBuffers `Example`, identifier "1REC") from {name: array (or list of str/bytes)}; a
    feature's tensor shape is the array's shape (a list's length). Features are sorted by name, as the format's
    binary search needs."""
    w = _Writer()
    w.buf += bytes(4) + IDENTIFIER  # the root offset (patched last), then the identifier
    names = sorted(features, key=lambda k: k.encode())

    def place_feature(name):
        value = features[name]
        shape = (len(value),) if isinstance(value, (list, tuple)) else np.shape(value)
        code = _list_code(value)

        def place_tensor():
            return w.table([(0, "offset", lambda: w.vector(np.asarray(shape, np.int32))), (1, "u8", code),
                            (2, "offset", lambda: _place_list(w, value, code))])
        return w.table([(0, "offset", lambda: w.string(name.encode())), (1, "offset", place_tensor)])

    fields = [(0, "offset", lambda: w.offsets_vector([lambda n=n: place_feature(n) for n in names]))]
    if meta_digest is not None:
        fields.append((1, "offset", lambda: w.table([(0, "i64", int(meta_digest))])))
    w.patch_offset(0, w.table(fields))
    return bytes(w.buf)


# --- FlatBuffers: reading --------------------------------------------------------------------------------------------
class _Table:
    __slots__ = ("buf", "pos", "vt", "vt_size")

    def __init__(self, buf, pos, what):
        _need(buf, pos, 4, what)
        self.buf, self.pos = buf, pos
        self.vt = pos - struct.unpack_from("<i", buf, pos)[0]
        _need(buf, self.vt, 4, what + "'s vtable")
        self.vt_size = struct.unpack_from("<H", buf, self.vt)[0]
        _need(buf, self.vt, self.vt_size, what + "'s vtable")

    def field(self, slot):
        entry = 4 + 2 * slot
        if entry + 2 > self.vt_size:
            return None
        at = struct.unpack_from("<H", self.buf, self.vt + entry)[0]
        return None if at == 0 else self.pos + at

    def ref(self, slot, what):
        at = self.field(slot)
        if at is None:
            return None
        _need(self.buf, at, 4, what)
        return at + struct.unpack_from("<I", self.buf, at)[0]

    def u8(self, slot, default=0):
        at = self.field(slot)
        if at is None:
            return default
        _need(self.buf, at, 1, "a field")
        return self.buf[at]

    def i64(self, slot, default=0):
        at = self.field(slot)
        if at is None:
            return default
        _need(self.buf, at, 8, "a field")
        return struct.unpack_from("<q", self.buf, at)[0]


def _need(buf, at, size, what):
    if at < 0 or at + size > len(buf):
        raise OneRecError("%s lies outside the %d-byte example (bytes %d..%d)" % (what, len(buf), at, at + size))


def _vector(buf, at, dtype, what):
    _need(buf, at, 4, what)
    n = struct.unpack_from("<I", buf, at)[0]
    dtype = np.dtype(dtype).newbyteorder("<")
    _need(buf, at + 4, n * dtype.itemsize, what)
    return np.frombuffer(buf, dtype, n, at + 4)


def _string(buf, at, what):
    raw = _vector(buf, at, np.uint8, what)
    end = at + 4 + raw.size
    if end >= len(buf) or buf[end] != 0:
        raise OneRecError("%s is not a null-terminated string" % what)
    return bytes(raw)


class Example:
    """A parsed OneRec payload: `names()`, `tensor(name)` -> (shape tuple, list type name, values)."""

    def __init__(self, payload, verify=True):
        self.buf = bytes(payload)
        _need(self.buf, 0, 8, "the root offset and identifier")
        if verify and self.buf[4:8] != IDENTIFIER:
            raise OneRecError("the example does not carry the file identifier %r (got %r)" % (IDENTIFIER,
                                                                                             self.buf[4:8]))
        root = _Table(self.buf, struct.unpack_from("<I", self.buf, 0)[0], "the Example table")
        at = root.ref(0, "Example.features")
        if at is None:
            raise OneRecError("the example has no features")
        offsets = _vector(self.buf, at, np.uint32, "Example.features")
        self._features = [at + 4 + 4 * i + int(o) for i, o in enumerate(offsets)]
        self._names = None
        if verify:
            for name in self.names():
                self.tensor(name)

    def names(self):
        if self._names is None:
            names = []
            for pos in self._features:
                feature = _Table(self.buf, pos, "a Feature")
                at = feature.ref(0, "Feature.name")
                if at is None:
                    raise OneRecError("a Feature has no name (the field is required)")
                names.append(_string(self.buf, at, "Feature.name"))
            self._names = names
        return [n.decode("utf-8", "replace") for n in self._names]

    def _lookup(self, key):
        self.names()
        raw = key.encode()
        lo, hi = 0, len(self._names)
        while lo < hi:  # OneFlow: features->LookupByKey, a binary search by strcmp
            mid = (lo + hi) // 2
            if self._names[mid] < raw:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(self._names) and self._names[lo] == raw:
            return self._features[lo]
        if raw in self._names:
            raise OneRecError("feature %r is there but the features are not sorted by name, as OneRec's lookup "
                              "needs" % key)
        raise KeyError("the OneRec example has no feature %r (it has: %s)" % (key, ", ".join(self.names())))

    def tensor(self, key):
        feature = _Table(self.buf, self._lookup(key), "Feature %r" % key)
        at = feature.ref(1, "Feature %r's tensor" % key)
        if at is None:
            raise OneRecError("feature %r has no tensor" % key)
        tensor = _Table(self.buf, at, "the Tensor of %r" % key)
        shape_at = tensor.ref(0, "the shape of %r" % key)
        shape = () if shape_at is None else tuple(int(d) for d in _vector(self.buf, shape_at, np.int32,
                                                                          "the shape of %r" % key))
        code = tensor.u8(1)
        if code not in LIST_TYPES:
            raise OneRecError("feature %r: unknown tensor data type %d" % (key, code))
        name, dtype = LIST_TYPES[code]
        data_at = tensor.ref(2, "the data of %r" % key)
        if data_at is None:
            raise OneRecError("feature %r has no data" % key)
        values_at = _Table(self.buf, data_at, "the %s of %r" % (name, key)).ref(0, "values of %r" % key)
        if values_at is None:
            raise OneRecError("feature %r: its %s has no values" % (key, name))
        if dtype is not None:
            values = _vector(self.buf, values_at, dtype, "the values of %r" % key)
        else:
            offsets = _vector(self.buf, values_at, np.uint32, "the values of %r" % key)
            items = []
            for i, o in enumerate(offsets):
                pos = values_at + 4 + 4 * i + int(o)
                if code == 7:
                    items.append(_string(self.buf, pos, "a string of %r" % key).decode("utf-8", "replace"))
                else:
                    inner = _Table(self.buf, pos, "a Binary of %r" % key).ref(0, "a Binary of %r" % key)
                    items.append(b"" if inner is None else bytes(_vector(self.buf, inner, np.int8, "a Binary")))
            values = items
        return shape, name, values


# --- frames ----------------------------------------------------------------------------------------------------------
def write_onerec(path, payloads):
    """Writes OneRec frames (payloads: encoded examples, or {name: array} dicts to encode); returns how many."""
    count = 0
    with open(path, "wb") as out:
        for payload in payloads:
            if isinstance(payload, dict):
                payload = encode_example(payload)
            payload = bytes(payload)
            if len(payload) > MAX_PAYLOAD:
                raise ValueError("OneRec payload of %d bytes exceeds the format's %d" % (len(payload), MAX_PAYLOAD))
            head = struct.pack("<qii", MAGIC, 0, len(payload))
            out.write(head + struct.pack(">Q", xxh64(head)))
            out.write(payload + bytes(-len(payload) % 8))
            out.write(FOOTER.pack(xxh64(payload)))
            count += 1
    return count


def iter_payloads(path):
    """Yields (frame index, payload bytes) of one OneRec file, checking magic, sizes and both checksums."""
    with open(path, "rb") as f:
        index = 0
        while True:
            head = f.read(HEADER.size)
            if not head:
                return
            where = "OneRec file %s, frame %d" % (path, index)
            if len(head) < HEADER.size:
                raise OneRecError("%s: truncated header (%d of %d bytes)" % (where, len(head), HEADER.size))
            magic, reserved, size, digest = HEADER.unpack(head)
            if magic != MAGIC:
                raise OneRecError("%s: bad magic 0x%016x (a OneRec frame starts with '^ONEREC$')" % (where,
                                                                                                 magic & _M64))
            if reserved != 0 or not 0 <= size <= MAX_PAYLOAD:
                raise OneRecError("%s: bad header (reserved %d, payload size %d)" % (where, reserved, size))
            if struct.unpack(">Q", struct.pack("<Q", digest))[0] != xxh64(head[:16]):
                raise OneRecError("%s: header checksum mismatch" % where)
            body = f.read(size + (-size % 8) + 8)
            if len(body) < size + (-size % 8) + 8:
                raise OneRecError("%s: truncated payload (%d bytes announced)" % (where, size))
            payload = body[:size]
            if FOOTER.unpack(body[-8:])[0] != xxh64(payload):
                raise OneRecError("%s: payload checksum mismatch" % where)
            yield index, payload
            index += 1


class OneRecReader:
    """Endless iterator of batches (lists of `batch_size` payloads) over a list of OneRec files, with OneFlow's
    sharding (`parallel_id` of `parallel_num` readers: a contiguous balanced share of the files) and shuffles."""

    def __init__(self, files, batch_size, random_shuffle=False, shuffle_mode="instance", shuffle_buffer_size=1024,
                 shuffle_after_epoch=False, verify_example=True, seed=None, parallel_id=0, parallel_num=1):
        if int(batch_size) < 1:
            raise ValueError("onerec_reader: batch_size must be at least 1, got %r" % (batch_size,))
        if shuffle_mode not in ("instance", "batch"):
            raise ValueError("onerec_reader: shuffle_mode must be 'instance' or 'batch', got %r" % (shuffle_mode,))
        if random_shuffle and int(shuffle_buffer_size) < 1:
            raise ValueError("onerec_reader: shuffle_buffer_size must be at least 1, got %r" % (shuffle_buffer_size,))
        self._files = [str(f) for f in files]
        if not self._files:
            raise ValueError("onerec_reader: no files given")
        if parallel_num > len(self._files):
            raise ValueError("onerec_reader: %d data-parallel readers need at least as many files, got %d"
                             % (parallel_num, len(self._files)))
        self.batch_size = int(batch_size)
        self._range = balanced_ranges(len(self._files), parallel_num)[parallel_id]
        self._verify = bool(verify_example)
        self._shuffle_after_epoch = bool(shuffle_after_epoch)
        # the file order is shared by every reader (each takes its share of one permutation)
        self._file_seed = 0 if seed is None else int(seed)
        self._rng = random.Random(None if seed is None else derived_seed(seed, "onerec-%d" % parallel_id))
        self._stream = self._samples()
        self._mode = shuffle_mode if random_shuffle else None
        self._buffer_size = int(shuffle_buffer_size)
        self._buffer = None
        self._error = None

    def _samples(self):
        epoch = 0
        while True:
            files = list(self._files)
            if self._shuffle_after_epoch:  # OneFlow shuffles at every stream (re)start, the first included
                random.Random(self._file_seed + epoch).shuffle(files)
            start, stop = self._range
            produced = False
            for path in files[start:stop]:
                for index, payload in iter_payloads(path):
                    produced = True
                    if self._verify:
                        try:
                            Example(payload, verify=True)
                        except (OneRecError, KeyError) as error:
                            raise OneRecError("OneRec file %s, frame %d: %s" % (path, index, error)) from None
                    yield payload
            if not produced:
                raise OneRecError("OneRec files %s hold no examples" % ", ".join(files[start:stop]))
            epoch += 1

    def _batch(self):
        return [next(self._stream) for _ in range(self.batch_size)]

    def _next(self):
        if self._mode is None:
            return self._batch()
        if self._mode == "batch":
            if self._buffer is None:
                self._buffer = [self._batch() for _ in range(self._buffer_size)]
            batch = self._batch()
            pick = self._rng.randrange(len(self._buffer))
            self._buffer[pick], batch = batch, self._buffer[pick]
            return batch
        if self._buffer is None:
            self._buffer = [next(self._stream) for _ in range(self._buffer_size)]
        batch = self._batch()
        for i in range(len(batch)):
            pick = self._rng.randrange(len(self._buffer))
            self._buffer[pick], batch[i] = batch[i], self._buffer[pick]
        return batch

    def __iter__(self):
        return self

    def __next__(self):
        if self._error is not None:
            raise ValueError("OneRec reader failed earlier: %s" % self._error) from self._error
        try:
            return self._next()
        except Exception as error:
            self._error = error
            raise

    next_batch = __next__


# --- decoding --------------------------------------------------------------------------------------------------------
def _instance_dims(shapes, static_shape, reshape, key):
    """Per example, its dims under `reshape` (one -1 allowed) or as stored (then of the static rank)."""
    out = []
    for shape in shapes:
        count = int(np.prod(shape, dtype=np.int64))
        if reshape is None:
            if len(shape) != len(static_shape):
                raise ValueError("onerec_decoder %r: a tensor of shape %s has %d axes, the static shape %s has %d"
                                 % (key, shape, len(shape), static_shape, len(static_shape)))
            out.append(tuple(shape))
            continue
        known = int(np.prod([d for d in reshape if d > 0], dtype=np.int64))
        if any(d == -1 for d in reshape):
            if count % known:
                raise ValueError("onerec_decoder %r: %d values do not fill reshape %s" % (key, count, reshape))
            out.append(tuple(count // known if d == -1 else d for d in reshape))
        elif count != known:
            raise ValueError("onerec_decoder %r: %d values do not fit reshape %s" % (key, count, reshape))
        else:
            out.append(tuple(reshape))
    return out


def decode_feature(payloads, key, np_dtype, static_shape, is_dynamic=False, reshape=None, batch_padding=None):
    """Feature `key` of every payload as one (batch,) + instance-shape array (OneFlow's DecodeField)."""
    np_dtype = np.dtype(np_dtype)
    code = _CODE_OF_DTYPE.get(np_dtype)
    if code is None or code == 2:
        raise TypeError("onerec_decoder %r: dtype must be int8, int32, int64, float32 or float64, got %s"
                        % (key, np_dtype))
    static_shape = tuple(int(d) for d in static_shape)
    tensors = []
    for payload in payloads:
        example = payload if isinstance(payload, Example) else Example(payload, verify=False)
        shape, list_name, values = example.tensor(key)
        if list_name != LIST_TYPES[code][0]:
            raise TypeError("onerec_decoder %r: the feature holds a %s, the requested dtype %s needs a %s"
                            % (key, list_name, np_dtype, LIST_TYPES[code][0]))
        tensors.append((shape, values))
    if reshape is not None and len(reshape) != len(static_shape):
        raise ValueError("onerec_decoder %r: reshape %s and static shape %s differ in rank" % (key, reshape,
                                                                                          static_shape))
    dims = _instance_dims([s for s, _ in tensors], static_shape, reshape, key)
    first = [d[0] for d in dims] if static_shape else []
    if batch_padding is not None:
        if len(batch_padding) != len(static_shape) or any(p != 0 for p in batch_padding[1:]):
            raise ValueError("onerec_decoder %r: batch_padding %s may only pad dim 0" % (key, batch_padding))
        method = batch_padding[0]
        if method == 0:
            dim0 = first[0]
            if any(d != dim0 for d in first):
                raise ValueError("onerec_decoder %r: dim 0 differs between examples %s" % (key, first))
        elif method == -1:
            dim0 = max(first)
        elif method > 0:
            dim0 = method
            if any(d > dim0 for d in first):
                raise ValueError("onerec_decoder %r: dim 0 of %s exceeds the padding %d" % (key, first, dim0))
        else:
            raise ValueError("onerec_decoder %r: batch_padding[0] must be -1, 0 or positive, got %d" % (key, method))
        instance = [dim0]
    elif static_shape:
        if any(d != first[0] for d in first):
            raise ValueError("onerec_decoder %r: dim 0 differs between examples %s" % (key, first))
        instance = [first[0]]
    else:
        instance = []
    for axis in range(1, len(static_shape)):
        sizes = [d[axis] for d in dims]
        if any(s != sizes[0] for s in sizes):
            raise ValueError("onerec_decoder %r: dim %d differs between examples %s" % (key, axis, sizes))
        instance.append(sizes[0])
    instance = tuple(instance)
    if is_dynamic:
        if int(np.prod(instance, dtype=np.int64)) > int(np.prod(static_shape, dtype=np.int64)):
            raise ValueError("onerec_decoder %r: instance shape %s holds more than the static shape %s"
                             % (key, instance, static_shape))
    elif instance != static_shape:
        raise ValueError("onerec_decoder %r: instance shape %s differs from the static shape %s (is_dynamic=False)"
                         % (key, instance, static_shape))
    count = int(np.prod(instance, dtype=np.int64))
    out = np.zeros((len(tensors), count), np_dtype)
    for i, (_, values) in enumerate(tensors):
        n = len(values)
        if n > count or (batch_padding is None and n != count):
            raise ValueError("onerec_decoder %r: example %d holds %d values for an instance of %d" % (key, i, n,
                                                                                                       count))
        out[i, :n] = values
    return out.reshape((len(tensors),) + instance)
