"""`oneflow.nn.parameter`: the module OneFlow 0.9 defines `Parameter` in (python/oneflow/nn/parameter.py at v0.9.0;
`from oneflow.nn.parameter import Parameter` is how its optimizer tests import it)."""
from oneflow_compat._global.modules import Parameter  # noqa: F401
