"""OneRec files and `flow.data.onerec_reader` / `onerec_decoder` (OneFlow v0.4.0): the format against independent
references (XXH64 test vectors and values from the xxhash package, a buffer made by the official FlatBuffers
builder), the reader's sharding on 1 and 2 devices, its shuffles, the decoder's reshape / padding / errors, and a
Wide&Deep-shaped read as the model zoo's `wdl_train_eval.py --dataset_format onerec` does."""
import os
import struct

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat.datasets import onerec_io as O

# an Example built with the `flatbuffers` package's Builder (backward layout, shared vtables, identifier "1REC"):
# features dense_fields = Float32List [0.5, -1.25, 2.0] of shape [3], labels = Int32List [1] of shape [1]
OFFICIAL = bytes.fromhex(
    "080000003152454362ffffff04000000020000005000000004000000c0ffffff1400000004000000060000006c6162656c730000b2ff"
    "ffff1400000000000003040000000100000001000000a6ffffff04000000010000000100000008000c00080004000800000024000000"
    "040000000c00000064656e73655f6669656c647300000a0010000c000b0004000a0000001c0000000000000504000000010000000300"
    "000000000600080004000600000004000000030000000000003f0000a0bf00000040")


def test_xxh64_vectors():
    # the reference test vectors of XXH64 and values of the xxhash package (python-xxhash 4.1)
    assert O.xxh64(b"") == 0xEF46DB3751D8E999
    assert O.xxh64(b"a") == 0xD24EC4F1A98C6E5B
    assert O.xxh64(b"abc") == 0x44BC2CF5AD770999
    assert O.xxh64(b"Nobody inspects the spammish repetition") == 0xFBCEA83C8A378BF1
    assert O.xxh64(b"0123456789abcdef") == 0x5C5B90C34E376D0B
    long = bytes(range(256)) * 4 + b"xyz"
    assert O.xxh64(long) == 0xE146CB31B65BC21A
    assert O.xxh64(long, 2 ** 40 + 7) == 0xB22CCDF7D5E5BDD8


def test_official_flatbuffers_example_parses():
    ex = O.Example(OFFICIAL)
    assert ex.names() == ["dense_fields", "labels"]
    shape, kind, values = ex.tensor("dense_fields")
    assert shape == (3,) and kind == "Float32List" and values.tolist() == [0.5, -1.25, 2.0]
    assert ex.tensor("labels")[0] == (1,) and ex.tensor("labels")[2].tolist() == [1]
    with pytest.raises(KeyError, match="no feature 'label'.*dense_fields, labels"):
        ex.tensor("label")


def test_encode_roundtrip_all_list_types():
    feats = {"i8": np.array([-3, 4], np.int8), "i16": np.array([[1, -2]], np.int16),
             "i32": np.arange(6, dtype=np.int32).reshape(2, 3), "i64": np.array([2 ** 40], np.int64),
             "f32": np.array([0.25], np.float32), "f64": np.array([[1.5], [-2.5]]), "s": ["ab", "c"], "b": [b"\x00x"]}
    ex = O.Example(O.encode_example(feats, meta_digest=9))
    assert ex.names() == sorted(feats)
    for k, v in feats.items():
        shape, _, values = ex.tensor(k)
        if isinstance(v, list):
            assert shape == (len(v),) and values == v
        else:
            assert shape == v.shape and values.dtype == v.dtype and values.tolist() == v.reshape(-1).tolist()
    # every vector of 8-byte values starts on an 8-byte boundary of the buffer (FlatBuffers' alignment)
    buf = O.encode_example({"x": np.arange(3, dtype=np.float64)})
    start = buf.index(np.arange(3, dtype=np.float64).tobytes())
    assert start % 8 == 0


def _frames(path):
    return [p for _, p in O.iter_payloads(path)]


def test_frames_layout_and_checks(tmp_path):
    path = str(tmp_path / "a.onerec")
    payloads = [O.encode_example({"v": np.array([i], np.int32)}) for i in range(3)]
    assert O.write_onerec(path, payloads) == 3
    raw = open(path, "rb").read()
    magic, reserved, size, digest = struct.unpack_from("<qiiQ", raw, 0)
    assert raw[:8] == b"^ONEREC$" and reserved == 0 and size == len(payloads[0])
    assert digest == struct.unpack("<Q", struct.pack(">Q", O.xxh64(raw[:16])))[0]  # stored big-endian
    body_end = 24 + size + (-size % 8)
    assert struct.unpack_from(">Q", raw, body_end)[0] == O.xxh64(payloads[0])
    assert _frames(path) == payloads
    for offset, what in ((0, "bad magic"), (30, "payload checksum mismatch"), (20, "header checksum mismatch")):
        bad = bytearray(raw)
        bad[offset] ^= 0xFF
        open(path, "wb").write(bytes(bad))
        with pytest.raises(O.OneRecError, match="a.onerec, frame 0: " + what):
            _frames(path)
    open(path, "wb").write(raw[:-3])
    with pytest.raises(O.OneRecError, match="frame 2: truncated payload"):
        _frames(path)


def _write_files(tmp_path, n_files=4, per_file=6):
    files = []
    for f in range(n_files):
        path = str(tmp_path / ("part-%d.onerec" % f))
        O.write_onerec(path, [{"labels": np.array([f * 100 + i], np.int32),
                               "dense_fields": np.full(3, f + i / 10, np.float32),
                               "ids": np.arange(i % 3 + 1, dtype=np.int64) + 10 * i} for i in range(per_file)])
        files.append(path)
    return files


def _reader_job(files, batch_size, devices, **kw):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function()
    def read_job():
        with flow.scope.placement("cpu", "0:0-%d" % (devices - 1)):
            data = flow.data.onerec_reader(files=files, batch_size=batch_size, **kw)
            labels = flow.data.onerec_decoder(data, key="labels", dtype=flow.int32, shape=(1,))
            dense = flow.data.onerec_decoder(data, key="dense_fields", dtype=flow.float, shape=(3,))
        return flow.identity_n([labels, dense])
    return read_job


def test_reader_one_and_two_devices(tmp_path):
    files = _write_files(tmp_path)
    one = _reader_job(files, 4, 1)
    got = [one().get()[0].numpy().ravel().tolist() for _ in range(7)]
    stream = [f * 100 + i for f in range(4) for i in range(6)]
    assert sum(got, []) == (stream * 2)[:28]  # one stream over the files, restarting after the last
    two = _reader_job(files, 4, 2)
    labels, dense = [b.numpy() for b in two().get()]
    # device 0 reads files 0-1, device 1 files 2-3 (contiguous balanced shares), 2 examples each
    assert labels.ravel().tolist() == [0, 1, 200, 201]
    np.testing.assert_allclose(dense[:, 0], [0.0, 0.1, 2.0, 2.1], rtol=1e-6)


def test_shuffle_modes(tmp_path):
    files = _write_files(tmp_path, n_files=2, per_file=8)
    stream = [f * 100 + i for f in range(2) for i in range(8)]
    batch_job = _reader_job(files, 4, 1, random_shuffle=True, shuffle_mode="batch", shuffle_buffer_size=2)
    batches = [tuple(batch_job().get()[0].numpy().ravel()) for _ in range(8)]
    written = {tuple(stream[i:i + 4]) for i in range(0, 16, 4)}
    assert set(batches) <= written and len(set(batches)) > 1  # whole batches as written, in another order
    inst_job = _reader_job(files, 4, 1, random_shuffle=True, shuffle_mode="instance", shuffle_buffer_size=5)
    rows = sum((inst_job().get()[0].numpy().ravel().tolist() for _ in range(8)), [])
    assert set(rows) <= set(stream) and rows != (stream * 2)[:32]
    with pytest.raises(ValueError, match="shuffle_mode must be 'instance' or 'batch', got 'global'"):
        _reader_job(files, 4, 1, random_shuffle=True, shuffle_mode="global")()


def test_decoder_reshape_padding_dynamic(tmp_path):
    rows = [{"ids": np.arange(n, dtype=np.int64) + 1, "m": np.arange(6, dtype=np.float64).reshape(2, 3) + n}
            for n in (1, 3, 2)]
    payloads = [O.encode_example(r) for r in rows]
    padded = O.decode_feature(payloads, "ids", np.int64, (4,), batch_padding=(-1,), is_dynamic=True)
    assert padded.tolist() == [[1, 0, 0], [1, 2, 3], [1, 2, 0]]
    fixed = O.decode_feature(payloads, "ids", np.int64, (4,), batch_padding=(4,))
    assert fixed.tolist() == [[1, 0, 0, 0], [1, 2, 3, 0], [1, 2, 0, 0]]
    reshaped = O.decode_feature(payloads, "m", np.float64, (3, 2), reshape=(-1, 2))
    np.testing.assert_array_equal(reshaped[2], np.arange(6).reshape(3, 2) + 2)
    with pytest.raises(ValueError, match="instance shape \\(2, 3\\) differs from the static shape \\(3, 2\\)"):
        O.decode_feature(payloads, "m", np.float64, (3, 2))
    with pytest.raises(TypeError, match="holds a Float64List, the requested dtype float32 needs a Float32List"):
        O.decode_feature(payloads, "m", np.float32, (2, 3))
    with pytest.raises(ValueError, match="dim 0 differs between examples \\[1, 3, 2\\]"):
        O.decode_feature(payloads, "ids", np.int64, (3,))


def test_decoder_in_a_job(tmp_path):
    files = _write_files(tmp_path, n_files=1, per_file=3)
    flow.clear_default_session()

    @flow.global_function()
    def ids_job():
        data = flow.data.onerec_reader(files=files, batch_size=3)
        return flow.data.onerec_decoder(data, key="ids", dtype=flow.int64, shape=(4,), is_dynamic=True,
                                        batch_padding=(-1,))

    out = ids_job().get().numpy()
    assert out.tolist() == [[0, 0, 0], [10, 11, 0], [20, 21, 22]]
    with pytest.raises(TypeError, match="dtype must be one of int8, int32, int64, float32, float64"):
        flow.clear_default_session()

        @flow.global_function()
        def bad_job():
            return flow.data.onerec_decoder(flow.data.onerec_reader(files=files), key="ids", dtype=flow.uint8,
                                            shape=(1,))
        bad_job()
    with pytest.raises(FileNotFoundError, match="OneRec file .*missing.onerec not found"):
        flow.data.onerec_reader(files=[os.path.join(str(tmp_path), "missing.onerec")])
