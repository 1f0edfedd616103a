"""A local tensor copied to another device (type or index), differentiably: `tensor.to("cuda")`, `.cpu()`, and the 0-d CPU
operand OneFlow 0.9's binary functors move onto the other operand's device (`dispatch.py`).

OneFlow 0.9 moves with its `copy` op, whose gradient is the incoming gradient copied back to the source device
(functional To -> Copy; `copy_backward` in core/autograd/gradient_funcs/copy.cpp @ v0.9.0): the moved tensor is not
a leaf, its history reaches the source, whose gradient accumulates on its own device. Under no_grad, or from a
tensor that requires no gradient, the copy has no history (and requires no gradient)."""
from oneflow_compat.backend import devices
from oneflow_compat.runtime import autograd, global_eager
from oneflow_compat._global import creation, device_keys


def moved(t, kind):
    """Local tensor `t` copied to device `kind` ("cpu" / "cuda" / "cuda:1": a device key, `device_keys.py`), its
    dtype kept."""
    out = creation.local_tensor(t, dtype=t.dtype, device=kind)
    if t.requires_grad_flag and autograd.is_grad_enabled():
        src = t._value
        back = t._device

        def copy_backward(dys):
            dy = dys[0]
            with device_keys.current(back):  # (the source's own GPU)
                pieces = [global_eager.to_device(devices.to_host(p), src.placement) for p in dy.pieces]
            return [global_eager.Value(src.meta, src.placement, src.sbp, pieces)]

        node = autograd.FunctionNode("copy_backward", [t._edge()], copy_backward)
        node.backward_tensors = lambda dys: [moved(dys[0], back)]  # create_graph=True: the move recorded
        out.requires_grad_flag, out.grad_fn = True, node
    return out
