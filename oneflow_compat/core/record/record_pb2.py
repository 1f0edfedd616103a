"""OneFlow's OFRecord protobuf messages, in pure Python (no dependency on the `protobuf` package).

Schema (`oneflow/core/record/record.proto`, proto2, package `oneflow`)::

    message BytesList  { repeated bytes  value = 1; }
    message FloatList  { repeated float  value = 1 [packed = true]; }
    message DoubleList { repeated double value = 1 [packed = true]; }
    message Int32List  { repeated int32  value = 1 [packed = true]; }
    message Int64List  { repeated int64  value = 1 [packed = true]; }
    message Feature { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2; DoubleList double_list = 3;
                                   Int32List int32_list = 4; Int64List int64_list = 5; } }
    message OFRecord { map<string, Feature> feature = 1; }

The classes behave like protobuf-generated ones for what user scripts do with them (keyword constructors,
SerializeToString / ParseFromString / FromString, ByteSize, CopyFrom / MergeFrom, HasField / WhichOneof /
ClearField, ==, text-format str) and produce the same bytes as protobuf's encoder. Map entries are written in
insertion order (protobuf leaves the order unspecified); `SerializeToString(deterministic=True)` sorts them by key
as protobuf does.
"""
import collections.abc
import math
import numbers
import struct

__all__ = ["BytesList", "FloatList", "DoubleList", "Int32List", "Int64List", "Feature", "OFRecord",
           "DecodeError", "EncodeError"]


class DecodeError(Exception):
    """Raised when bytes are not a valid encoding of the message (mirrors google.protobuf.message.DecodeError)."""


class EncodeError(Exception):
    """Kept for API parity with google.protobuf.message.EncodeError; these messages have no required fields."""


# ---------------------------------------------------------------------------------------------------------------
# Wire format primitives
# ---------------------------------------------------------------------------------------------------------------

_WIRE_VARINT, _WIRE_FIXED64, _WIRE_LENGTH, _WIRE_START_GROUP, _WIRE_END_GROUP, _WIRE_FIXED32 = 0, 1, 2, 3, 4, 5
_UINT64_MASK = (1 << 64) - 1


def _encode_varint(value):
    """Unsigned LEB128; negative int32/int64 values arrive here already masked to 64 bits (10 bytes on the wire)."""
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _decode_varint(buf, pos, end):
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise DecodeError("Truncated message.")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result & _UINT64_MASK, pos
        shift += 7
        if shift >= 70:
            raise DecodeError("Too many bytes when decoding varint.")


def _tag(number, wire_type):
    return _encode_varint((number << 3) | wire_type)


def _length_delimited(number, payload):
    return _tag(number, _WIRE_LENGTH) + _encode_varint(len(payload)) + payload


def _read_length(buf, pos, end):
    size, pos = _decode_varint(buf, pos, end)
    if pos + size > end:
        raise DecodeError("Truncated message.")
    return pos, pos + size


def _skip_field(buf, pos, end, number, wire_type):
    """Returns the position after the field whose tag was just read (used to keep unknown fields verbatim)."""
    if wire_type == _WIRE_VARINT:
        _, pos = _decode_varint(buf, pos, end)
        return pos
    if wire_type == _WIRE_FIXED64:
        pos += 8
    elif wire_type == _WIRE_FIXED32:
        pos += 4
    elif wire_type == _WIRE_LENGTH:
        _, pos = _read_length(buf, pos, end)
    elif wire_type == _WIRE_START_GROUP:
        while True:
            key, pos = _decode_varint(buf, pos, end)
            inner_number, inner_wire = key >> 3, key & 7
            if inner_wire == _WIRE_END_GROUP:
                if inner_number != number:
                    raise DecodeError("Mismatched end-group tag.")
                return pos
            pos = _skip_field(buf, pos, end, inner_number, inner_wire)
    else:
        raise DecodeError("Tag had invalid wire type %d." % wire_type)
    if pos > end:
        raise DecodeError("Truncated message.")
    return pos


def _c_escape(data):
    """Text-format escaping of bytes (protobuf's CEscape with as_utf8=False)."""
    special = {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x22: '\\"', 0x27: "\\'", 0x5C: "\\\\"}
    parts = []
    for byte in data:
        if byte in special:
            parts.append(special[byte])
        elif 32 <= byte < 127:
            parts.append(chr(byte))
        else:
            parts.append("\\%03o" % byte)
    return "".join(parts)


def _text_escape(text):
    """Text-format escaping of a string field: ASCII escaped as for bytes, other characters kept (as upb prints)."""
    return "".join(_c_escape(ch.encode("ascii")) if ord(ch) < 128 else ch for ch in text)


# ---------------------------------------------------------------------------------------------------------------
# Scalar element types of the repeated fields
# ---------------------------------------------------------------------------------------------------------------

_PLAIN_INT, _PLAIN_NUMBERS = {int}, {int, float}


def _as_list(values):
    """A list of the elements; array-likes with tolist() (numpy) convert in one C call to Python scalars."""
    if isinstance(values, list):
        return values
    tolist = getattr(values, "tolist", None)
    if tolist is not None and not isinstance(values, (str, bytes)):
        values = tolist()
        return values if isinstance(values, list) else [values]
    return list(values)


def _type_error(value, expected):
    return TypeError("%r has type %s, but expected one of: %s" % (value, type(value).__name__, expected))


class _IntType:
    def __init__(self, bits):
        self.bits = bits
        self.low, self.high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        self.wire_type = _WIRE_VARINT

    def check(self, value):
        # Like protobuf: any integral value (int, numpy integer, objects with __index__), never a float or str.
        if isinstance(value, bool):
            raise TypeError("Expected an int, got a boolean: %r" % value)
        if isinstance(value, numbers.Integral):
            value = int(value)
        elif hasattr(type(value), "__index__") and not isinstance(value, (float, str, bytes)):
            value = value.__index__()
        else:
            raise _type_error(value, "int")
        if not self.low <= value <= self.high:
            raise ValueError("Value out of range: %d" % value)
        return value

    def check_many(self, values):
        values = _as_list(values)
        # Fast path for plain ints (what numpy's tolist() gives); anything else is checked one by one.
        if set(map(type, values)) <= _PLAIN_INT and (not values or
                                                    (self.low <= min(values) and max(values) <= self.high)):
            return values
        return [self.check(v) for v in values]

    def encode_packed(self, values):
        return b"".join(_encode_varint(v & _UINT64_MASK) for v in values)

    def _to_signed(self, raw):
        raw &= (1 << self.bits) - 1
        return raw - (1 << self.bits) if raw >> (self.bits - 1) else raw

    def decode_packed(self, buf, pos, end):
        values = []
        while pos < end:
            raw, pos = _decode_varint(buf, pos, end)
            values.append(self._to_signed(raw))
        return values

    def decode_one(self, buf, pos, end):
        raw, pos = _decode_varint(buf, pos, end)
        return self._to_signed(raw), pos

    def text(self, value):
        return str(value)


class _FloatType:
    def __init__(self, fmt):
        self.fmt = fmt
        self.size = struct.calcsize("<" + fmt)
        self.wire_type = _WIRE_FIXED32 if fmt == "f" else _WIRE_FIXED64

    def check(self, value):
        if isinstance(value, (str, bytes)) or not isinstance(value, numbers.Real):
            raise _type_error(value, "int, float")
        value = float(value)
        if self.fmt == "f":
            # Stored as float32, as protobuf's C/upb backends do, so reading back gives what was serialized.
            try:
                value = struct.unpack("<f", struct.pack("<f", value))[0]
            except OverflowError:
                value = math.copysign(math.inf, value)
        return value

    def check_many(self, values):
        values = _as_list(values)
        if not set(map(type, values)) <= _PLAIN_NUMBERS:
            return [self.check(v) for v in values]
        try:
            # Packing validates range and rounds to float32 in one C call; unpacking gives the stored values.
            return list(struct.unpack("<%d%s" % (len(values), self.fmt),
                                      struct.pack("<%d%s" % (len(values), self.fmt), *values)))
        except (OverflowError, struct.error):
            return [self.check(v) for v in values]  # out of float32 range: becomes inf, as one by one

    def encode_packed(self, values):
        return struct.pack("<%d%s" % (len(values), self.fmt), *values)

    def decode_packed(self, buf, pos, end):
        size = end - pos
        if size % self.size:
            raise DecodeError("Packed %s field length %d is not a multiple of %d."
                              % ("float" if self.fmt == "f" else "double", size, self.size))
        return list(struct.unpack_from("<%d%s" % (size // self.size, self.fmt), buf, pos))

    def decode_one(self, buf, pos, end):
        if pos + self.size > end:
            raise DecodeError("Truncated message.")
        return struct.unpack_from("<" + self.fmt, buf, pos)[0], pos + self.size

    def text(self, value):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if self.fmt == "d":
            return repr(value)
        # Shortest decimal that reads back as the same float32 (protobuf's ToShortestFloat).
        for precision in range(6, 10):
            shortest = float("%.*g" % (precision, value))
            if struct.unpack("<f", struct.pack("<f", shortest))[0] == value:
                return repr(shortest)
        return repr(value)


class _BytesType:
    wire_type = _WIRE_LENGTH

    def check(self, value):
        if isinstance(value, (bytearray, memoryview)):
            return bytes(value)
        if not isinstance(value, bytes):
            raise _type_error(value, "bytes")
        return value

    def check_many(self, values):
        return [self.check(v) for v in _as_list(values)]

    def text(self, value):
        return '"%s"' % _c_escape(value)


_INT32, _INT64 = _IntType(32), _IntType(64)
_FLOAT, _DOUBLE = _FloatType("f"), _FloatType("d")
_BYTES = _BytesType()


# ---------------------------------------------------------------------------------------------------------------
# Field declarations and containers
# ---------------------------------------------------------------------------------------------------------------

class _RepeatedScalarField:
    kind = "repeated"

    def __init__(self, name, number, element):
        self.name, self.number, self.element = name, number, element


class _MessageField:
    kind = "message"

    def __init__(self, name, number, message_class, oneof=None):
        self.name, self.number, self.message_class, self.oneof = name, number, message_class, oneof


class _MapField:
    """map<string, Message>: on the wire, repeated entries {string key = 1; Message value = 2;}."""
    kind = "map"

    def __init__(self, name, number, value_class):
        self.name, self.number, self.value_class = name, number, value_class


class RepeatedScalarContainer(collections.abc.MutableSequence):
    """List-like value of a repeated scalar field; every element is type-checked (and float32-rounded for float)."""

    __slots__ = ("_values", "_element", "_owner")

    def __init__(self, owner, element):
        self._values = []
        self._element = element
        self._owner = owner

    def __len__(self):
        return len(self._values)

    def __getitem__(self, index):
        return self._values[index]

    def __setitem__(self, index, value):
        if isinstance(index, slice):
            value = [self._element.check(v) for v in value]
        else:
            value = self._element.check(value)
        self._values[index] = value
        self._owner._modified()

    def __delitem__(self, index):
        del self._values[index]
        self._owner._modified()

    def insert(self, index, value):
        self._values.insert(index, self._element.check(value))
        self._owner._modified()

    def append(self, value):
        self._values.append(self._element.check(value))
        self._owner._modified()

    def extend(self, values):
        if isinstance(values, RepeatedScalarContainer) and values._element is self._element:
            self._values.extend(values._values)  # already checked when they were stored there
        else:
            self._values.extend(self._element.check_many(values))
        self._owner._modified()

    def __iter__(self):
        return iter(self._values)

    def MergeFrom(self, other):
        self.extend(other)

    def sort(self, *args, **kwargs):
        self._values.sort(*args, **kwargs)
        self._owner._modified()

    def reverse(self):
        self._values.reverse()
        self._owner._modified()

    def __eq__(self, other):
        if isinstance(other, RepeatedScalarContainer):
            return self._values == other._values
        if isinstance(other, collections.abc.Sequence) and not isinstance(other, (str, bytes)):
            return self._values == list(other)
        return NotImplemented

    __hash__ = None

    def __repr__(self):
        return repr(self._values)

    def __reduce__(self):
        raise TypeError("can't pickle repeated message fields, convert to list first")


class MessageMap(collections.abc.MutableMapping):
    """Value of a map<string, Message> field: reading a missing key creates an empty message there (protobuf)."""

    __slots__ = ("_entries", "_value_class", "_owner")

    def __init__(self, owner, value_class):
        self._entries = {}
        self._value_class = value_class
        self._owner = owner

    @staticmethod
    def _check_key(key):
        if isinstance(key, bytes):
            try:
                return key.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError("%r is not valid UTF-8 and cannot be a string map key" % (key,)) from None
        if not isinstance(key, str):
            raise _type_error(key, "bytes, str")
        return key

    def _new_value(self):
        value = self._value_class()
        value._listener = self._owner._modified
        return value

    def __getitem__(self, key):
        key = self._check_key(key)
        value = self._entries.get(key)
        if value is None:
            value = self._entries[key] = self._new_value()
            self._owner._modified()
        return value

    def get_or_create(self, key):
        return self[key]

    def get(self, key, default=None):
        # Unlike [], get() never inserts (protobuf semantics).
        return self._entries.get(self._check_key(key), default)

    def __contains__(self, key):
        return self._check_key(key) in self._entries

    def __setitem__(self, key, value):
        # protobuf forbids `map[key] = msg` for message maps; accepting it (as a copy) is a harmless superset.
        if not isinstance(value, self._value_class):
            raise TypeError("Map value must be %s, got %s" % (self._value_class.__name__, type(value).__name__))
        entry = self[key]
        entry.CopyFrom(value)

    def __delitem__(self, key):
        key = self._check_key(key)
        value = self._entries.pop(key)
        value._listener = None
        self._owner._modified()

    def __iter__(self):
        return iter(self._entries)

    def __len__(self):
        return len(self._entries)

    def MergeFrom(self, other):
        for key, value in other.items():
            if key in self._entries:
                del self[key]
            self[key].CopyFrom(value)

    def clear(self):
        for value in self._entries.values():
            value._listener = None
        self._entries.clear()
        self._owner._modified()

    def __eq__(self, other):
        if isinstance(other, MessageMap):
            return self._entries == other._entries
        if isinstance(other, collections.abc.Mapping):
            return self._entries == dict(other)
        return NotImplemented

    __hash__ = None

    def __repr__(self):
        return repr(self._entries)


# ---------------------------------------------------------------------------------------------------------------
# Message base
# ---------------------------------------------------------------------------------------------------------------

def _field_property(field):
    def getter(self):
        return self._get(field)

    def setter(self, value):
        kind = "repeated" if field.kind != "message" else "composite"
        raise AttributeError('Assignment not allowed to %s field "%s" in protocol message object.'
                             % (kind, field.name))

    return property(getter, setter, doc="%s field %s = %d" % (field.kind, field.name, field.number))


def _unpickle(cls, data):
    return cls.FromString(data)


class _Message:
    """Shared machinery. Subclasses declare `_FIELDS` (a tuple of field declarations, in field-number order).

    Presence: a singular message field read before it was set returns a detached empty message whose first
    modification makes it present in its parent (and, for a oneof member, clears the other members) — the
    protobuf "lazy default" behaviour that lets `feature.float_list.value.append(x)` work.
    """

    __slots__ = ("_values", "_present", "_listener", "_unknown")
    _FIELDS = ()
    _BY_NAME = {}
    _BY_NUMBER = {}
    _ONEOFS = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._BY_NAME = {f.name: f for f in cls._FIELDS}
        cls._BY_NUMBER = {f.number: f for f in cls._FIELDS}
        oneofs = {}
        for f in cls._FIELDS:
            if getattr(f, "oneof", None):
                oneofs.setdefault(f.oneof, []).append(f.name)
        cls._ONEOFS = {name: tuple(members) for name, members in oneofs.items()}
        for f in cls._FIELDS:
            setattr(cls, f.name, _field_property(f))

    def __init__(self, **kwargs):
        self._values = {}
        self._present = set()
        self._listener = None
        self._unknown = []
        for name, value in kwargs.items():
            field = self._BY_NAME.get(name)
            if field is None:
                raise ValueError('Protocol message %s has no "%s" field.' % (type(self).__name__, name))
            if value is None:
                continue
            if field.kind == "repeated":
                self._get(field).extend(value)
            elif field.kind == "map":
                container = self._get(field)
                for key, item in value.items():
                    entry = container[key]
                    if isinstance(item, collections.abc.Mapping):
                        entry.MergeFrom(field.value_class(**item))
                    else:
                        entry.CopyFrom(item)
            else:
                child = self._get(field)
                if isinstance(value, collections.abc.Mapping):
                    value = field.message_class(**value)
                child.CopyFrom(value)
                self._set_present(field.name)

    # -- field storage --------------------------------------------------------------------------------------

    def _get(self, field):
        value = self._values.get(field.name)
        if value is None:
            if field.kind == "repeated":
                value = RepeatedScalarContainer(self, field.element)
            elif field.kind == "map":
                value = MessageMap(self, field.value_class)
            else:
                value = field.message_class()
                value._listener = self._presence_listener(field.name)
            self._values[field.name] = value
        return value

    def _presence_listener(self, name):
        def on_child_modified():
            self._set_present(name)
            self._modified()
        return on_child_modified

    def _set_present(self, name):
        if name in self._present:
            return
        oneof = self._BY_NAME[name].oneof
        if oneof:
            for other in self._ONEOFS[oneof]:
                if other != name and other in self._present:
                    self._drop(other)
        self._present.add(name)

    def _drop(self, name):
        self._present.discard(name)
        child = self._values.pop(name, None)
        if child is not None and self._BY_NAME[name].kind == "message":
            child._listener = None  # an old reference no longer writes into this message

    def _modified(self):
        if self._listener is not None:
            self._listener()

    def _is_set(self, field):
        if field.kind == "message":
            return field.name in self._present
        value = self._values.get(field.name)
        return value is not None and len(value) > 0

    # -- protobuf message API -------------------------------------------------------------------------------

    def HasField(self, name):
        if name in self._ONEOFS:
            return any(member in self._present for member in self._ONEOFS[name])
        field = self._BY_NAME.get(name)
        if field is None or field.kind != "message":
            raise ValueError('Protocol message %s has no singular "%s" field.' % (type(self).__name__, name))
        return name in self._present

    def WhichOneof(self, oneof_group):
        members = self._ONEOFS.get(oneof_group)
        if members is None:
            raise ValueError('Protocol message has no oneof "%s" field.' % oneof_group)
        for member in members:
            if member in self._present:
                return member
        return None

    def ClearField(self, name):
        members = self._ONEOFS.get(name)
        if members is None:
            if name not in self._BY_NAME:
                raise ValueError('Protocol message %s has no "%s" field.' % (type(self).__name__, name))
            members = (name,)
        for member in members:
            field = self._BY_NAME[member]
            if field.kind == "message":
                self._drop(member)
            elif member in self._values:
                container = self._values.pop(member)
                if field.kind == "map":
                    for value in container._entries.values():
                        value._listener = None
        self._modified()

    def Clear(self):
        for name in list(self._values):
            self.ClearField(name)
        self._present.clear()
        self._unknown = []
        self._modified()

    def DiscardUnknownFields(self):
        self._unknown = []
        for field in self._FIELDS:
            if field.kind == "message" and field.name in self._present:
                self._values[field.name].DiscardUnknownFields()
            elif field.kind == "map" and field.name in self._values:
                for value in self._values[field.name].values():
                    value.DiscardUnknownFields()

    def IsInitialized(self):
        return True  # no required fields in this schema

    def MergeFrom(self, other):
        if not isinstance(other, type(self)):
            raise TypeError("Parameter to MergeFrom() must be instance of same class: expected %s got %s."
                            % (type(self).__name__, type(other).__name__))
        if other is self:
            other = type(self).FromString(self.SerializeToString())
        for field in self._FIELDS:
            if field.kind == "message":
                if field.name in other._present:
                    self._get(field).MergeFrom(other._values[field.name])
                    self._set_present(field.name)
            elif field.name in other._values:
                self._get(field).MergeFrom(other._values[field.name])
        self._unknown.extend(other._unknown)
        self._modified()

    def CopyFrom(self, other):
        if not isinstance(other, type(self)):
            raise TypeError("Parameter to CopyFrom() must be instance of same class: expected %s got %s."
                            % (type(self).__name__, type(other).__name__))
        if other is self:
            return
        self.Clear()
        self.MergeFrom(other)

    def SetInParent(self):
        self._modified()

    # -- encoding -------------------------------------------------------------------------------------------

    def SerializeToString(self, deterministic=False):
        parts = []
        for field in self._FIELDS:
            if field.kind == "message":
                if field.name in self._present:
                    payload = self._values[field.name].SerializeToString(deterministic)
                    parts.append(_length_delimited(field.number, payload))
                continue
            container = self._values.get(field.name)
            if not container:
                continue
            if field.kind == "repeated":
                if field.element is _BYTES:
                    tag = _tag(field.number, _WIRE_LENGTH)
                    for item in container._values:
                        parts.append(tag + _encode_varint(len(item)) + item)
                else:
                    parts.append(_length_delimited(field.number, field.element.encode_packed(container._values)))
            else:
                keys = sorted(container._entries) if deterministic else list(container._entries)
                for key in keys:
                    # Map entries always carry both key and value, even when empty (as protobuf's encoders do).
                    entry = (_length_delimited(1, key.encode("utf-8"))
                             + _length_delimited(2, container._entries[key].SerializeToString(deterministic)))
                    parts.append(_length_delimited(field.number, entry))
        parts.extend(self._unknown)
        return b"".join(parts)

    SerializePartialToString = SerializeToString

    def ByteSize(self):
        return len(self.SerializeToString())

    # -- decoding -------------------------------------------------------------------------------------------

    def MergeFromString(self, serialized):
        buf = memoryview(serialized).cast("B") if not isinstance(serialized, bytes) else serialized
        self._merge(buf, 0, len(buf))
        self._modified()
        return len(buf)

    def ParseFromString(self, serialized):
        self.Clear()
        return self.MergeFromString(serialized)

    MergeFromPartialString = MergeFromString

    @classmethod
    def FromString(cls, serialized):
        message = cls()
        message.MergeFromString(serialized)
        return message

    def _merge(self, buf, pos, end):
        while pos < end:
            field_start = pos
            key, pos = _decode_varint(buf, pos, end)
            number, wire_type = key >> 3, key & 7
            if number == 0:
                raise DecodeError("Field number 0 is illegal.")
            field = self._BY_NUMBER.get(number)
            handled = False
            if field is not None:
                handled, pos = self._merge_field(field, wire_type, buf, pos, end)
            if not handled:
                pos = _skip_field(buf, pos, end, number, wire_type)
                if wire_type == _WIRE_END_GROUP:
                    raise DecodeError("Unexpected end-group tag.")
                self._unknown.append(bytes(buf[field_start:pos]))
        if pos != end:
            raise DecodeError("Truncated message.")

    def _merge_field(self, field, wire_type, buf, pos, end):
        """Returns (handled, new_pos); a wire type that does not fit the field leaves it to the unknown fields."""
        if field.kind == "repeated":
            element = field.element
            container = self._get(field)
            if wire_type == _WIRE_LENGTH and element is _BYTES:
                start, stop = _read_length(buf, pos, end)
                container._values.append(bytes(buf[start:stop]))
                return True, stop
            if element is _BYTES:
                return False, pos
            if wire_type == _WIRE_LENGTH:  # packed
                start, stop = _read_length(buf, pos, end)
                container._values.extend(element.decode_packed(buf, start, stop))
                return True, stop
            if wire_type == element.wire_type:  # unpacked (legal for packed fields)
                value, pos = element.decode_one(buf, pos, end)
                container._values.append(value)
                return True, pos
            return False, pos
        if wire_type != _WIRE_LENGTH:
            return False, pos
        start, stop = _read_length(buf, pos, end)
        if field.kind == "message":
            # A repeated occurrence of a singular message merges into it; a oneof member replaces the others.
            self._set_present(field.name)
            self._get(field)._merge(buf, start, stop)
        else:
            key, value = self._parse_map_entry(field, buf, start, stop)
            entries = self._get(field)._entries
            old = entries.pop(key, None)
            if old is not None:
                old._listener = None
            value._listener = self._modified
            entries[key] = value
        return True, stop

    @staticmethod
    def _parse_map_entry(field, buf, pos, end):
        key_bytes = b""
        value = field.value_class()
        while pos < end:
            tag, pos = _decode_varint(buf, pos, end)
            number, wire_type = tag >> 3, tag & 7
            if number == 1 and wire_type == _WIRE_LENGTH:
                start, pos = _read_length(buf, pos, end)
                key_bytes = bytes(buf[start:pos])
            elif number == 2 and wire_type == _WIRE_LENGTH:
                start, pos = _read_length(buf, pos, end)
                value._merge(buf, start, pos)
            else:
                pos = _skip_field(buf, pos, end, number, wire_type)
        try:
            key = key_bytes.decode("utf-8")
        except UnicodeDecodeError:
            raise DecodeError("Map key is not valid UTF-8.") from None
        return key, value

    # -- Python protocol ------------------------------------------------------------------------------------

    def __eq__(self, other):
        if not isinstance(other, _Message):
            return NotImplemented
        if type(other) is not type(self):
            return False
        for field in self._FIELDS:
            if field.kind == "message":
                if (field.name in self._present) != (field.name in other._present):
                    return False
                if field.name in self._present and self._values[field.name] != other._values[field.name]:
                    return False
            else:
                # A container never touched and an empty one are the same (unset) field.
                mine, theirs = self._values.get(field.name), other._values.get(field.name)
                if (mine or None) != (theirs or None):
                    return False
        return sorted(self._unknown) == sorted(other._unknown)

    __hash__ = None

    def _text_lines(self, indent):
        pad = "  " * indent
        lines = []
        for field in self._FIELDS:
            if field.kind == "message":
                if field.name in self._present:
                    lines.append("%s%s {" % (pad, field.name))
                    lines.extend(self._values[field.name]._text_lines(indent + 1))
                    lines.append(pad + "}")
            elif field.kind == "repeated":
                for item in self._values.get(field.name, ()):
                    lines.append("%s%s: %s" % (pad, field.name, field.element.text(item)))
            else:
                entries = self._values[field.name]._entries if field.name in self._values else {}
                for key in sorted(entries):
                    lines.append("%s%s {" % (pad, field.name))
                    lines.append('%s  key: "%s"' % (pad, _text_escape(key)))
                    lines.append("%s  value {" % pad)
                    lines.extend(entries[key]._text_lines(indent + 2))
                    lines.append("%s  }" % pad)
                    lines.append(pad + "}")
        return lines

    def __str__(self):
        return "".join(line + "\n" for line in self._text_lines(0))

    def __repr__(self):
        return str(self)

    def __reduce__(self):
        return _unpickle, (type(self), self.SerializeToString())

    def __deepcopy__(self, memo=None):
        clone = type(self)()
        clone.MergeFrom(self)
        return clone

    def __copy__(self):
        return self.__deepcopy__()


class BytesList(_Message):
    __slots__ = ()
    _FIELDS = (_RepeatedScalarField("value", 1, _BYTES),)


class FloatList(_Message):
    __slots__ = ()
    _FIELDS = (_RepeatedScalarField("value", 1, _FLOAT),)


class DoubleList(_Message):
    __slots__ = ()
    _FIELDS = (_RepeatedScalarField("value", 1, _DOUBLE),)


class Int32List(_Message):
    __slots__ = ()
    _FIELDS = (_RepeatedScalarField("value", 1, _INT32),)


class Int64List(_Message):
    __slots__ = ()
    _FIELDS = (_RepeatedScalarField("value", 1, _INT64),)


class Feature(_Message):
    __slots__ = ()
    _FIELDS = (
        _MessageField("bytes_list", 1, BytesList, oneof="kind"),
        _MessageField("float_list", 2, FloatList, oneof="kind"),
        _MessageField("double_list", 3, DoubleList, oneof="kind"),
        _MessageField("int32_list", 4, Int32List, oneof="kind"),
        _MessageField("int64_list", 5, Int64List, oneof="kind"),
    )


class OFRecord(_Message):
    __slots__ = ()
    _FIELDS = (_MapField("feature", 1, Feature),)
