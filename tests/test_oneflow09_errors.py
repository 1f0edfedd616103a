"""Error types and words of OneFlow 0.9 (the C++ checks of its v0.9.0 sources, cited per test): a program that
matches OneFlow's message text keeps working here. Where this project says more, OneFlow's words are a part of
the message."""
import numpy as np
import pytest

import oneflow as flow


def _raised(fn, kind):
    with pytest.raises(kind) as e:
        fn()
    return str(e.value)


def test_reshape_errors_are_oneflows_runtime_errors():
    # core/functional/impl/common.cpp InferShapeUnspecifiedDim
    x = flow.randn(2, 3, 4)
    assert "Invalid shape dimension -2" in _raised(lambda: x.reshape(-2, 4), RuntimeError)
    assert "only one dimension can be inferred" in _raised(lambda: x.reshape(-1, -1), RuntimeError)
    assert "shape '(2,3,5)' is invalid for input of size 24" in _raised(lambda: x.reshape(2, 3, 5), RuntimeError)
    assert "shape '(5,-1)' is invalid for input of size 24" in _raised(lambda: x.view(5, -1), RuntimeError)
    with pytest.raises(ValueError):  # still a ValueError, as before
        x.reshape(7, -1)
    assert x.reshape(4, -1).shape == (4, 6)
    assert flow.zeros(0, 3).reshape(3, 0).shape == (3, 0)


def test_inplace_on_a_leaf_that_requires_grad():
    # core/functional/impl/common.cpp CheckInplaceValid
    x = flow.ones(2, 2, requires_grad=True)
    msg = _raised(lambda: x.add_(1), RuntimeError)
    assert msg == "a leaf Tensor that requires grad is being used in an in-place operation"
    assert _raised(lambda: x.relu_(), RuntimeError) == msg
    np.testing.assert_array_equal(x.numpy(), np.ones((2, 2)))


def test_layer_norm_shape_mismatch_shows_normalized_shape_as_given():
    # python/oneflow/nn/modules/normalization.py (layer_norm)
    msg = _raised(lambda: flow.nn.LayerNorm(2)(flow.randn(2, 3)), RuntimeError)
    assert msg == ("Given normalized_shape=(2,), expected input with shape [*, 2,], but got input of size "
                   "oneflow.Size([2, 3])")


def test_split_axis_checks():
    # api/python/symbol/sbp_symbol.cpp; core/functional/impl/global_cast.cpp CheckNdSbpValid
    assert _raised(lambda: flow.sbp.split(-1), RuntimeError) == "Split axis must not be negative, but got -1!"
    assert _raised(lambda: flow.sbp.split(6), RuntimeError) == \
        "Expected split axis to be less than the supported maximum axis (6), but got 6!"
    assert flow.sbp.split(5) == flow.sbp.split(dim=5)
    everywhere = flow.placement.all("cpu")
    local = flow.tensor([1, 2, 3, 4])
    msg = _raised(lambda: local.to_global(placement=everywhere, sbp=flow.sbp.split(1)), RuntimeError)
    assert "Split axis out of range (expected to be in range of [0, 1), but got 1!" in msg
    g = flow.tensor([1, 2, 3, 4], placement=everywhere, sbp=flow.sbp.broadcast)
    with pytest.raises(ValueError, match=r"Split axis out of range \(expected to be in range of \[0, 1\), but got 1!"):
        g.to_global(sbp=flow.sbp.split(1))
    assert _raised(lambda: local.to_local(), RuntimeError) == "Expected global tensor for to_local but got local tensor!"


def test_mm_takes_two_matrices():
    # core/functional/impl/nn_functor.cpp MatMulNoBroadCastFunctor / MatMulFunctor
    assert _raised(lambda: flow.mm(flow.randn(2, 3, 3), flow.randn(3, 3)), RuntimeError) == "self must be a matrix"
    assert _raised(lambda: flow.mm(flow.randn(2, 3), flow.randn(3, 3, 2)), RuntimeError) == "mat2 must be a matrix"
    assert _raised(lambda: flow.randn(2, 3).mm(flow.randn(4, 3)), RuntimeError) == \
        "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x3)"
    a, b = np.random.rand(2, 3).astype(np.float32), np.random.rand(3, 4).astype(np.float32)
    np.testing.assert_allclose(flow.mm(flow.tensor(a), flow.tensor(b)).numpy(), a @ b, rtol=1e-5)
    assert _raised(lambda: flow.matmul(flow.tensor(1.0), flow.randn(4, 4)), RuntimeError) == \
        "Tensor a's dim should >= 1"
    assert _raised(lambda: flow.matmul(flow.randn(4, 4), flow.tensor(1.0)), RuntimeError) == \
        "Tensor b's dim should >= 1"


def test_bias_add_checks():
    # core/functional/impl/nn_functor.cpp BiasAddFunctor; user/ops/bias_add_op.cpp
    x = flow.ones(4, 4)
    assert _raised(lambda: flow._C.bias_add(x, flow.ones(5), axis=1), RuntimeError) == \
        "The size of tensor x (4,4) must match the size of tensor b (5,) at dimension 1"
    assert _raised(lambda: flow._C.bias_add(x, flow.ones(5), axis=3), IndexError) == \
        "Dimension out of range (expected to be in range of [-2,1], but got 3)"
    assert "Bias tensor has to be a one-dimensional vector" in \
        _raised(lambda: flow._C.bias_add(x, flow.ones(2, 2), axis=0), RuntimeError)
    b = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(flow._C.bias_add(x, flow.tensor(b), axis=-1).numpy(), np.ones((4, 4)) + b[None, :])


def test_unknown_reduction_is_refused_with_oneflows_words():
    x, t = flow.ones(4, 4), flow.ones(4, 4)
    msg = _raised(lambda: flow._C.cross_entropy(x, t, None, 0, "just_test"), RuntimeError)
    assert msg.startswith("Reduction should be none, sum or mean.")
    with pytest.raises(ValueError, match="Reduction should be none, sum or mean."):
        flow.nn.functional.nll_loss(flow.randn(2, 3), flow.tensor([0, 1]), reduction="avg")


def test_fused_mlp_words_differ_from_the_dropout_variant():
    # core/functional/impl/nn_functor.cpp FusedMLPFunctor
    x = flow.ones(4, 4)
    assert "Bias's dim is not equal to weight's first dim." in \
        _raised(lambda: flow._C.fused_mlp(x, [flow.ones(6, 4)], [flow.ones(5)], False), RuntimeError)
    assert "weight's second dim should be equal to input's second dim." in \
        _raised(lambda: flow._C.fused_mlp(flow.ones(2, 4), [flow.ones(3, 6)], [flow.ones(3)], False), RuntimeError)


def test_c_normalize_with_the_l2_kernel_checks_its_axis():
    # functional_api.yaml normalize; core/functional/impl/nn_functor.cpp L2NormalizeFunctor
    x = flow.ones(3, 3)
    assert _raised(lambda: flow._C.normalize(x, dim=3, use_l2_norm_kernel=True), RuntimeError) == \
        "Axis should < 2 but axis is 3 now."
    assert _raised(lambda: flow._C.normalize(x, dim=-3, use_l2_norm_kernel=True), RuntimeError) == \
        "Axis should >=0 but axis is -1 now."
    a = np.random.RandomState(0).randn(3, 4).astype(np.float32)
    np.testing.assert_allclose(flow._C.normalize(flow.tensor(a), dim=-1).numpy(),
                               a / np.linalg.norm(a, axis=1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(flow._C.normalize(flow.tensor(a), p=1.0, dim=0, use_l2_norm_kernel=False).numpy(),
                               a / np.abs(a).sum(0, keepdims=True), rtol=1e-6)


def test_repeat_interleave_tensor_repeats_checks():
    # core/functional/impl/array_functor.cpp RepeatInterLeaveTensorFunctor: its order and words
    x = flow.tensor([[1, 2], [3, 4]])
    assert _raised(lambda: flow.repeat_interleave(x, flow.tensor([[1, 2], [3, 4]]), dim=1), RuntimeError) == \
        "repeat_interleave only accept 1D vector as repeat"
    assert "repeats has to be Long tensor" in \
        _raised(lambda: flow.repeat_interleave(x, flow.tensor([1.0, 2.0]), dim=1), RuntimeError)
    assert "repeats has to be Long tensor" in \
        _raised(lambda: flow.repeat_interleave(x, flow.tensor([1, 2], dtype=flow.int32), dim=1), RuntimeError)
    assert _raised(lambda: flow.repeat_interleave(x, flow.tensor([1, -2]), dim=1), RuntimeError) == \
        "repeats can not be negative"
    assert "repeats must have the same size as input along dim" in \
        _raised(lambda: flow.repeat_interleave(x, flow.tensor([1]), dim=1), RuntimeError)
    np.testing.assert_array_equal(flow.repeat_interleave(x, flow.tensor([1, 2]), dim=1).numpy(),
                                  np.repeat(np.array([[1, 2], [3, 4]]), [1, 2], axis=1))


def test_negative_sizes():
    # user/ops/randperm_op.cpp; the creation ops' sizes (a ValueError too, as before)
    assert _raised(lambda: flow.randperm(-1), RuntimeError) == "Trying to create tensor with negative dimension -1: [-1]"
    assert "Trying to create tensor with negative dimension -1: [2, -1]" in _raised(lambda: flow.ones(2, -1), ValueError)


def test_unpack_hook_must_return_a_tensor():
    # api/python/autograd/autograd.cpp
    x = flow.ones(1, 2, 3).requires_grad_()
    with flow.autograd.graph.saved_tensors_hooks(lambda t: 0, lambda obj: obj):
        y = x * x
    assert _raised(lambda: y.sum().backward(), RuntimeError) == \
        "unpack_hook should return a Tensor, but got `<class 'int'>` instead"


def test_indexing_words():
    # core/functional/tensor_index.cpp
    x = flow.ones(2, 3)
    assert _raised(lambda: x[3], IndexError).startswith("Index out of range (expected to be in range of [-2,1], but got 3)")
    assert _raised(lambda: x[0, 0, 0], IndexError) == "Too many indices for tensor of dimension 2"
    three = (flow.tensor(1), flow.tensor(1), flow.tensor(1))
    assert _raised(lambda: x[three], IndexError) == "Too many indices for tensor of dimension 2"


def test_load_of_a_file_without_the_pytorch_format(tmp_path):
    # python/oneflow/framework/check_point_v2.py load: no method takes a file then
    path = tmp_path / "weights.bin"
    path.write_bytes(b"not a folder")
    assert _raised(lambda: flow.load(str(path), support_pytorch_format=False), NotImplementedError) == \
        "No valid load method found for %s" % path


def test_activation_argument_checks():
    # core/functional/impl/activation_functor.cpp PReluFunctor / SoftShrinkFunctor
    msg = _raised(lambda: flow.nn.PReLU(5)(flow.ones(4, 4)), RuntimeError)
    assert msg.startswith("num_parameters in prelu must be 1 or 4")
    msg = _raised(lambda: flow.nn.Softshrink(-0.1)(flow.randn(2)), RuntimeError)
    assert msg.startswith("alpha must be greater or equal to 0, but found to be -0.1.")
    with pytest.raises(ValueError):  # still a ValueError too
        flow.nn.functional.softshrink(flow.randn(2), -1.0)


def test_chunk_and_narrow_checks():
    # core/functional/impl/array_functor.cpp ChunkFunctor / NarrowFunctor
    assert _raised(lambda: flow.tensor(1.0).chunk(2), RuntimeError) == "chunk expects at least a 1-dimensional tensor."
    assert _raised(lambda: flow.ones(3).chunk(0), RuntimeError) == \
        "chunk expects `chunks` to be greater than 0, got: 0"
    assert _raised(lambda: flow.narrow(flow.tensor(1.0), 0, 0, 0), RuntimeError) == \
        "narrow() cannot be applied to a 0-dim tensor."
    assert _raised(lambda: flow.ones(3).narrow(0, 2, 2), RuntimeError) == \
        "start (2) + length (2) exceeds dimension size (3)"
    assert _raised(lambda: flow.ones(3).narrow(0, 4, 0), IndexError) == \
        "Dimension out of range (expected to be in range of [-1, 1], but got 4)"
    np.testing.assert_array_equal(flow.arange(5).narrow(0, -2, 2).numpy(), [3, 4])
    assert [c.numpy().tolist() for c in flow.arange(5).chunk(2)] == [[0, 1, 2], [3, 4]]


def test_dot_and_bmm_checks():
    # user/ops/dot_op.cpp; core/functional/impl/nn_functor.cpp BatchMatMulFunctor
    assert _raised(lambda: flow.dot(flow.tensor([2, 3]), flow.tensor([2, 3, 4])), RuntimeError) == \
        ("inconsistent tensor size, expected tensor to have the same number of elements, but got 2 and 3 "
         "elements respectively")
    two_d = flow.tensor([[2, 3], [3, 4]])
    assert _raised(lambda: flow.dot(two_d, two_d), RuntimeError) == "1D tensors expected, but got 2D tensors"
    assert _raised(lambda: flow.dot(flow.tensor([2, 3]), flow.tensor([2.0, 3.0])), RuntimeError) == \
        "expected both vectors to have same dtype, but found kInt64 and kFloat"
    assert flow.dot(flow.tensor([1.0, 2.0]), flow.tensor([3.0, 4.0])).item() == 11.0
    assert _raised(lambda: flow.bmm(flow.ones(3), flow.ones(2, 3, 3)), RuntimeError) == \
        "Expected 3-dimensional tensor, but got 1-dimensional tensor for argument #1"
    assert _raised(lambda: flow.ones(2, 3, 3).bmm(flow.ones(3, 3)), RuntimeError) == \
        "Expected 3-dimensional tensor, but got 2-dimensional tensor for argument #2"
    a, b = np.random.rand(2, 3, 4).astype(np.float32), np.random.rand(2, 4, 5).astype(np.float32)
    np.testing.assert_allclose(flow.bmm(flow.tensor(a), flow.tensor(b)).numpy(), a @ b, rtol=1e-5)


def test_batch_gather_checks():
    # user/ops/batch_gather_op.cpp: its order and words
    assert _raised(lambda: flow.batch_gather(flow.tensor(1.0), flow.tensor([0])), RuntimeError) == \
        "The dimension of the input tensor should be greater than zero, but got 0"
    assert _raised(lambda: flow.batch_gather(flow.ones(2, 3), flow.tensor(0)), RuntimeError) == \
        "The dimension of the indices tensor should be greater than zero, but got 0"
    assert _raised(lambda: flow.batch_gather(flow.ones(3), flow.tensor([[0], [1]])), RuntimeError) == \
        ("The dimension of the input tensor should be greater than or equal to the dimension of the indices tensor, "
         "but found that the dimension of the input tensor is 1, and the dimension of the indices tensor is 2")
    assert _raised(lambda: flow.batch_gather(flow.ones(4, 5), flow.tensor([[0], [1]])), RuntimeError) == \
        ("The size of indices tensor must match the size of input tensor at dimension 0 when two tensors are both "
         "dynamic or neither")
    assert "The dtype of the indices tensor must be int32 or int64" in \
        _raised(lambda: flow.batch_gather(flow.ones(2, 3), flow.zeros(2, 1)), TypeError)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(flow.batch_gather(flow.tensor(x), flow.tensor([[2], [0]])).numpy(), [[2.0], [3.0]])


def test_unknown_device_type_is_a_runtime_error():
    msg = _raised(lambda: flow.device("xpu"), RuntimeError)
    assert msg == "Expected one of cpu, cuda device type at start of device string: xpu"
    with pytest.raises(ValueError):
        flow.device("tpu:0")


def test_add_of_three_or_more_tensors_is_their_add_n():
    # functional_api.yaml "add" (a TensorTuple form); user/ops/add_n_op.cpp
    a, b = flow.tensor([1, 2]), flow.tensor([3, 4])
    assert flow.add(a, b, a).numpy().tolist() == [5, 8]
    assert flow.add([a, b]).numpy().tolist() == [4, 6]
    assert flow.add(a, b, alpha=2).numpy().tolist() == [7, 10]
    assert _raised(lambda: flow.add(a, b, flow.tensor([[2, 2], [2, 2]])), RuntimeError) == \
        "inconsistent tensor size, expected all tensor to have the same number of elements, but got 2 and 4"
    assert _raised(lambda: flow.add(a, b, flow.tensor([2.0, 2.0], dtype=flow.float64)), RuntimeError) == \
        "add_n expected all tenser to have same type, but found kInt64 and kDouble"
    x = flow.ones(2, requires_grad=True)
    flow.add(x, x, x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_binary_broadcast_mismatch_names_the_dimension():
    # user/ops/math_binary_broadcast_ops.cpp; core/functional/impl/array_functor.cpp (broadcast_tensors)
    x, y = flow.ones(8, 10), flow.ones(8)
    for op in (flow.add, flow.sub, flow.mul, flow.div, flow.maximum, flow.pow, flow.eq, flow.lt, flow.logical_and):
        assert _raised(lambda: op(x, y), RuntimeError) == \
            "The size of tensor a (10) must match the size of tensor b (8) at non-singleton dimension 1"
    with pytest.raises(ValueError, match=r"tensor a \(3\) must match the size of tensor b \(4\) at non-singleton "
                                         r"dimension 0"):
        flow.ones(3, 1, 2) * flow.ones(4, 5, 1)
    assert flow.add(flow.ones(3, 1), flow.ones(1, 4)).shape == (3, 4)
    assert _raised(lambda: flow.broadcast_tensors(), RuntimeError) == "tensors should not be empty."


def test_shape_function_words():
    # core/functional/impl/array_functor.cpp: Expand, Repeat, Split, SplitWithSize, Roll, IndexSelect, Meshgrid
    x = flow.ones(2, 2)
    assert _raised(lambda: x.expand(2, 4), RuntimeError) == (
        "The expanded size of the tensor (4) must match the existing size (2) at non-singleton dimension 1. "
        "Target sizes: (2,4). Tensor sizes: (2,2)")
    assert _raised(lambda: x.repeat(2), RuntimeError).startswith(
        "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    assert _raised(lambda: flow.split(flow.ones(5), [1, 3]), RuntimeError) == (
        "split_with_sizes expects split_sizes to sum exactly to 5 (input tensor's size at dimension 0), but got "
        "sum(split_sizes)=4")
    assert _raised(lambda: flow.split(flow.ones(5), -1), RuntimeError) == \
        "split expects split_size be non-negative, but got split_size=-1"
    assert _raised(lambda: flow.roll(x, [0, 1], [0]), RuntimeError) == \
        "shifts and dimensions must align. shifts: 2, dims: 1"
    assert _raised(lambda: flow.index_select(x, 0, flow.tensor([[0]])), IndexError) == \
        "index_select(): Index is supposed to be a vector"
    assert _raised(lambda: flow.index_select(x, 0, flow.tensor([0.0])), RuntimeError) == \
        "index_select(): Expected dtype int32 or int64 for index"
    assert _raised(lambda: flow.meshgrid(), RuntimeError) == "meshgrid expects a non-empty TensorList"
    assert _raised(lambda: flow.meshgrid(flow.ones(2), flow.ones(2, dtype=flow.int32)), RuntimeError) == \
        "meshgrid expects all tensors to have the same dtype"
    assert _raised(lambda: flow.meshgrid(flow.ones(2), flow.ones(2), indexing="ab"), ValueError) == \
        'meshgrid: indexing must be one of "xy" or "ij", but received: ab'
    assert _raised(lambda: flow.meshgrid(flow.ones(2, 2, 2)), RuntimeError) == \
        "Expected scalar or 1D tensor in the tensor list but got 3"
    assert _raised(lambda: flow.ones(2, 2, 2).t(), RuntimeError) == \
        "t() expects a tensor with <= 2 dimensions, but input tensor is 3D"


def test_cat_stack_gather_in_top_k_words():
    # core/functional/impl/array_functor.cpp: Concat, Stack, DimGather, InTopK
    x = flow.ones(2, 2)
    assert _raised(lambda: flow.cat([x, flow.ones(2, 2, 2)]), RuntimeError) == \
        "Tensors must have same number of dimensions: got 2 and 3 is expected."
    assert _raised(lambda: flow.cat([x, flow.ones(2, 3)]), ValueError) == \
        "Sizes of tensors must match except in dimension 0. Got 3 and 2 is expected in dimension 1."
    assert flow.cat([flow.ones(2, 3), flow.tensor([])]).shape == (2, 3)  # an empty 1-D tensor joins anything
    assert _raised(lambda: flow.stack([flow.ones(1, 2, 1), flow.ones(1, 2, 2)]), RuntimeError) == \
        "stack expects each tensor to be equal size, but got (1,2,1) at first input and (1,2,2) which index is 2"
    assert _raised(lambda: flow.gather(x, 0, flow.tensor([[0.0, 1.0]])), RuntimeError) == \
        "gather(): Expected dtype int32 or int64 for index"
    assert _raised(lambda: flow.gather(x, 1, flow.ones(2, 2, 2, dtype=flow.int64)), RuntimeError) == \
        "Index tensor must have the same number of dimensions as input tensor"
    assert _raised(lambda: flow.gather(x, 0, flow.zeros(2, 4, dtype=flow.int64)), RuntimeError) == \
        "Size does not match at dimension 1 expected index (2,4) to be smaller than self (2,2) apart from dimension 0"
    # an index smaller than the input outside dim reads the leading part (as torch.gather)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    i = np.array([[0, 2], [1, 1]])
    want = np.take_along_axis(a[:2, :], i, axis=1)
    np.testing.assert_array_equal(flow.gather(flow.tensor(a), 1, flow.tensor(i)).numpy(), want)
    assert _raised(lambda: flow.in_top_k(flow.tensor([1, 2]), flow.ones(3, 4), 1), RuntimeError) == \
        "The num of targets must equal the num of predictions"
    assert _raised(lambda: flow.in_top_k(flow.tensor([[1], [2]]), flow.ones(2, 4), 1), RuntimeError) == \
        "The dimension of targets must be 1"
    assert _raised(lambda: flow.in_top_k(flow.tensor([1, 2]), flow.ones(2, 1, 4), 1), RuntimeError) == \
        "The dimension of predictions must be 2"


def test_to_tile_and_scatter_nd_update_words():
    # core/functional/impl/array_functor.cpp: ToFunctor, To4Functor, TileFunctor, TensorScatterNdUpdateFunctor
    g = flow.tensor([0.0, 1.0], placement=flow.placement("cpu", ranks=[0]), sbp=[flow.sbp.split(0)])
    assert _raised(lambda: g.to("cpp"), RuntimeError) == \
        'Only string device without device id (eg. "cpu" or "cuda") is expected for global tensor, but got cpp'
    assert _raised(lambda: flow.tensor([0.0, 1.0]).to(g), RuntimeError) == \
        "tensor.to(other) can only be called when tensor and other are local tensors"
    assert flow.ones(2).to(flow.ones(2, dtype=flow.float64)).dtype == flow.float64
    assert _raised(lambda: flow.tensor([[1], [1]]).tile(-1), RuntimeError) == \
        "Trying to create tensor with negative dimension -1"
    x, idx = flow.arange(8, dtype=flow.float32), flow.tensor([[1], [3], [5]])
    assert _raised(lambda: flow.tensor_scatter_nd_update(x, idx, flow.tensor([-1.0, -2.0, -3.0], dtype=flow.float64)),
                   RuntimeError) == "The dtype of tensor and updates must be same."
    out = flow.tensor_scatter_nd_update(x, idx, flow.tensor([-1.0, -2.0, -3.0]))
    np.testing.assert_array_equal(out.numpy(), [0, -1, 2, -2, 4, -3, 6, 7])


def test_deform_conv2d_argument_checks():
    # user/ops/deform_conv_op.cpp: its order and words
    from oneflow_compat._global.nn_deform_conv import deform_conv2d as dc
    x, w = flow.ones(4, 3, 10, 10), flow.ones(5, 3, 3, 3)
    off = flow.zeros(4, 18, 8, 8)
    assert _raised(lambda: dc(x, off, w, stride=(0, 1)), RuntimeError) == \
        "The stride must be greater than 0,but got 1 and 0"
    assert _raised(lambda: dc(x, off, w, padding=(-1, 0)), RuntimeError) == \
        "The pad must be greater than or equal to 0,but got 0 and -1"
    assert _raised(lambda: dc(x, off, w, dilation=(0, 1)), RuntimeError) == \
        "The dilation must be greater than 0,but got 0 and 1"
    assert _raised(lambda: dc(x, off, w, mask=flow.ones(4, 1, 8, 8)), RuntimeError) == \
        "mask.shape[1] is not valid: got: 1 expected: 9"
    assert _raised(lambda: dc(x, flow.zeros(3, 18, 8, 8), w), RuntimeError) == \
        "invalid batch size of offset:got: 3 ,expected: 4"
    assert _raised(lambda: dc(x, off, w, padding=(0, 0), dilation=(6, 6)), RuntimeError) == \
        "Calculated output size too small - out_h: -2 ,out_w: -2"
    assert _raised(lambda: dc(x, off, w, stride=(2, 2)), RuntimeError) == \
        "invalid offset output dims: got ( 8, 8),expected: (4, 4)"
    assert dc(x, off, w).shape == (4, 5, 8, 8)


def test_a_python_bool_index_is_a_0d_mask():
    # numpy's reading, which OneFlow 0.9's tensor_index.cpp follows: True adds an axis of 1, False one of 0
    a = np.arange(6.0).reshape(2, 3)
    x = flow.tensor(a)
    for key in [True, False, (True, 0), (Ellipsis, True), (0, False), (slice(None), False, 1)]:
        assert tuple(x[key].shape) == a[key].shape
        np.testing.assert_array_equal(x[key].numpy(), a[key])
