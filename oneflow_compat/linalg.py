"""`flow.linalg`: `matmul`, the same function as `flow.matmul` (OneFlow v0.3.4 `ops/linalg.py` exports both), and
OneFlow 0.9's linalg.rst names (docs/source/linalg.rst, python/oneflow/linalg.py at v0.9.0): `norm`,
`vector_norm`, `matrix_norm`, `diagonal` (dim1=-2, dim2=-1), `inv`, `cross` (dim=-1)."""
from oneflow_compat._api.ops_api import matmul  # noqa: F401
from oneflow_compat._global.products_extra import inv, matrix_norm, norm, vector_norm  # noqa: F401
from oneflow_compat._global.products_extra import linalg_cross as cross  # noqa: F401
from oneflow_compat._global.products_extra import linalg_diagonal as diagonal  # noqa: F401
