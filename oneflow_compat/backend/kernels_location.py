"""Where `oneflow_compat.kernels` comes from: one answer for a checkout, an editable install and a wheel.

The kernels live in the repository's top-level `kernels/` folder; setup.cfg installs that folder as
`oneflow_compat/kernels/` (a wheel, or `pip install .`). A checkout has no `oneflow_compat/kernels/`, and when
Python finds the checkout's `oneflow_compat/` first (running from the checkout root, even with a wheel installed)
nothing else would say where its kernels are. `attach_checkout_kernels` makes the package's sibling `kernels/`
its kernels sub-package, so the package and its kernels always come from the same tree.
"""
import importlib.util
import os
import sys

# Present next to the package only in a source tree: tells a checkout from an unpacked wheel that happens to sit
# beside some other `kernels/` folder.
_CHECKOUT_MARKER = "setup.cfg"


def checkout_kernels_dir(package_dir):
    """The sibling `kernels/` folder when `package_dir` is the package inside a checkout, else None (installed
    layouts carry their own `kernels/` inside the package)."""
    if os.path.isfile(os.path.join(package_dir, "kernels", "__init__.py")):
        return None
    root = os.path.dirname(os.path.abspath(package_dir))
    kernels = os.path.join(root, "kernels")
    if os.path.isfile(os.path.join(kernels, "__init__.py")) and os.path.isfile(os.path.join(root, _CHECKOUT_MARKER)):
        return kernels
    return None


def attach_checkout_kernels(package_name, package_file):
    """Register `<package_name>.kernels` from the checkout's `kernels/` folder when the package (whose
    `__init__.py` is `package_file`) was imported from a checkout; returns that module, or None for installed
    layouts. Call it from the package's `__init__`, before anything imports a kernel.

    Registering the sub-package itself (rather than adding the repository root to the package's `__path__`)
    keeps the checkout's other folders (tests, examples, setup.py) from becoming importable as sub-modules.
    """
    name = package_name + ".kernels"
    if name in sys.modules:
        return sys.modules[name]
    kernels = checkout_kernels_dir(os.path.dirname(os.path.abspath(package_file)))
    if kernels is None:
        return None
    spec = importlib.util.spec_from_file_location(name, os.path.join(kernels, "__init__.py"),
                                                  submodule_search_locations=[kernels])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    package = sys.modules.get(package_name)
    if package is not None:
        package.kernels = module
    return module
