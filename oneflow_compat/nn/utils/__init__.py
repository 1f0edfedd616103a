"""`oneflow.nn.utils` (OneFlow 0.9): gradient clipping, weight norm, parameters as one vector."""
from oneflow_compat.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_  # noqa: F401
from oneflow_compat.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from oneflow_compat.nn.utils.weight_norm import remove_weight_norm, weight_norm  # noqa: F401
# api-nn: packed sequences of the recurrent layers (`oneflow.nn.utils.rnn`)
from oneflow_compat.nn.utils import rnn  # noqa: F401,E402
