"""`oneflow.compatible.single_client.typing` (and every module below a legacy module, at any depth) is the module
`oneflow_compat.typing` itself: an import finder answers those names with the already loaded modules, so that
no legacy module ever runs a second time under a second name (its state — the default session, the registries —
would then exist twice)."""
import importlib
import importlib.abc
import importlib.util
import sys
import types

_TOP = "oneflow_compat"


class _LegacySubmodules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, prefix, names):
        self.prefix = prefix + "."  # "oneflow_compat.compatible.single_client."
        self.names = frozenset(names)  # the legacy modules it exposes: "typing", "nn", "optimizer", …

    def real_name(self, fullname):
        if not fullname.startswith(self.prefix):
            return None
        rest = fullname[len(self.prefix):]
        return _TOP + "." + rest if rest.split(".")[0] in self.names else None

    def find_spec(self, fullname, path=None, target=None):
        real = self.real_name(fullname)
        if real is None:
            return None
        try:
            module = importlib.import_module(real)
        except ModuleNotFoundError as e:
            if e.name == real:
                return None  # "No module named <the single_client name>", as for any missing module
            raise
        return importlib.util.spec_from_loader(fullname, self, is_package=hasattr(module, "__path__"))

    def create_module(self, spec):
        module = sys.modules[self.real_name(spec.name)]
        self.real_spec = module.__spec__
        return module

    def exec_module(self, module):
        # The module already ran under its own name; the import machinery has just stamped the alias spec on it,
        # which `importlib.reload` and pickling would then follow: put the real one back.
        module.__spec__ = self.real_spec


def install(prefix):
    """Answers `<prefix>.<legacy module>[.…]` imports; the legacy modules are the package's module attributes."""
    package = sys.modules[prefix]
    names = [n for n, v in vars(package).items()
             if isinstance(v, types.ModuleType) and v.__name__ == _TOP + "." + n]
    if not any(isinstance(f, _LegacySubmodules) and f.prefix == prefix + "." for f in sys.meta_path):
        sys.meta_path.insert(0, _LegacySubmodules(prefix, names))
