"""`flow.quantization`: quantization-aware training (ops in `ops/quantization_ops.py`; signatures, defaults and
variable names after OneFlow v0.3.4/v0.4.0 `oneflow/python/ops/quantize_ops.py`)."""
from oneflow_compat.ir import builder, dtypes
from oneflow_compat.ops.registry import apply, new_op


def _name(name, prefix, what):
    return name if name is not None else builder.current(what).job.unique_name(prefix)


def min_max_observer(input, quantization_bit=8, quantization_scheme="symmetric",  # noqa: A002
                     per_layer_quantization=True, name=None):
    """(scale, zero_point) from input's extremes: one pair (per layer) or one per row of axis 0 (per channel)."""
    scale, zero_point = apply("min_max_observer", [input], {
        "quantization_bit": int(quantization_bit), "quantization_scheme": quantization_scheme,
        "per_layer_quantization": bool(per_layer_quantization)},
        name=_name(name, "MinMaxObserver_", "flow.quantization.min_max_observer"))
    return scale, zero_point


def moving_average_min_max_observer(input, quantization_bit=8, quantization_scheme="symmetric",  # noqa: A002
                                    momentum=0.95, name=None):
    """(scale, zero_point) from moving averages of input's extremes, kept in the variables
    `<name>-moving_max`, `<name>-moving_min` and `<name>-current_train_step` (updated in train jobs only)."""
    from oneflow_compat import scope
    from oneflow_compat._api import job_desc, ops_api
    from oneflow_compat import initializer

    op_name = _name(name, "MovingAverageMinMaxObserver_", "flow.quantization.moving_average_min_max_observer")
    training = bool(job_desc.current_global_function_desc().IsTrainable())
    with scope.namespace(op_name):
        moving_max = ops_api.get_variable("moving_max", shape=(1,), dtype=input.dtype,
                                          initializer=initializer.zeros_initializer(input.dtype), trainable=False)
        moving_min = ops_api.get_variable("moving_min", shape=(1,), dtype=input.dtype,
                                          initializer=initializer.zeros_initializer(input.dtype), trainable=False)
        step = ops_api.get_variable("current_train_step", shape=(1,), dtype=dtypes.int64,
                                    initializer=initializer.zeros_initializer(dtypes.int64), trainable=False)
    attrs = {"quantization_bit": int(quantization_bit), "quantization_scheme": quantization_scheme}
    new_op("moving_average_min_max_observer", [input, step, moving_max, moving_min],
           dict(attrs, stop_update_after_iters=1, training=training, momentum=float(momentum)), name=op_name)
    scale, zero_point = apply("moving_average_min_max_observer_scale", [moving_max, moving_min], attrs,
                              name=op_name + "_scale")
    return scale, zero_point


moving_average_min_maxObserver = moving_average_min_max_observer  # noqa: N816 - OneFlow v0.3.4's spelling


def fake_quantization(input, scale, zero_point, quantization_bit=8, quantization_scheme="symmetric",  # noqa: A002
                      name=None):
    """input quantized with (scale, zero_point) and mapped back to floats; the gradient passes straight through."""
    return apply("fake_quantization", [input, scale, zero_point], {
        "quantization_bit": int(quantization_bit), "quantization_scheme": quantization_scheme},
        name=_name(name, "Fake_Quantization_", "flow.quantization.fake_quantization"))
