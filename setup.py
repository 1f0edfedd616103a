"""Only here to install `oneflow_compat-alias.pth` next to the packages (setup.cfg holds the metadata).

The .pth line appends a finder to `sys.meta_path` that answers `import oneflow` with oneflow_compat *only when
no real OneFlow is importable* (it sits after the normal path finders)."""
import os

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "oneflow_compat-alias.pth"


class BuildPyWithAlias(build_py):
    def run(self):
        super().run()
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "oneflow_compat_alias.pth")
        self.copy_file(src, os.path.join(self.build_lib, PTH), preserve_mode=0)

    def get_outputs(self, include_bytecode=1):
        return super().get_outputs(include_bytecode) + [os.path.join(self.build_lib, PTH)]


cmdclass = {"build_py": BuildPyWithAlias}

try:  # `pip install -e .` builds an "editable wheel" that never sees build_py's files: add the .pth there too.
    from setuptools.command.editable_wheel import editable_wheel

    class EditableWheelWithAlias(editable_wheel):
        def _select_strategy(self, *args, **kwargs):
            strategy = super()._select_strategy(*args, **kwargs)
            src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "oneflow_compat_alias.pth")

            class WithAlias:
                def __call__(self, wheel, files, mapping):
                    strategy(wheel, files, mapping)
                    with open(src, "rb") as f:
                        wheel.writestr(PTH, f.read())

                def __enter__(self):
                    strategy.__enter__()
                    return self

                def __exit__(self, *exc):
                    return strategy.__exit__(*exc)

            return WithAlias()

    cmdclass["editable_wheel"] = EditableWheelWithAlias
except ImportError:  # older setuptools: editable installs then need `python -m oneflow_compat script.py`
    pass

setup(cmdclass=cmdclass)
