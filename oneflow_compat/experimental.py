"""`flow.experimental`: OneFlow v0.3.4/v0.4.0's experimental legacy names — logical slices, assignment, unique /
indexed-slices reductions, reading and writing variables by name, the SSP variable proxy, square_sum, the dynamic
binary split/concat pair, typing checks, name_scope; `custom_op_module` is refused (it compiles C++ ops)."""
from oneflow_compat.custom_ops import CustomOpModule as custom_op_module  # noqa: F401
from oneflow_compat._api.legacy_array_api import (  # noqa: F401
    eager_assign_121, logical_slice, logical_slice_assign)
from oneflow_compat._api.legacy_misc import enable_typing_check, name_scope  # noqa: F401,E402


class scope:  # noqa: N801 - OneFlow's namespace flow.experimental.scope
    from oneflow_compat._api.legacy_misc import scope_config as config  # noqa: F401
from oneflow_compat._api.experimental_api import (  # noqa: F401,E402
    dynamic_binary_concat, dynamic_binary_split, get_interface_blob_value, indexed_slices_reduce_sum,
    set_interface_blob_value, square_sum, ssp_variable_proxy, unique_with_counts)

# v0.4.0: OneFlow's JobSet protobuf of the compiled jobs (refused, _api/refusals.py)
from oneflow_compat._api.refusals import INTERNAL as _INTERNAL, refused as _refused  # noqa: E402

get_job_set = _refused("experimental.get_job_set", _INTERNAL)
