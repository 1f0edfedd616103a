"""Makes `import oneflow` (and every `oneflow.x.y`) resolve to `oneflow_compat` (`oneflow_compat.x.y`).

Two strengths:
* `install_fallback()` — run at interpreter start by the installed `oneflow_compat-alias.pth`: `oneflow` is
  aliased only when no real OneFlow is importable, so a real OneFlow in the same environment still wins for
  plain `python script.py`.
* `install_override()` — used by `python -m oneflow_compat script.py`: the script gets oneflow_compat even
  where a real OneFlow is installed.
"""
import importlib
import importlib.machinery
import importlib.abc
import importlib.util
import sys

_SRC, _DST = "oneflow", "oneflow_compat"


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self.real_spec, self.real_loader = module.__spec__, getattr(module, "__loader__", None)
        return module

    def get_code(self, fullname):
        # `python -m oneflow.x.y` (runpy) runs the real module's code as __main__
        return importlib.util.find_spec(self.target).loader.get_code(self.target)

    def exec_module(self, module):
        # The module already ran under its real name; the import machinery has just stamped the alias spec on
        # it, which would make `importlib.reload` and pickling see the wrong name: put the real one back.
        module.__spec__, module.__loader__ = self.real_spec, self.real_loader


class _AliasFinder(importlib.abc.MetaPathFinder):
    # It always sits first in sys.meta_path (submodules must not be found a second time, under the alias name,
    # through the compat package's __path__); in fallback mode it steps aside when a real OneFlow exists.
    override = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname == _SRC:
            if not self.override and importlib.machinery.PathFinder.find_spec(_SRC) is not None:
                return None
        elif not fullname.startswith(_SRC + "."):
            return None
        elif getattr(sys.modules.get(_SRC), "__name__", None) != _DST:
            return None
        real = _DST + fullname[len(_SRC):]
        real_spec = importlib.util.find_spec(real)
        if real_spec is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(real), origin=real_spec.origin,
                                               is_package=real_spec.submodule_search_locations is not None)


_FINDER = _AliasFinder()


def install_fallback():
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def install_override():
    _FINDER.override = True
    install_fallback()
    for name in [n for n in sys.modules if n == _SRC or n.startswith(_SRC + ".")]:
        if not getattr(sys.modules[name], "__name__", "").startswith(_DST):
            del sys.modules[name]
