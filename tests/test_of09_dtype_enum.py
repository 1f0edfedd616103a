"""The DataType numbers of the dtypes are OneFlow 0.9's (oneflow/core/common/data_type.proto @ v0.9.0): flow.bool is
kBool = 12 (this project gave it 11 before, bfloat16's number). Files name dtypes, never number them: a `meta` file by
enum name (OneFlow 0.9's check_point_v2.py writes a bool tensor as data_type kBool and one byte an element), a
pickle by dtype name, so what was written before still loads."""
import pickle

import numpy as np

import oneflow_compat as flow
from oneflow_compat.ir import dtypes

# data_type.proto @ v0.9.0, the numbers of the dtypes this project has
ONEFLOW_09_DATA_TYPE = {"kChar": 1, "kFloat": 2, "kDouble": 3, "kInt8": 4, "kInt32": 5, "kInt64": 6, "kUInt8": 7,
                        "kOFRecord": 8, "kFloat16": 9, "kTensorBuffer": 10, "kBFloat16": 11, "kBool": 12}


def test_bool_is_kbool_12_and_every_number_is_oneflow_09s():
    assert (flow.bool.enum_name, flow.bool.enum_value) == ("kBool", 12)
    assert (flow.bfloat16.enum_name, flow.bfloat16.enum_value) == ("kBFloat16", 11)
    every = list(dtypes.ALL) + [flow.bfloat16, flow.bool]
    for d in every:
        assert ONEFLOW_09_DATA_TYPE[d.enum_name] == d.enum_value, d
    assert len({d.enum_value for d in every}) == len(every)  # no two dtypes share a number
    assert dtypes.from_enum_value(12) is flow.bool and dtypes.from_enum_name("kBool") is flow.bool
    assert dtypes.from_enum_value(11) is flow.bfloat16
    assert (flow.tensor([1, 2]) > 1).dtype is flow.bool


def test_bool_tensor_saved_as_oneflow_09_writes_it(tmp_path):
    t = flow.tensor([True, False, True])
    flow.save({"mask": t, "w": flow.tensor([1.5, 2.0])}, str(tmp_path / "ckpt"))
    meta = (tmp_path / "ckpt" / "mask" / "meta").read_text()
    assert "data_type: kBool" in meta and "dim: 3" in meta
    assert (tmp_path / "ckpt" / "mask" / "out").read_bytes() == b"\x01\x00\x01"
    loaded = flow.load(str(tmp_path / "ckpt"))
    assert loaded["mask"].dtype is flow.bool
    np.testing.assert_array_equal(loaded["mask"].numpy(), [True, False, True])
    np.testing.assert_array_equal(loaded["w"].numpy(), np.array([1.5, 2.0], np.float32))


def test_module_with_bool_buffer_round_trips(tmp_path):
    m = flow.nn.Module()
    m.register_buffer("keep", flow.tensor([[True, False], [False, True]]))
    flow.save(m.state_dict(), str(tmp_path / "m"))
    other = flow.nn.Module()
    other.register_buffer("keep", flow.zeros(2, 2, dtype=flow.bool))
    other.load_state_dict(flow.load(str(tmp_path / "m")))
    assert other.keep.dtype is flow.bool
    np.testing.assert_array_equal(other.keep.numpy(), [[True, False], [False, True]])


def test_oneflow_written_kbool_meta_loads(tmp_path):
    # a variable folder as OneFlow 0.9 writes it: meta in protobuf text format, out the raw bytes
    var = tmp_path / "ckpt" / "flags"
    var.mkdir(parents=True)
    (var / "meta").write_text("shape {\n  dim: 2\n  dim: 2\n}\ndata_type: kBool\n")
    (var / "out").write_bytes(b"\x00\x01\x01\x00")
    (tmp_path / "ckpt" / "snapshot_done").write_bytes(b"")
    loaded = flow.load(str(tmp_path / "ckpt"))
    assert loaded["flags"].dtype is flow.bool
    np.testing.assert_array_equal(loaded["flags"].numpy(), [[False, True], [True, False]])


def test_pickles_made_before_the_change_load():
    # pickle.dumps(flow.bool, protocol=2), made with this project before bool became 12
    old_dtype = b"\x80\x02coneflow_compat.ir.dtypes\n_by_name\nq\x00X\x04\x00\x00\x00boolq\x01\x85q\x02Rq\x03."
    assert pickle.loads(old_dtype) is flow.bool
    # a bool tensor pickles its dtype by name too (rebuild_local's "bool"): it comes back a bool tensor
    t = pickle.loads(pickle.dumps(flow.tensor([True, False]), protocol=2))
    assert t.dtype is flow.bool
    np.testing.assert_array_equal(t.numpy(), [True, False])
    assert pickle.loads(pickle.dumps(flow.bool)) is flow.bool
