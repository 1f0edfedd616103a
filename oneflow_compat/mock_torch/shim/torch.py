"""`import torch` where `python3 -m oneflow.mock_torch` put this folder on PYTHONPATH: the module becomes the oneflow
package (`sys.modules["torch"]`, which has the package's path), and `torch.<x>` its modules."""
import sys

from oneflow_compat.mock_torch import _shim_import

sys.modules[__name__] = _shim_import()
