"""`oneflow.utils.checkpoint.checkpoint(function, *args)` (OneFlow 0.9): activation checkpointing in eager code.

The forward runs `function(*args)` without recording it (its intermediate values are not kept); one node stands
for it in the autograd graph. Its backward runs `function` again on the saved inputs, now recorded, from the same
random-number state (so dropout draws the masks it drew the first time; OneFlow 0.9 does not restore it yet), and
backpropagates the outputs' gradients through that recomputation: the inputs get their gradients through the node,
the parameters `function` uses get theirs as leaves of the recomputation. Inside an `nn.Graph` build the function
is simply called (a graph's modules take `activation_checkpointing` instead).
"""
from oneflow_compat._global import lazy, rng_state
from oneflow_compat._global.dispatch import backward as run_backward
from oneflow_compat._global.tensor import Tensor, wrap
from oneflow_compat.runtime import autograd

__all__ = ["checkpoint"]


def checkpoint(function, *args):
    if lazy.tracer_active() or not autograd.is_grad_enabled():
        return function(*args)
    state = rng_state.get_rng_state()
    with autograd.no_grad():
        outputs = function(*args)
    single = isinstance(outputs, Tensor)
    outs = [outputs] if single else list(outputs)
    wanting = [a for a in args if isinstance(a, Tensor) and a.requires_grad]  # inputs that want their gradient

    def recompute(dys):
        now = rng_state.get_rng_state()
        rng_state.set_rng_state(state)
        try:
            inputs = [a.detach().requires_grad_(a.requires_grad) if isinstance(a, Tensor) else a for a in args]
            with autograd.enable_grad():
                again = function(*inputs)
        finally:
            rng_state.set_rng_state(now)
        again = [again] if isinstance(again, Tensor) else list(again)
        roots, grads = [], []
        for out, dy in zip(again, dys):
            if dy is not None and isinstance(out, Tensor) and out.requires_grad:
                roots.append(out)
                grads.append(wrap(dy, out._placement, out._device))
        if roots:
            run_backward(roots, grads)
        fresh = [t for t, a in zip(inputs, args) if isinstance(a, Tensor) and a.requires_grad]
        return [t.grad._value if t.grad is not None else None for t in fresh]

    def recompute_recorded(dys):
        """create_graph=True (_global/higher_order.py): `function` again on the inputs themselves (their history
        kept), recorded, from the same random-number state; the gradients then walk through that record."""
        now = rng_state.get_rng_state()
        rng_state.set_rng_state(state)
        try:
            with autograd.enable_grad():
                again = function(*args)
        finally:
            rng_state.set_rng_state(now)
        again = [again] if isinstance(again, Tensor) else list(again)
        return [(out._edge(), dy) for out, dy in zip(again, dys)
                if dy is not None and isinstance(out, Tensor) and out.requires_grad]

    node = autograd.FunctionNode("CheckpointFunctionBackward", [a._edge() for a in wanting], recompute,
                                 num_outputs=len(outs))
    node.recompute_recorded = recompute_recorded
    for k, out in enumerate(outs):
        if isinstance(out, Tensor) and out.dtype.is_floating:
            out.requires_grad_flag, out._node, out._out_index = True, node, k
    return outputs
