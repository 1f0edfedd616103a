"""`flow.data.megatron_gpt_mmap_data_loader` (OneFlow v0.4.0) on Megatron indexed datasets written here: samples
against the token stream of the documents (numpy), sharding over 1 and 2 devices, shuffling, the saved iteration
variable, splits and the index checks."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat.datasets import megatron_io

DOCS = [np.arange(k * 100, k * 100 + 5 + k) for k in range(6)]  # 45 tokens


@pytest.fixture
def prefix(tmp_path):
    p = str(tmp_path / "ds")
    megatron_io.write_dataset(p, DOCS)
    return p


def _loader(prefix, devices, **kw):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function()
    def load():
        return flow.data.megatron_gpt_mmap_data_loader(prefix, 4, 12, 4, **kw)

    return load


def _stream_samples(docs_in_order, seq, count):
    stream = np.concatenate(docs_in_order)
    return [stream[k * seq: k * seq + seq + 1] for k in range(count)]


@pytest.mark.parametrize("devices", [1, 2])
def test_samples_are_consecutive_windows_of_the_documents(prefix, devices):
    load = _loader(prefix, devices, shuffle=False, dtype=flow.int32)
    got = np.concatenate([load().get().numpy() for _ in range(3)])
    assert got.dtype == np.int32 and got.shape == (12, 5)
    # 12 samples of 4 (+1) tokens need 49 tokens: two epochs of the 45, in document order without shuffling
    want = _stream_samples(DOCS + DOCS, 4, 12)
    np.testing.assert_array_equal(got, np.stack(want))


def test_shuffled_samples_split_the_same_way_on_any_device_count(prefix):
    one = [_loader(prefix, 1, random_seed=7)().get().numpy()]
    two = _loader(prefix, 2, random_seed=7)().get().numpy()
    np.testing.assert_array_equal(one[0], two)
    other = _loader(prefix, 1, random_seed=8)().get().numpy()
    assert not np.array_equal(one[0], other)
    stream = np.concatenate(DOCS)
    for row in two:  # each sample is a run of the documents' tokens (documents may be joined in any order)
        assert all(t in stream for t in row)


def test_start_from_saved_progress_keeps_the_iteration_in_a_variable(prefix, tmp_path):
    load = _loader(prefix, 1, shuffle=False, start_from_saved_progress=True)
    first = [load().get().numpy() for _ in range(2)]
    variables = flow.get_all_variables()
    (name,) = [n for n in variables if n.startswith("gpt_data_loader-iteration-sq4-sa12-bs4")]
    assert variables[name].numpy().tolist() == [2]
    flow.checkpoint.save(str(tmp_path / "ck"))
    third = load().get().numpy()

    load = _loader(prefix, 1, shuffle=False, start_from_saved_progress=True)
    flow.load_variables(flow.checkpoint.get(str(tmp_path / "ck")))
    np.testing.assert_array_equal(load().get().numpy(), third)  # resumes at batch 2
    want = _stream_samples(DOCS + DOCS, 4, 8)
    np.testing.assert_array_equal(np.concatenate(first), np.stack(want))


def test_splits_and_errors(prefix, tmp_path):
    # split_sizes (2, 1): the first 4 documents, then the last 2
    ds = megatron_io.MegatronGPTMMapDataset(prefix, 3, 1, 2, split_sizes=(2, 1), split_index=1, shuffle=False)
    np.testing.assert_array_equal(ds.sample(0), np.concatenate(DOCS[4:])[:4])
    with pytest.raises(ValueError, match="split index 2 is out of range"):
        flow.data.megatron_gpt_mmap_data_loader(prefix, 4, 12, 4, split_sizes=(1, 1), split_index=2, name="g")
    bad = tmp_path / "bad"
    (tmp_path / "bad.idx").write_bytes(b"NOTANIDX" + bytes(40))
    (tmp_path / "bad.bin").write_bytes(b"")
    with pytest.raises(ValueError, match="not a Megatron indexed dataset"):
        megatron_io.MegatronGPTMMapDataset(str(bad), 4, 1, 1)
    # one parallel_distribution entry per hierarchy axis (2-D ones are read as nested rows on a mesh, test_sbp2d)
    with pytest.raises(ValueError, match=r"parallel_distribution \['S\(0\)', 'B'\] has 2 entries, but the placement "
                                         r"has 1 dimension \(hierarchy \(1,\)\)"):
        _loader(prefix, 1, parallel_distribution=["S(0)", "B"])()
