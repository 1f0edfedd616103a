"""OneFlow 0.9's op type names where this project's registry names an op differently: autograd's `grad_fn` names
(`<op type>_backward`, `dispatch.py`) and nn.Graph's op names and debug lines (`graph_debug.py`) show them."""

# OneFlow's own op type where this project's registry names the op differently, for `grad_fn` names
# (`<op type>_backward`, OneFlow 0.9 `op_interpreter.cpp`; views: `tensor_methods.cpp`)
ONEFLOW_OP_NAMES = {
    "subtract": "broadcast_sub", "multiply": "broadcast_mul", "divide": "broadcast_div",
    "maximum": "broadcast_maximum", "minimum": "broadcast_minimum",
    "reshape": "view::reshape", "expand_dims": "view::unsqueeze", "squeeze": "view::squeeze",
    "slice": "view::slice", "transpose": "view::transpose", "flatten": "view::reshape",
    "scalar_rsub": "scalar_add", "scalar_rdiv": "scalar_div", "clip_by_value": "clip_by_scalar",
    "sparse_softmax_cross_entropy": "sparse_softmax_cross_entropy_ms", "batch_gather": "dim_gather",
}
# nn ops family: the pools' OneFlow 0.9 op types (OneFlowUserOps.td: max_pool_2d, avg_pool_2d, ...)
ONEFLOW_OP_NAMES.update({"%s_pool%dd" % (kind, n): "%s_pool_%dd" % (kind, n) for kind in ("max", "avg")
                          for n in (1, 2, 3)})


def oneflow_op_type(op_type):
    """OneFlow 0.9's op type name of a registered op (the name nn.Graph's op names and debug lines show)."""
    name = ONEFLOW_OP_NAMES.get(op_type, op_type)
    return name[len("view::"):] if name.startswith("view::") else name
