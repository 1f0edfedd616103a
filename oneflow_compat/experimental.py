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


# --- OneFlow v0.4.0's eager module API: `import oneflow.experimental as flow` (issue: experimental-v04) ------------
# v0.4.0 exported under `oneflow.experimental` the `@experimental_api` names (bound from the table of
# _global/experimental_v04.py: the global-tensor functions, adapted where v0.4.0 differs) and every untagged
# `oneflow_export` name (oneflow/python/oneflow_export.py@v0.4.0 put those under both `oneflow.X` and
# `oneflow.experimental.X`): a name not bound here resolves as the package's own `flow.X` (module __getattr__ below).
# `nn`, `optim`, `optim.lr_scheduler`, `tmp` and `nn.image` are namespaces of their own whose other names fall back
# to the package's, registered as modules too (`import oneflow.experimental.nn as nn`).
import sys as _sys  # noqa: E402
import types as _types  # noqa: E402
from importlib import machinery as _machinery  # noqa: E402

from oneflow_compat._global import experimental_v04 as _v04  # noqa: E402
from oneflow_compat import nn as _base_nn, optim as _base_optim  # noqa: E402

globals().update(_v04.FUNCTIONS)


# `import oneflow.experimental.nn as nn` (a v0.4.0 test does): this module answers submodule imports (an empty
# search path: its submodules are the namespaces registered below, with a spec the `oneflow` alias hook reads)
__path__ = []


def _register(module):
    module.__spec__ = _machinery.ModuleSpec(module.__name__, None, is_package=True)
    module.__path__ = []
    _sys.modules[module.__name__] = module


class _Overlay(_types.ModuleType):
    """A namespace of v0.4.0's names whose other attributes are those of `base` (a module of the global API)."""

    def __init__(self, name, base, names):
        super().__init__(name, "OneFlow v0.4.0's `%s` (the global API's `%s` beside v0.4.0's own names)"
                         % (name.replace("oneflow_compat", "oneflow"), base.__name__.replace("oneflow_compat", "oneflow")))
        self._base = base
        self.__dict__.update(names)
        _register(self)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._base, name)

    def __dir__(self):
        return sorted(set(self.__dict__) | set(dir(self._base)))


nn = _Overlay(__name__ + ".nn", _base_nn, _v04.NN)
nn.image = _Overlay(__name__ + ".nn.image", _base_nn.image, _v04.NN_IMAGE)
optim = _Overlay(__name__ + ".optim", _base_optim, _v04.OPTIM)
optim.lr_scheduler = _Overlay(__name__ + ".optim.lr_scheduler", _base_optim.lr_scheduler, _v04.LR_SCHEDULER)
tmp = _types.ModuleType(__name__ + ".tmp", "OneFlow v0.4.0's `flow.experimental.tmp`: functional data readers")
tmp.__dict__.update(_v04.TMP)
_register(tmp)


def __getattr__(name):
    # v0.4.0's untagged exports (`Tensor`, `device`, `nn`-free names, `unittest`, the dtypes, …): the package's own
    # (looked up in sys.modules: the package's __init__ imports this module, never the other way round)
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return getattr(_sys.modules["oneflow_compat"], name)
    except AttributeError:
        raise AttributeError("module 'oneflow.experimental' has no attribute '%s'" % name) from None
