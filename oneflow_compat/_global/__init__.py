"""The global-tensor API of OneFlow 0.5–0.9 (private: the public names are exported by `oneflow_compat`).

Importing any module of this package installs the Tensor methods built on ops (`tensor_methods.py`)."""
from oneflow_compat._global import tensor_methods  # noqa: F401
