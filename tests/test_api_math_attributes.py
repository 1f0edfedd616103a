"""api-math: OneFlow 0.9's tensor types, default dtype, print options, thread count, inference mode and the
Tensor attribute methods (type, byte, cast, get_device, stride, storage_offset, pin_memory, is_pinned,
bernoulli_): what they return, what they change, and the exact errors."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat._global import print_options


@pytest.fixture
def default_dtype_restored():
    yield
    flow.set_default_dtype(flow.float32)


@pytest.fixture
def print_options_restored():
    saved = dict(vars(print_options.PRINT_OPTS))
    yield
    vars(print_options.PRINT_OPTS).update(saved)


# --- tensor types ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,dtype", [
    ("FloatTensor", flow.float32), ("DoubleTensor", flow.float64), ("HalfTensor", flow.float16),
    ("BoolTensor", flow.bool), ("ByteTensor", flow.uint8), ("CharTensor", flow.int8), ("IntTensor", flow.int32),
    ("LongTensor", flow.int64)])
def test_tensor_types_build_tensors_of_their_dtype(name, dtype):
    T = getattr(flow, name)
    assert repr(T) == "<class 'oneflow.%s'>" % name
    assert T(2, 3).dtype == dtype and tuple(T(2, 3).shape) == (2, 3)
    x = T([1, 0, 2])
    assert x.dtype == dtype
    np.testing.assert_array_equal(x.numpy(), np.array([1, 0, 2]).astype(dtype.np if dtype != flow.bool else bool))
    assert x.type() == "oneflow." + name


def test_tensor_type_method_names_and_converts():
    x = flow.tensor([[1.5, -2.25], [3.0, 0.5]])
    assert x.type() == "oneflow.FloatTensor" and flow.tensor([1, 2]).type() == "oneflow.LongTensor"
    y = x.type(flow.IntTensor)
    assert y.dtype == flow.int32 and y.numpy().tolist() == [[1, -2], [3, 0]]
    assert x.type("oneflow.DoubleTensor").dtype == flow.float64
    assert x.type(flow.int8).dtype == flow.int8
    assert x.byte().dtype == flow.uint8 and x.byte().numpy().tolist() == [[1, 254], [3, 0]]
    assert x.cast(flow.int64).dtype == flow.int64
    p = flow.placement("cpu", ranks=[0])
    g = x.to_global(placement=p, sbp=flow.sbp.split(0))
    assert g.type() == "oneflow.FloatTensor"
    assert g.type(flow.DoubleTensor).is_global and g.type(flow.DoubleTensor).dtype == flow.float64
    with pytest.raises(TypeError, match=r"^dtype must be a type, str, or dtype object$"):
        x.type(3)
    with pytest.raises(ValueError, match=r"^invalid type: oneflow\.NoSuchTensor$"):
        x.type("oneflow.NoSuchTensor")
    with pytest.raises(TypeError, match=r"^non_blocking=True is not supported yet$"):
        x.type(flow.IntTensor, non_blocking=True)


# --- the default dtype ---------------------------------------------------------------------------------------------
def test_default_dtype_changes_what_creation_functions_make(default_dtype_restored):
    assert flow.get_default_dtype() == flow.float32
    flow.set_default_dtype(flow.float64)
    assert flow.get_default_dtype() == flow.float64
    for make in (flow.ones, flow.zeros, flow.empty, flow.rand, flow.randn, flow.Tensor):
        assert make(2, 3).dtype == flow.float64, make
        assert make((2, 3)).dtype == flow.float64, make
    assert flow.tensor([1.0, 2]).dtype == flow.float64
    assert flow.full((2,), 1.5).dtype == flow.float64
    assert flow.hann_window(3).dtype == flow.float64
    # (OneFlow 0.9's test_default_dtype.py: ints and numpy arrays keep their own dtypes)
    assert flow.tensor((2, 3)).dtype == flow.int64
    assert flow.tensor(np.array([1, 2], np.float32)).dtype == flow.float32
    assert flow.ones(2, dtype=flow.float16).dtype == flow.float16
    flow.set_default_tensor_type(flow.FloatTensor)
    assert flow.ones(2).dtype == flow.float32 and flow.get_default_dtype() == flow.float32
    flow.set_default_tensor_type("oneflow.DoubleTensor")
    assert flow.randn(2).dtype == flow.float64
    p = flow.placement("cpu", ranks=[0])
    assert flow.ones(2, placement=p, sbp=flow.sbp.broadcast).dtype == flow.float64
    # a float16 default: the source ops make float16, Python float data float32 (OneFlow 0.9's tensor_utils.cpp
    # casts float sequences to kFloat when the default is not float64; flow.full takes flow.tensor(fill)'s dtype)
    flow.set_default_dtype(flow.float16)
    assert flow.zeros(2).dtype == flow.float16 and flow.randn(2).dtype == flow.float16
    assert flow.tensor([0.5]).dtype == flow.float32 and flow.full((2,), 0.5).dtype == flow.float32


def test_default_dtype_refuses_non_floating_types(default_dtype_restored):
    with pytest.raises(RuntimeError, match=r"^only floating-point types are supported as the default type$"):
        flow.set_default_dtype(flow.int32)
    with pytest.raises(RuntimeError, match=r"^only floating-point types are supported as the default type$"):
        flow.set_default_tensor_type(flow.LongTensor)
    with pytest.raises(TypeError, match=r"^invalid type object$"):
        flow.set_default_tensor_type(flow.float64)
    assert flow.get_default_dtype() == flow.float32


# --- print options --------------------------------------------------------------------------------------------------
def test_set_printoptions_changes_how_tensors_print(print_options_restored):
    x = flow.tensor([[1.5, -2.25], [3.0, 0.5]])
    flow.set_printoptions(precision=2)
    assert repr(x) == "tensor([[ 1.50, -2.25],\n        [ 3.00,  0.50]], dtype=oneflow.float32)"
    flow.set_printoptions(precision=1, sci_mode=True)
    assert repr(x) == "tensor([[ 1.5e+00, -2.2e+00],\n        [ 3.0e+00,  5.0e-01]], dtype=oneflow.float32)"
    flow.set_printoptions(precision=4)  # (sci_mode goes back to automatic when not given, as OneFlow's)
    assert repr(flow.tensor([1e-6, 1.0])) == "tensor([1.0000e-06, 1.0000e+00], dtype=oneflow.float32)"
    flow.set_printoptions(sci_mode=False)
    assert repr(flow.tensor([1e-6, 1.0])) == "tensor([0.0000, 1.0000], dtype=oneflow.float32)"
    flow.set_printoptions(threshold=5, edgeitems=2)
    assert repr(flow.arange(10)) == "tensor([0, 1,  ..., 8, 9], dtype=oneflow.int64)"  # (" ..." joined by ", ")
    flow.set_printoptions(linewidth=20, threshold=1000)
    assert repr(flow.arange(10)) == ("tensor([0, 1, 2, 3,\n        4, 5, 6, 7,\n        8, 9],\n"
                                     "       dtype=oneflow.int64)")
    flow.set_printoptions(profile="short")
    assert repr(flow.tensor([1 / 3])) == "tensor([0.33], dtype=oneflow.float32)"
    flow.set_printoptions(profile="full")
    assert "..." not in repr(flow.zeros(2000, dtype=flow.int64))
    flow.set_printoptions(profile="default")
    assert repr(flow.tensor([1 / 3])) == "tensor([0.3333], dtype=oneflow.float32)"
    assert "..." in repr(flow.zeros(2000, dtype=flow.int64))
    with pytest.raises(ValueError, match=r"profile must be one of default, full, short, got 'long'"):
        flow.set_printoptions(profile="long")


# --- threads, inference mode ---------------------------------------------------------------------------------------
def test_set_num_threads_sets_the_blas_pools(capsys):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from oneflow_compat._global import num_threads

    before = threadpoolctl.threadpool_info()
    try:
        flow.set_num_threads(1)
        assert num_threads.get_num_threads_set() == 1
        for info in threadpoolctl.threadpool_info():
            if info["user_api"] == "blas":
                assert info["num_threads"] == 1, info
        flow.set_num_threads(0)
        assert capsys.readouterr().out == "Warning :  0  less than 1 will be set to 1.\n"
        assert num_threads.get_num_threads_set() == 1
        with pytest.raises(TypeError, match=r"set_num_threads\(\): expected an int, got float"):
            flow.set_num_threads(2.0)
    finally:
        for info in before:
            if info["user_api"] == "blas":
                threadpoolctl.threadpool_limits(info["num_threads"], user_api="blas")


def test_inference_mode_is_a_context_and_a_decorator():
    assert flow.autograd.inference_mode is flow.inference_mode
    x = flow.ones(2, 3, requires_grad=True)
    with flow.inference_mode():
        assert not flow.is_grad_enabled()
        y = x * x
        with flow.inference_mode(False):
            assert flow.is_grad_enabled()
            z = x * x
    assert flow.is_grad_enabled()
    assert not y.requires_grad and z.requires_grad

    @flow.inference_mode()
    def f(t):
        return t * t

    assert not f(x).requires_grad and flow.is_grad_enabled()
    with pytest.raises(TypeError, match=r"inference_mode\(\): mode must be a bool"):
        flow.inference_mode(f)


# --- the Tensor attribute methods -------------------------------------------------------------------------------
def test_strides_offsets_and_pinning():
    x = flow.zeros(2, 3, 4)
    assert x.stride() == (12, 4, 1) and x.stride(1) == 4 and x.stride(-1) == 1
    assert x.storage_offset() == 0
    assert flow.zeros(3).stride() == (1,) and flow.tensor(2.0).stride() == ()
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p.is_pinned() and p is not x and p.pin_memory() is p
    np.testing.assert_array_equal(p.numpy(), x.numpy())
    assert x.cast(flow.float64, pin_memory=True).is_pinned()
    g = x.to_global(placement=flow.placement("cpu", ranks=[0]), sbp=flow.sbp.split(0))
    assert g.stride() == (12, 4, 1)
    with pytest.raises(RuntimeError, match=r"^Tensor\.pin_memory\(\) only support local tensor for now!$"):
        g.pin_memory()
    with pytest.raises(RuntimeError, match=r"^get_device is only available for GPU tensor\.$"):
        x.get_device()


def test_bernoulli_in_place_draws_at_the_rates():
    flow.manual_seed(3)
    x = flow.zeros(20000)
    assert x.bernoulli_(0.25) is x
    assert set(np.unique(x.numpy())) <= {0.0, 1.0}
    assert abs(x.numpy().mean() - 0.25) < 0.02
    probs = flow.tensor(np.tile([0.0, 1.0, 0.5], 5000).astype(np.float32))
    probs.bernoulli_()
    got = probs.numpy().reshape(-1, 3)
    assert got[:, 0].sum() == 0 and got[:, 1].min() == 1 and abs(got[:, 2].mean() - 0.5) < 0.03
    with pytest.raises(RuntimeError, match=r"^bernoulli expects p to be in \[0, 1\], but got p=1\.5$"):
        x.bernoulli_(1.5)


def test_cuda_tensor_types_convert_and_name_the_device(default_dtype_restored):
    from oneflow_compat._global import tensor_types

    x = flow.tensor([1.5, 2.5])
    y = x.type(tensor_types.CUDA_TYPES["DoubleTensor"])  # (without CUDA, "cuda" tensors run on the CPU)
    assert y.type() == "oneflow.cuda.DoubleTensor" and y.dtype == flow.float64 and y.get_device() == 0
    assert y.type("oneflow.FloatTensor").type() == "oneflow.FloatTensor"
    np.testing.assert_array_equal(y.numpy(), [1.5, 2.5])
    with pytest.raises(RuntimeError, match=r"^cannot pin tensor with device: cuda:0, only dense CPU tensors can be "
                                           r"pinned\.$"):
        y.pin_memory()

    class OtherCudaType:  # the shape of any other tensor-type class: a oneflow dtype and an is_cuda flag
        dtype = flow.int32
        is_cuda = True

    assert x.type(OtherCudaType).type() == "oneflow.cuda.IntTensor"
    flow.set_default_tensor_type(tensor_types.CUDA_TYPES["DoubleTensor"])
    assert flow.get_default_dtype() == flow.float64
