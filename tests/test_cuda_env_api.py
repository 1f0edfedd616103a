"""OneFlow 0.9's cuda.rst (set_device, get_device_properties/capability/name, empty_cache, the typed tensor types)
on a machine without CUDA and on the fake device (tests/strict_device.py) with a fake CUDA runtime of two GPUs;
distributed.rst's flow.env.init_rdma / rdma_is_initialized and tensor_attributes.rst's
flow.env.all_device_placement."""
import logging
import re

import numpy as np
import pytest

import oneflow_compat as flow
import strict_device
from oneflow_compat.backend import devices

H100 = {"name": b"NVIDIA H100 80GB HBM3", "major": 9, "minor": 0, "totalGlobalMem": 85045231616,
        "multiProcessorCount": 132, "isMultiGpuBoard": 0, "integrated": 0}
A100 = {"name": b"NVIDIA A100-SXM4-40GB", "major": 8, "minor": 0, "totalGlobalMem": 42314694656,
        "multiProcessorCount": 108, "isMultiGpuBoard": 0, "integrated": 0}


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(devices, "mode", lambda: "cpu")  # CUDA never usable, whatever device the suite runs on


@pytest.fixture
def two_gpus(monkeypatch):
    fake = strict_device.install(monkeypatch, "auto", allow_syncs=True, gpus=2)
    asked = []

    def props(index):
        asked.append(index)
        return dict((H100, A100)[index])

    fake.cuda.runtime.getDeviceProperties = props
    fake.asked = asked
    return fake


def test_without_cuda_the_queries_fail_as_oneflow_built_with_cuda(no_cuda):
    assert not flow.cuda.is_available() and flow.cuda.device_count() == 0
    for query in (flow.cuda.get_device_properties, flow.cuda.get_device_capability, flow.cuda.get_device_name):
        with pytest.raises(RuntimeError, match=re.escape(
                "Check failed: cudaGetDevice(&saved_dev_id_) : no CUDA-capable device is detected (100)")):
            query()
    with pytest.raises(RuntimeError, match="ONEFLOW_COMPAT_DEVICE=cpu"):  # and says why here
        flow.cuda.get_device_name(0)
    assert flow.cuda.empty_cache() is None  # no error without a device (OneFlow's EmptyCache)
    flow.cuda.set_device(0)  # the local rank's device: a no-op, as OneFlow's
    flow.cuda.set_device(-1)
    with pytest.raises(ValueError, match=re.escape(
            "Setting cuda device to a device whose index does not equal to the local rank is not supported.")):
        flow.cuda.set_device(1)


def test_device_arguments_are_checked_as_oneflows(no_cuda):
    with pytest.raises(ValueError, match=re.escape("Expected a cuda device, but got: cpu:0")):
        flow.cuda.set_device("cpu")
    with pytest.raises(ValueError, match="Expected a flow.device with a specified index or an integer, but got:None"):
        flow.cuda.set_device(None)
    flow.cuda.set_device(flow.device("cuda:0"))


def test_on_the_fake_device_the_properties_are_the_runtimes(two_gpus):
    assert flow.cuda.is_available() and flow.cuda.device_count() == 2
    props = flow.cuda.get_device_properties(0)
    assert (props.name, props.major, props.minor, props.total_memory, props.multi_processor_count) == \
        ("NVIDIA H100 80GB HBM3", 9, 0, 85045231616, 132)
    assert props.is_multi_gpu_board == 0 and props.is_integrated == 0
    assert repr(props) == ("_CudaDeviceProperties(name='NVIDIA H100 80GB HBM3', major=9, minor=0, "
                           "total_memory=81105MB, multi_processor_count=132)")
    with pytest.raises(AttributeError):
        props.major = 7
    assert flow.cuda.get_device_capability("cuda:1") == (8, 0)
    assert flow.cuda.get_device_name(flow.device("cuda", 1)) == "NVIDIA A100-SXM4-40GB"
    assert flow.cuda.get_device_name() == "NVIDIA H100 80GB HBM3"  # the current device: the local rank, 0
    assert two_gpus.asked == [0, 1, 1, 0]
    with pytest.raises(ValueError, match="device index 2 out of range: this process sees 2 CUDA device"):
        flow.cuda.get_device_properties(2)


def test_empty_cache_frees_the_pools_blocks_on_the_device(two_gpus):
    freed = []

    class Pool:
        def __init__(self, name):
            self.name = name

        def free_all_blocks(self):
            freed.append(self.name)

    two_gpus.get_default_memory_pool = lambda: Pool("device")
    two_gpus.get_default_pinned_memory_pool = lambda: Pool("pinned")
    flow.cuda.empty_cache()
    assert freed == ["device", "pinned"]


def test_typed_tensor_types_make_cuda_tensors_of_their_dtype(two_gpus):
    types = {"HalfTensor": flow.float16, "FloatTensor": flow.float32, "DoubleTensor": flow.float64,
             "BoolTensor": flow.bool, "ByteTensor": flow.uint8, "CharTensor": flow.int8, "IntTensor": flow.int32,
             "LongTensor": flow.int64}
    for name, dtype in types.items():
        cls = getattr(flow.cuda, name)
        t = cls([1, 0, 3])
        assert t.dtype == dtype and t.is_cuda and t.device == flow.device("cuda:0"), name
        np.testing.assert_array_equal(t.numpy(), np.array([1, 0, 3]).astype(t.numpy().dtype))
        assert t.numpy().dtype == np.dtype(dtype.np if dtype != flow.bool else np.bool_), name
        assert repr(cls) == "<class 'oneflow.cuda.%s'>" % name
        assert cls.__doc__.startswith("Creates a Tensor with the dtype of oneflow.")
    shaped = flow.cuda.FloatTensor(2, 3)  # flow.Tensor(*shape) on cuda
    assert tuple(shaped.shape) == (2, 3) and shaped.dtype == flow.float32 and shaped.is_cuda


def test_typed_tensor_types_without_cuda_run_cuda_on_the_cpu(no_cuda):
    t = flow.cuda.LongTensor([[1, 2], [3, 4]])
    assert t.dtype == flow.int64 and t.is_cuda
    np.testing.assert_array_equal(t.numpy(), [[1, 2], [3, 4]])


# --- flow.env ---------------------------------------------------------------------------------------------------
def test_rdma_is_never_initialized_and_init_skips_as_oneflow_without_rdma(caplog):
    assert flow.env.rdma_is_initialized() is False
    with caplog.at_level(logging.DEBUG, logger="oneflow_compat"):
        flow.env.init_rdma()  # one process: OneFlow skips it ("only one process in this group")
    assert flow.env.rdma_is_initialized() is False
    assert "Skip init RDMA because only one process in this group!" in caplog.text
    assert flow.env.destory_rdma() is None


def test_rdma_on_several_processes_warns_not_compiled(monkeypatch, caplog):
    from oneflow_compat._global import env_rdma

    monkeypatch.setattr(env_rdma._world, "job_size", lambda: 2)
    monkeypatch.setattr(env_rdma, "_SAID", [])
    with caplog.at_level(logging.WARNING, logger="oneflow_compat"):
        flow.env.init_rdma()
        flow.env.init_rdma()
    assert caplog.text.count("Skip init RDMA because RDMA is not compiled!") == 1
    assert flow.env.rdma_is_initialized() is False


def test_all_device_placement_is_placement_all():
    for kind in ("cpu", "cuda"):
        p = flow.env.all_device_placement(kind)
        assert p == flow.placement.all(kind) and p.ranks.tolist() == [0] and p.type == kind
    with pytest.raises(ValueError, match="type must be \"cpu\" or \"cuda\", got 'tpu'"):
        flow.env.all_device_placement("tpu")
