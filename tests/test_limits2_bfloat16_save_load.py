"""flow.save / flow.load of bfloat16 tensors in OneFlow 0.9's layout: the tensor's folder holds `out`, the float32
bytes of its values (check_point_v2.py `_save_tensor_to_disk` writes `tensor.numpy().tobytes()`, and
framework/tensor.py `_numpy` converts a bfloat16 tensor to float32 first, v0.9.0), and `meta` with data_type
kBFloat16 (GetProtoDtype4OfDtype); loading gives a bfloat16 tensor again. Pickling (copy.deepcopy, DataLoader
workers) carries a float32 numpy array and the dtype, as 0.9's `tensor_getstate` ({"data": self.numpy(), "dtype":
self.dtype, ...})."""
import copy
import os
import pickle

import numpy as np
import pytest

import oneflow_compat as flow

# 1, -2.5, 3 + 2^-7 (a tie: to the even 3.0), 1e-3 (bfloat16 0x3A83 = 0.00099945068359375)
VALUES = [1.0, -2.5, 3.0078125, 1e-3]
STORED = [1.0, -2.5, 3.0, 0.00099945068359375]
OUT_BYTES = bytes.fromhex("0000803f" "000020c0" "00004040" "0000833a")  # little-endian float32, by hand
META = "shape {\n  dim: 4\n}\ndata_type: kBFloat16\n"


def test_a_state_dict_of_a_bfloat16_tensor_is_written_as_oneflow_0_9_writes_it(tmp_path):
    t = flow.tensor(VALUES, dtype=flow.bfloat16)
    flow.save({"w": t}, str(tmp_path / "ck"))
    assert (tmp_path / "ck" / "w" / "out").read_bytes() == OUT_BYTES
    assert (tmp_path / "ck" / "w" / "meta").read_text() == META
    loaded = flow.load(str(tmp_path / "ck"))["w"]
    assert loaded.dtype == flow.bfloat16
    np.testing.assert_array_equal(loaded.numpy(), np.array(STORED, np.float32))


def test_a_hand_written_0_9_folder_loads_as_bfloat16(tmp_path):
    ck = tmp_path / "ck"
    (ck / "emb.weight").mkdir(parents=True)
    (ck / "emb.weight" / "out").write_bytes(np.array([[0.5, -7.0], [1.5, 2 ** -20]], "<f4").tobytes())
    (ck / "emb.weight" / "meta").write_text("shape {\n  dim: 2\n  dim: 2\n}\ndata_type: kBFloat16\n")
    (ck / "snapshot_done").write_bytes(b"")
    got = flow.load(str(ck))["emb.weight"]
    assert got.dtype == flow.bfloat16 and tuple(got.shape) == (2, 2)
    np.testing.assert_array_equal(got.numpy(), np.array([[0.5, -7.0], [1.5, 2 ** -20]], np.float32))
    # numbers that are not bfloat16 are rounded as the tensor is made (to nearest, ties to even)
    (ck / "emb.weight" / "out").write_bytes(np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -12, 0],
                                                     "<f4").tobytes())
    np.testing.assert_array_equal(flow.load(str(ck))["emb.weight"].numpy().reshape(-1),
                                  np.array([1.0, 1 + 2 ** -6, 1 + 2 ** -7, 0], np.float32))


def test_a_bfloat16_out_of_two_bytes_an_element_is_refused_naming_the_sizes(tmp_path):
    ck = tmp_path / "ck"
    (ck / "w").mkdir(parents=True)
    (ck / "w" / "out").write_bytes(bytes.fromhex("803f20c0"))  # 2 bfloat16 numbers as 2-byte words: not 0.9's
    (ck / "w" / "meta").write_text("shape {\n  dim: 2\n}\ndata_type: kBFloat16\n")
    (ck / "snapshot_done").write_bytes(b"")
    with pytest.raises(ValueError, match=r"checkpoint variable 'w': file .*out has 4 bytes, expected 8 \(shape "
                                         r"\(2,\), dtype bfloat16\)"):
        flow.load(str(ck))


def test_nested_structures_keep_the_dtype(tmp_path):
    t = flow.tensor(VALUES, dtype=flow.bfloat16)
    f = flow.tensor([1.0 + 2 ** -10], dtype=flow.float32)
    flow.save({"state": [t, {"f": f}]}, str(tmp_path / "ck"))
    got = flow.load(str(tmp_path / "ck"))
    assert got["state"][0].dtype == flow.bfloat16 and got["state"][1]["f"].dtype == flow.float32
    np.testing.assert_array_equal(got["state"][0].numpy(), np.array(STORED, np.float32))
    np.testing.assert_array_equal(got["state"][1]["f"].numpy(), np.array([1.0 + 2 ** -10], np.float32))


def test_a_module_of_bfloat16_parameters_round_trips(tmp_path):
    lin = flow.nn.Linear(3, 2).to(flow.bfloat16)
    flow.save(lin.state_dict(), str(tmp_path / "m"))
    assert (tmp_path / "m" / "weight" / "meta").read_text().endswith("data_type: kBFloat16\n")
    other = flow.nn.Linear(3, 2).to(flow.bfloat16)
    other.load_state_dict(flow.load(str(tmp_path / "m")))
    assert other.weight.dtype == flow.bfloat16
    np.testing.assert_array_equal(other.weight.numpy(), lin.weight.numpy())


def test_pickling_carries_a_float32_array_and_the_dtype():
    t = flow.tensor(VALUES, dtype=flow.bfloat16)
    payload = pickle.dumps(t)
    assert OUT_BYTES in payload  # the float32 array's bytes travel
    for back in (pickle.loads(payload), copy.deepcopy(t)):
        assert back.dtype == flow.bfloat16
        np.testing.assert_array_equal(back.numpy(), np.array(STORED, np.float32))


def test_a_global_bfloat16_tensor_saved_and_loaded_on_two_ranks(tmp_path):
    from simulated_ranks import on_ranks

    path = str(tmp_path / "g")

    def body():
        pl = flow.placement("cpu", [0, 1])
        t = flow.tensor(np.array(VALUES, np.float32).reshape(2, 2), dtype=flow.bfloat16)
        t = t.to_global(placement=pl, sbp=flow.sbp.broadcast).to_global(placement=pl, sbp=flow.sbp.split(0))
        flow.save({"w": t}, path)
        loaded = flow.load(path, global_src_rank=0)["w"]
        return loaded.dtype, loaded.is_global, loaded.to_local().numpy()

    for dtype, is_global, got in on_ranks(2, body):
        assert dtype == flow.bfloat16 and is_global
        np.testing.assert_array_equal(got, np.array(STORED, np.float32).reshape(2, 2))
    assert (tmp_path / "g" / "w" / "out").read_bytes() == OUT_BYTES
    assert (tmp_path / "g" / "w" / "meta").read_text() == "shape {\n  dim: 2\n  dim: 2\n}\ndata_type: kBFloat16\n"
