"""`oneflow.mock_torch` (OneFlow 0.9): `import torch` answered by this package, so that code written for PyTorch
(a third-party library included) runs on it unchanged.

* `mock_torch.enable()`: from here on `import torch` and `import torch.<x>` give this package and its modules
  (`torch.nn` is `oneflow.nn`); torch modules imported before are set aside, and the caller's global `torch`
  follows. As a context manager (`with mock_torch.enable(): ...`) the real torch comes back at the end of the
  block. `mock_torch.disable()` does the reverse.
* `eval $(python3 -m oneflow.mock_torch)` puts a `torch` module on PYTHONPATH that is this package, for whole
  programs; `eval $(python3 -m oneflow.mock_torch disable)` takes it off again.

A module that does not exist here is a ModuleNotFoundError naming both names; a missing attribute is the
package's AttributeError."""
import importlib
import importlib.abc
import importlib.util
import inspect
import sys

__all__ = ["enable", "disable"]

_OURS = __name__.rpartition(".")[0]  # the package that answers for torch


def _is_torch(name):
    return name == "torch" or name.startswith("torch.")


def _ours(name):
    return _OURS + name[len("torch"):]


class _Importer(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `torch.*` as this package's modules while active."""

    active = False

    def find_spec(self, fullname, path=None, target=None):
        if not self.active or not _is_torch(fullname):
            return None
        real = importlib.util.find_spec(_ours(fullname))
        if real is None:
            raise ModuleNotFoundError("%s is not provided: mock_torch answers it with %s, which does not exist"
                                      % (fullname, _ours(fullname)), name=fullname)
        return importlib.util.spec_from_loader(fullname, self, is_package=real.submodule_search_locations
                                               is not None)

    def create_module(self, spec):
        module = importlib.import_module(_ours(spec.name))
        self._real = (module.__spec__, getattr(module, "__loader__", None))
        return module

    def exec_module(self, module):
        # the module ran under its own name; the import machinery just stamped the torch spec on it: put it back
        module.__spec__, module.__loader__ = self._real


_IMPORTER = _Importer()
_SET_ASIDE = {}  # the real torch modules while the mock is on
_MOCKED = {}  # the mock's torch modules while it is off again (a later enable finds them)


def _swap(out, into, caller_globals):
    """The torch modules of sys.modules set aside into `out`, those of `into` put in their place; the caller's
    global `torch`, where it is the module set aside, follows (to the incoming one, or gone), as OneFlow's."""
    leaving = sys.modules.get("torch")
    for name in [n for n in sys.modules if _is_torch(n)]:
        out[name] = sys.modules.pop(name)
    for name, module in into.items():
        sys.modules[name] = module
    coming = into.get("torch")
    into.clear()
    if leaving is not None and caller_globals.get("torch") is leaving:
        if coming is None:
            del caller_globals["torch"]
        else:
            caller_globals["torch"] = coming


def _switch(on, caller_globals):
    if _IMPORTER.active == on:
        return False
    if _IMPORTER not in sys.meta_path:
        sys.meta_path.insert(0, _IMPORTER)
    _swap(_SET_ASIDE if on else _MOCKED, _MOCKED if on else _SET_ASIDE, caller_globals)
    _IMPORTER.active = on
    return True


class _Scope:
    def __init__(self, on):
        self._globals = inspect.currentframe().f_back.f_back.f_globals
        self._changed = _switch(on, self._globals)
        self._on = on

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._changed:
            _switch(not self._on, self._globals)
        return False


class enable(_Scope):  # noqa: N801 - OneFlow's name
    def __init__(self):
        super().__init__(True)


class disable(_Scope):  # noqa: N801 - OneFlow's name
    def __init__(self):
        super().__init__(False)


def _shim_import():
    """What the `torch` package on PYTHONPATH (`python -m oneflow.mock_torch`) runs: the mock, on for good."""
    if _IMPORTER not in sys.meta_path:
        sys.meta_path.insert(0, _IMPORTER)
    _IMPORTER.active = True
    return importlib.import_module(_OURS)


def _shim_path():
    return __path__[0] + "/shim"


