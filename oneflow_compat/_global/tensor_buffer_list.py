"""`flow.tensor_buffer_to_list_of_tensors(tensor, out_shapes, out_dtypes)`: the arrays of a tensor buffer as a
list of tensors, buffer i as one of out_shapes[i] and out_dtypes[i] (OneFlow v0.9.0
python/oneflow/nn/modules/dataset.py, op `tensor_buffer_to_list_of_tensors_v2` of
oneflow/user/ops/tensor_buffer_ops.cpp). A global buffer must be broadcast (its outputs are broadcast too), as the
op's only SBP signature is B -> B.
"""
from oneflow_compat._global.dispatch import apply_op_list
from oneflow_compat._global.tensor import Tensor, as_dtype
from oneflow_compat.ir import dtypes


def tensor_buffer_to_list_of_tensors(tensor, out_shapes, out_dtypes, dynamic_out=False):
    if not isinstance(tensor, Tensor) or tensor.dtype is not dtypes.tensor_buffer:
        raise TypeError("tensor_buffer_to_list_of_tensors(): tensor must be a tensor buffer, got %s"
                        % (tensor.dtype if isinstance(tensor, Tensor) else type(tensor).__name__))
    shapes = [tuple(int(d) for d in s) for s in out_shapes]
    dts = [as_dtype(d) for d in out_dtypes]
    if len(shapes) != len(dts):
        raise ValueError("tensor_buffer_to_list_of_tensors(): %d out_shapes but %d out_dtypes"
                         % (len(shapes), len(dts)))
    return list(apply_op_list("tensor_buffer_to_list_of_tensors_v2", [tensor],
                              {"out_shapes": tuple(shapes), "out_dtypes": tuple(dts),
                               "dynamic_out": bool(dynamic_out)}, requires_grad=False))


def tensor_buffer_shapes_and_dtypes(self):
    """`Tensor._tensor_buffer_shapes_and_dtypes` (OneFlow 0.9, api/python/utils/tensor_utils.cpp): the shape
    (flow.Size) and dtype of each array a local tensor buffer holds, in order; other tensors are refused with its
    words."""
    from oneflow_compat._global.size import Size
    from oneflow_compat._global.tensor import dtype_of_numpy

    if self.dtype is not dtypes.tensor_buffer:
        raise RuntimeError("tensor buffer supported only")
    if self.is_global:
        raise RuntimeError("_tensor_buffer_shapes_and_dtypes: local tensors only, got a global tensor")
    arrays = list(self._value.pieces[0].ravel())
    return [Size(a.shape) for a in arrays], [dtype_of_numpy(a.dtype) for a in arrays]
