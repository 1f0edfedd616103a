"""OFRecord messages (protobuf's own, from OneFlow's record.proto schema): the wire format byte for byte against
encodings computed by hand from the protobuf rules, the message semantics scripts use, and the schema's names.
Map entries have no order on the wire (protobuf's maps iterate in hash order): tests compare them as sets, or
serialize with `deterministic=True` (sorted keys)."""
import copy
import io
import pickle
import random
import struct

import pytest

from oneflow_compat.core.record import record_pb2 as pb


# ----------------------------------------------------------------------------------------------------------------
# Bytes computed by hand from the protobuf encoding rules
# ----------------------------------------------------------------------------------------------------------------

def test_int32_packed_bytes_including_negative_ten_byte_varint():
    # tag(1, LEN)=0x0a, length 13: 1 -> 01; -1 -> ff*9 01 (sign-extended to 64 bits); 300 -> ac 02
    expected = bytes([0x0A, 13, 0x01] + [0xFF] * 9 + [0x01, 0xAC, 0x02])
    assert pb.Int32List(value=[1, -1, 300]).SerializeToString() == expected
    assert pb.Int32List(value=[1, -1, 300]).ByteSize() == 15


def test_int64_extremes_bytes():
    msg = pb.Int64List(value=[-(1 << 63), (1 << 63) - 1, 0])
    # -2^63 (64 bits, top one set) -> nine 0x80 then 0x01; 2^63-1 (63 ones) -> eight 0xff then 0x7f; 0 -> 00
    expected = bytes([0x0A, 20] + [0x80] * 9 + [0x01] + [0xFF] * 8 + [0x7F] + [0x00])
    assert msg.SerializeToString() == expected
    assert pb.Int64List.FromString(expected).value == [-(1 << 63), (1 << 63) - 1, 0]


def test_float_double_bytes_little_endian():
    assert pb.FloatList(value=[1.0, -2.5]).SerializeToString() == bytes.fromhex("0a08" "0000803f" "000020c0")
    assert pb.DoubleList(value=[1.0]).SerializeToString() == bytes.fromhex("0a08" "000000000000f03f")


def test_bytes_list_is_not_packed():
    assert pb.BytesList(value=[b"ab", b""]).SerializeToString() == bytes.fromhex("0a026162" "0a00")


def test_empty_repeated_field_writes_nothing_but_present_submessage_does():
    assert pb.FloatList().SerializeToString() == b""
    assert pb.Feature(float_list=pb.FloatList()).SerializeToString() == bytes.fromhex("1200")
    assert pb.Feature().SerializeToString() == b""


def test_ofrecord_single_entry_bytes():
    rec = pb.OFRecord(feature={"k": pb.Feature(int32_list=pb.Int32List(value=[1, 2]))})
    int32_list = bytes.fromhex("0a020102")              # Int32List: field 1 packed [1, 2]
    feature = bytes.fromhex("2204") + int32_list        # Feature: field 4 (int32_list), len 4
    entry = bytes.fromhex("0a016b") + bytes.fromhex("1206") + feature  # key "k", value len 6
    expected = bytes.fromhex("0a0b") + entry            # OFRecord: field 1, len 11
    assert rec.SerializeToString() == expected
    assert rec.ByteSize() == len(expected) == 13


def test_map_entry_keeps_empty_key_and_empty_value():
    rec = pb.OFRecord()
    rec.feature[""]
    assert rec.SerializeToString() == bytes.fromhex("0a04" "0a00" "1200")


# ----------------------------------------------------------------------------------------------------------------
# Parsing variants protobuf accepts
# ----------------------------------------------------------------------------------------------------------------

def test_parse_unpacked_and_mixed_repeated():
    # int32 unpacked: 08 01, 08 <-1 as 10 bytes>, then a packed chunk [3, 4]
    data = bytes([0x08, 0x01, 0x08] + [0xFF] * 9 + [0x01]) + bytes.fromhex("0a020304")
    assert pb.Int32List.FromString(data).value == [1, -1, 3, 4]
    floats = bytes.fromhex("0d0000803f") + bytes.fromhex("0a04000020c0")
    assert pb.FloatList.FromString(floats).value == [1.0, -2.5]
    doubles = bytes.fromhex("09000000000000f03f")
    assert pb.DoubleList.FromString(doubles).value == [1.0]


def test_parse_five_byte_negative_int32():
    # Some encoders write int32 -1 as a 5-byte varint; the low 32 bits decide.
    assert pb.Int32List.FromString(bytes.fromhex("08ffffffff0f")).value == [-1]


def test_map_parse_any_order_and_duplicate_key_last_wins():
    a = pb.OFRecord(feature={"a": pb.Feature(int64_list=pb.Int64List(value=[1]))}).SerializeToString()
    b = pb.OFRecord(feature={"b": pb.Feature(float_list=pb.FloatList(value=[2.0]))}).SerializeToString()
    a2 = pb.OFRecord(feature={"a": pb.Feature(bytes_list=pb.BytesList(value=[b"x"]))}).SerializeToString()
    rec = pb.OFRecord.FromString(b + a + a2)
    assert sorted(rec.feature) == ["a", "b"]
    assert rec.feature["a"].WhichOneof("kind") == "bytes_list"
    assert rec.feature["a"].bytes_list.value == [b"x"]
    # value field written before key inside the entry
    entry = bytes.fromhex("1206" "2a040a020107" "0a017a")
    rec2 = pb.OFRecord.FromString(bytes([0x0A, len(entry)]) + entry)
    assert rec2.feature["z"].int64_list.value == [1, 7]


def test_oneof_last_member_on_wire_wins_and_same_member_merges():
    data = (pb.Feature(float_list=pb.FloatList(value=[1.0])).SerializeToString()
            + pb.Feature(float_list=pb.FloatList(value=[2.0])).SerializeToString())
    assert pb.Feature.FromString(data).float_list.value == [1.0, 2.0]
    data += pb.Feature(int32_list=pb.Int32List(value=[5])).SerializeToString()
    feature = pb.Feature.FromString(data)
    assert feature.WhichOneof("kind") == "int32_list" and not feature.HasField("float_list")


def test_unknown_fields_survive_round_trip():
    data = pb.FloatList(value=[1.0]).SerializeToString() + bytes.fromhex("1801") + bytes.fromhex("2a03616263")
    msg = pb.FloatList.FromString(data)
    assert msg.value == [1.0]
    assert msg.SerializeToString() == data
    msg.DiscardUnknownFields()
    assert msg.SerializeToString() == pb.FloatList(value=[1.0]).SerializeToString()


@pytest.mark.parametrize("bad", [
    bytes.fromhex("0a05010203"),        # length beyond the end
    bytes.fromhex("08ff"),              # varint cut off
    bytes.fromhex("0a03000080"),        # packed float length not a multiple of 4 (in FloatList)
    bytes.fromhex("0f"),                # wire type 7
])
def test_decode_errors(bad):
    with pytest.raises(pb.DecodeError):
        pb.FloatList.FromString(bad)


# ----------------------------------------------------------------------------------------------------------------
# Message semantics
# ----------------------------------------------------------------------------------------------------------------

def test_repeated_container_is_list_like_and_type_checked():
    msg = pb.Int64List(value=(3, 1))
    msg.value.append(2)
    msg.value.extend(iter([5, 4]))
    msg.value.insert(0, 9)
    assert len(msg.value) == 6 and msg.value[0] == 9 and msg.value[-1] == 4
    assert msg.value[1:3] == [3, 1]
    assert list(msg.value) == [9, 3, 1, 2, 5, 4] and msg.value == [9, 3, 1, 2, 5, 4]
    msg.value.sort()
    del msg.value[0]
    msg.value[0] = 10
    assert msg.value == [10, 3, 4, 5, 9]
    assert msg.value.pop() == 9 and list(msg.value).count(3) == 1 and 4 in msg.value
    with pytest.raises(TypeError):
        msg.value.append(1.5)
    with pytest.raises(TypeError):
        msg.value.append("1")
    with pytest.raises(TypeError):
        msg.value.append(True)
    with pytest.raises(ValueError):
        pb.Int32List(value=[1 << 31])
    with pytest.raises(TypeError):
        pb.FloatList(value=["0.5"])
    with pytest.raises(TypeError):
        pb.BytesList(value=["text"])
    with pytest.raises(AttributeError):
        msg.value = [1]


def test_numpy_values_are_accepted():
    np = pytest.importorskip("numpy")
    msg = pb.FloatList(value=np.array([0.5, 0.25], dtype=np.float32))
    assert msg.value == [0.5, 0.25] and all(type(v) is float for v in msg.value)
    assert pb.Int64List(value=np.arange(3)).value == [0, 1, 2]


def test_float_is_stored_with_float32_precision():
    msg = pb.FloatList(value=[0.1])
    assert msg.value[0] == struct.unpack("<f", struct.pack("<f", 0.1))[0] != 0.1
    assert pb.FloatList(value=[1e300]).value[0] == float("inf")
    assert pb.DoubleList(value=[0.1]).value[0] == 0.1


def test_oneof_setting_a_member_clears_the_others():
    feature = pb.Feature(float_list=pb.FloatList(value=[1.0]))
    old = feature.float_list
    feature.int32_list.value.append(7)
    assert feature.WhichOneof("kind") == "int32_list"
    assert not feature.HasField("float_list") and feature.HasField("int32_list") and feature.HasField("kind")
    assert feature.float_list.value == []   # a fresh default, not the old one
    old.value.append(2.0)                   # detached: writes no longer reach the feature
    assert feature.WhichOneof("kind") == "int32_list"
    feature.ClearField("kind")
    assert feature.WhichOneof("kind") is None and feature.SerializeToString() == b""


def test_reading_an_unset_submessage_does_not_set_it():
    feature = pb.Feature()
    assert feature.double_list.value == []
    assert feature.WhichOneof("kind") is None
    feature.double_list.value.extend([0.5])
    assert feature.WhichOneof("kind") == "double_list"


def test_map_semantics():
    rec = pb.OFRecord()
    assert "x" not in rec.feature and rec.feature.get("x") is None and len(rec.feature) == 0
    created = rec.feature["x"]
    assert "x" in rec.feature and created.WhichOneof("kind") is None
    rec.feature["x"].float_list.value.append(1.5)
    assert rec.feature["x"].float_list.value == [1.5]
    rec.feature["y"].CopyFrom(pb.Feature(bytes_list=pb.BytesList(value=[b"z"])))
    assert sorted(rec.feature.keys()) == ["x", "y"]
    assert dict(rec.feature.items())["y"].bytes_list.value == [b"z"]
    del rec.feature["x"]
    assert list(rec.feature) == ["y"]
    with pytest.raises(TypeError):
        rec.feature[3]
    with pytest.raises(AttributeError):
        rec.feature = {}


def test_has_field_which_oneof_errors():
    with pytest.raises(ValueError):
        pb.FloatList().HasField("value")
    with pytest.raises(ValueError):
        pb.Feature().HasField("nope")
    with pytest.raises(ValueError):
        pb.Feature().WhichOneof("nope")
    with pytest.raises(ValueError):
        pb.Feature(nope=1)


def test_copy_merge_clear_eq():
    a = pb.OFRecord(feature={"k": pb.Feature(int64_list=pb.Int64List(value=[1]))})
    b = pb.OFRecord()
    b.CopyFrom(a)
    assert a == b and a is not b
    b.feature["k"].int64_list.value.append(2)
    assert a != b and a.feature["k"].int64_list.value == [1]
    merged = pb.Int64List(value=[1])
    merged.MergeFrom(pb.Int64List(value=[2, 3]))
    assert merged.value == [1, 2, 3]
    b.Clear()
    assert b == pb.OFRecord() and b.SerializeToString() == b""
    with pytest.raises(TypeError):
        b.CopyFrom(pb.Feature())
    assert pb.FloatList(value=[1.0]) != pb.DoubleList(value=[1.0])
    # an empty container is the same as an untouched field
    touched = pb.FloatList()
    len(touched.value)
    assert touched == pb.FloatList()
    assert pickle.loads(pickle.dumps(a)) == a
    assert copy.deepcopy(a) == a


def test_parse_from_string_replaces_and_returns_length():
    msg = pb.Int32List(value=[9])
    data = pb.Int32List(value=[1, 2]).SerializeToString()
    assert msg.ParseFromString(data) == len(data)
    assert msg.value == [1, 2]
    assert msg.MergeFromString(data) == len(data)
    assert msg.value == [1, 2, 1, 2]


def test_text_format():
    # protobuf's text format (google.protobuf.text_format, which OneFlow's scripts used) prints map entries sorted
    from google.protobuf import text_format

    rec = pb.OFRecord(feature={
        "b": pb.Feature(float_list=pb.FloatList(value=[0.1, 1, float("-inf")])),
        "a": pb.Feature(bytes_list=pb.BytesList(value=[b'q"\n\x01\xff'])),
        "c": pb.Feature(double_list=pb.DoubleList(value=[0.1])),
        "d": pb.Feature(int32_list=pb.Int32List()),
    })
    assert text_format.MessageToString(rec) == (
        'feature {\n  key: "a"\n  value {\n    bytes_list {\n      value: "q\\"\\n\\001\\377"\n    }\n  }\n}\n'
        'feature {\n  key: "b"\n  value {\n    float_list {\n      value: 0.1\n      value: 1.0\n'
        '      value: -inf\n    }\n  }\n}\n'
        'feature {\n  key: "c"\n  value {\n    double_list {\n      value: 0.1\n    }\n  }\n}\n'
        'feature {\n  key: "d"\n  value {\n    int32_list {\n    }\n  }\n}\n')
    assert str(pb.Feature()) == ""
    assert text_format.MessageToString(pb.OFRecord(feature={'é"\t': pb.Feature()}), as_utf8=True) == \
        'feature {\n  key: "é\\"\\t"\n  value {\n  }\n}\n'


def test_deterministic_serialization_sorts_keys():
    rec = pb.OFRecord()
    for key in ["b", "c", "a"]:
        rec.feature[key].int64_list.value.append(ord(key))
    ordered = pb.OFRecord()
    for key in ["a", "b", "c"]:
        ordered.feature[key].int64_list.value.append(ord(key))
    entries = b"".join(bytes.fromhex("0a0a" "0a01") + k.encode() + bytes.fromhex("1205" "2a03" "0a01") + k.encode()
                       for k in "abc")  # key k, value Feature{int64_list{value: [ord(k)]}}
    assert rec.SerializeToString(deterministic=True) == entries
    assert ordered.SerializeToString(deterministic=True) == entries
    assert pb.OFRecord.FromString(rec.SerializeToString()) == ordered


def _random_record(rng):
    rec = pb.OFRecord()
    for i in range(rng.randint(0, 4)):
        feature = rec.feature["key%d-%s" % (i, "é" * rng.randint(0, 1))]
        kind = rng.choice(["bytes_list", "float_list", "double_list", "int32_list", "int64_list", None])
        n = rng.randint(0, 5)
        if kind == "bytes_list":
            feature.bytes_list.value.extend(bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
                                            for _ in range(n))
        elif kind == "float_list":
            feature.float_list.value.extend(rng.uniform(-1e6, 1e6) for _ in range(n))
        elif kind == "double_list":
            feature.double_list.value.extend(rng.uniform(-1e6, 1e6) for _ in range(n))
        elif kind == "int32_list":
            feature.int32_list.value.extend(rng.randint(-(1 << 31), (1 << 31) - 1) for _ in range(n))
        elif kind == "int64_list":
            feature.int64_list.value.extend(rng.randint(-(1 << 63), (1 << 63) - 1) for _ in range(n))
    return rec


def test_random_round_trips():
    rng = random.Random(0)
    for _ in range(200):
        rec = _random_record(rng)
        data = rec.SerializeToString()
        back = pb.OFRecord.FromString(data)
        assert back == rec
        assert back.SerializeToString(deterministic=True) == rec.SerializeToString(deterministic=True)
        assert rec.ByteSize() == len(data)


def test_length_prefixed_file_like_the_documentation_scripts():
    # The documented part-file loop: int64 length (struct "q") then the serialized record, three times.
    stream = io.BytesIO()
    written = []
    for i in range(3):
        rec = pb.OFRecord(feature={
            "images": pb.Feature(float_list=pb.FloatList(value=[i / 8.0] * 784)),
            "labels": pb.Feature(int64_list=pb.Int64List(value=[i])),
        })
        stream.write(struct.pack("q", rec.ByteSize()))
        stream.write(rec.SerializeToString())
        written.append(rec)
    stream.seek(0)
    for i in range(3):
        (length,) = struct.unpack("q", stream.read(8))
        rec = pb.OFRecord.FromString(stream.read(length))
        assert rec == written[i]
        assert rec.feature["labels"].int64_list.value == [i]
        assert list(rec.feature["images"].float_list.value) == [i / 8.0] * 784
    assert stream.read() == b""


# ----------------------------------------------------------------------------------------------------------------
# The schema: OneFlow's names, in a private descriptor pool
# ----------------------------------------------------------------------------------------------------------------

def test_messages_carry_oneflows_names_and_schema():
    from google.protobuf import descriptor_pool
    from google.protobuf.message import Message

    assert pb.DESCRIPTOR.name == "oneflow/core/record/record.proto" and pb.DESCRIPTOR.package == "oneflow"
    assert pb.OFRecord.DESCRIPTOR.full_name == "oneflow.OFRecord" and issubclass(pb.OFRecord, Message)
    kind = pb.Feature.DESCRIPTOR.oneofs_by_name["kind"]
    assert [(f.name, f.number, f.message_type.full_name) for f in kind.fields] == [
        ("bytes_list", 1, "oneflow.BytesList"), ("float_list", 2, "oneflow.FloatList"),
        ("double_list", 3, "oneflow.DoubleList"), ("int32_list", 4, "oneflow.Int32List"),
        ("int64_list", 5, "oneflow.Int64List")]
    feature = pb.OFRecord.DESCRIPTOR.fields_by_name["feature"]
    assert feature.number == 1 and feature.message_type.GetOptions().map_entry
    # a real OneFlow's generated record_pb2 registers the same file in the default pool: no clash with ours
    with pytest.raises(KeyError):
        descriptor_pool.Default().FindFileByName("oneflow/core/record/record.proto")
