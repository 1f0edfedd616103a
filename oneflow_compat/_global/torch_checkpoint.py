"""`flow.load` of a file written by `torch.save` (OneFlow 0.9, python/oneflow/framework/check_point_v2.py
`load_from_pytorch_file`): when `path` is a FILE and `support_pytorch_format` is on (the default), torch reads it
(on the CPU) and every torch tensor in the loaded object - nested in dicts, lists and tuples, as a state dict is -
becomes a local oneflow tensor of the same values, moved to `map_location` when given (or broadcast from
`global_src_rank`). torch is imported only here: it is not a dependency of this package."""
import collections

from oneflow_compat._global.tensor import Tensor


def load_torch_file(path, place=None):
    """The object torch.save wrote at `path`, its torch tensors local oneflow tensors; `place(tensor)` (the
    placement rules of flow.load: map_location, global_src_rank) applied to each when given."""
    try:
        import torch
    except ImportError:
        raise ImportError("flow.load(%r): the file was written by torch.save (it is a file, not a folder written "
                          "by flow.save); reading it needs PyTorch installed" % (str(path),)) from None
    from oneflow_compat._global import creation

    def to_flow(x):
        if isinstance(x, torch.Tensor):
            x = x.detach().cpu()
            return creation.from_dlpack(x.contiguous())
        return x

    obj = _map_leaf(torch.load(str(path), map_location="cpu"), to_flow)
    if place is None:
        return obj
    return _map_leaf(obj, lambda t: place(t) if isinstance(t, Tensor) else t)


def _map_leaf(obj, fn):
    if isinstance(obj, collections.OrderedDict):
        return collections.OrderedDict((k, _map_leaf(v, fn)) for k, v in obj.items())
    if isinstance(obj, dict):
        return {k: _map_leaf(v, fn) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(_map_leaf(v, fn) for v in obj)
    return fn(obj)
