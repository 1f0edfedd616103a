"""`oneflow.utils.tensor.from_torch` / `to_torch` (OneFlow 0.9): a local tensor and a torch tensor sharing one
memory, through DLPack (`flow.from_dlpack`, `flow.to_dlpack`), on the CPU or a GPU. A global tensor gives a CPU copy, as
OneFlow's. torch is imported when they are called: it is not a dependency of this package."""
from oneflow_compat._global.creation import from_dlpack
from oneflow_compat._global.tensor import Tensor

__all__ = ["from_torch", "to_torch"]


def from_torch(torch_tensor):
    """A oneflow tensor sharing `torch_tensor`'s memory."""
    import torch

    assert isinstance(torch_tensor, torch.Tensor)
    return from_dlpack(torch_tensor)


def to_torch(flow_tensor):
    """A torch tensor sharing the local `flow_tensor`'s memory; of a global tensor, a CPU copy of its (logical)
    value, with OneFlow 0.9's warning (python/oneflow/utils/tensor/from_or_to_torch_tensor.py)."""
    import torch

    assert isinstance(flow_tensor, Tensor)
    if flow_tensor.is_global:
        print("WARNING: `to_torch` received a global tensor. A PyTorch CPU tensor which is a copy of its data will "
              "be returned.")
        return torch.from_numpy(flow_tensor.numpy())
    return torch.from_dlpack(flow_tensor._value.pieces[0])
