"""A checkout, an editable install and a wheel all import the same kernels: the top-level `kernels/` folder is
`oneflow_compat.kernels` in every layout, and a wheel carries it inside the package (never as a top-level
`kernels`, which would clash with the unrelated PyPI package of that name).

The wheel is built offline from a copy of the checkout (`pip wheel --no-deps --no-build-isolation --no-index`) and
installed into a throw-away virtual environment, so nothing here touches the network or the checkout itself.
"""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest
from oneflow_compat.comm.environment import is_job_variable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROJECT_FILES = ["setup.py", "setup.cfg", "pyproject.toml", "README.md", "LICENSE", "oneflow_compat_alias.py",
                 "oneflow_compat_alias.pth"]
PROJECT_TREES = ["oneflow_compat", "kernels"]

# Prints where the package and one kernel module came from, and what `import oneflow` gives.
WHERE = ("import json, oneflow_compat, oneflow_compat.kernels.nn as nn, oneflow; "
         "print(json.dumps([oneflow_compat.__file__, nn.__file__, oneflow.__name__]))")


def _clean_env():
    # No PYTHONPATH (it would put some other copy first) and no MPI launcher variables.
    env = {k: v for k, v in os.environ.items()
           if k != "PYTHONPATH" and not is_job_variable(k, ("PMI_", "OMPI_", "MV2_", "PMIX_"))}
    env["PYTHONNOUSERSITE"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _python_files(top):
    for dirpath, dirnames, files in os.walk(top):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                yield os.path.relpath(os.path.join(dirpath, name), top).replace(os.sep, "/")


def _wheel_backend_missing():
    """Why a wheel cannot be built offline here, or None."""
    if importlib.util.find_spec("pip") is None:
        return "pip is not installed"
    if importlib.util.find_spec("setuptools") is None:
        return "setuptools is not installed (--no-build-isolation needs it)"
    from importlib.metadata import version  # not `import setuptools`: it would replace distutils in this process

    found = version("setuptools")
    bundles_bdist_wheel = tuple(int(p) for p in found.split(".")[:2] if p.isdigit()) >= (70, 1)
    if not bundles_bdist_wheel and importlib.util.find_spec("wheel") is None:
        return "setuptools %s has no bdist_wheel without the `wheel` package" % found
    return None


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    missing = _wheel_backend_missing()
    if missing:
        pytest.skip("cannot build a wheel offline: " + missing)
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    src.mkdir()
    for name in PROJECT_FILES:
        shutil.copy2(os.path.join(ROOT, name), src / name)
    for name in PROJECT_TREES:
        shutil.copytree(os.path.join(ROOT, name), src / name, ignore=shutil.ignore_patterns("__pycache__"))
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                             "-w", str(work / "dist"), str(src)],
                            cwd=str(work), env=_clean_env(), capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (built,) = (work / "dist").glob("oneflow_compat-*.whl")
    return built


@pytest.fixture(scope="module")
def wheel_venv(wheel, tmp_path_factory):
    """A fresh virtual environment with only the wheel installed (numpy and the other dependencies are taken
    from the test environment's site-packages through a plain path entry, so no download is needed)."""
    venv = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
                   check=True, env=_clean_env(), timeout=120)
    python = str(venv / "bin" / "python")
    result = subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
                             str(wheel)], env=_clean_env(), capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          env=_clean_env(), capture_output=True, text=True, check=True).stdout.strip()
    import numpy
    import typing_extensions

    # A plain directory line: the test environment's own .pth files (its editable install) are not processed.
    dependencies = {os.path.dirname(os.path.dirname(numpy.__file__)), os.path.dirname(typing_extensions.__file__)}
    with open(os.path.join(site, "zz_test_dependencies.pth"), "w") as f:
        f.write("".join(d + "\n" for d in sorted(dependencies)))
    return python, site


def _where(python, cwd):
    result = subprocess.run([python, "-c", WHERE], cwd=cwd, env=_clean_env(), capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    package, kernel, alias = json.loads(result.stdout.strip().splitlines()[-1])
    return os.path.realpath(package), os.path.realpath(kernel), alias


def test_wheel_holds_the_kernels_inside_the_package(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = next(archive.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    assert not [n for n in names if n.startswith("kernels/")]
    expected = {"oneflow_compat/" + p for p in _python_files(os.path.join(ROOT, "oneflow_compat"))}
    expected |= {"oneflow_compat/kernels/" + p for p in _python_files(os.path.join(ROOT, "kernels"))}
    assert "oneflow_compat/kernels/nn.py" in expected
    assert sorted(expected - names) == []  # every module of the checkout, sub-packages included
    assert {"oneflow_compat_alias.py", "oneflow_compat-alias.pth"} <= names
    assert [n for n in names if n.endswith(".dist-info/licenses/LICENSE") or n.endswith(".dist-info/LICENSE")]
    assert "Apache-2.0" in metadata


def test_wheel_imports_its_own_kernels_away_from_the_checkout(wheel_venv, tmp_path):
    python, site = wheel_venv
    package, kernel, alias = _where(python, str(tmp_path))
    site = os.path.realpath(site)
    assert package == os.path.join(site, "oneflow_compat", "__init__.py")
    assert kernel == os.path.join(site, "oneflow_compat", "kernels", "nn.py")
    assert alias == "oneflow_compat"  # the wheel's .pth provides `import oneflow`


def test_checkout_root_imports_the_checkout_kernels_even_with_the_wheel_installed(wheel_venv):
    # Run from the checkout root, its `oneflow_compat/` comes first on sys.path (and has no kernels/ inside):
    # the package must take the checkout's kernels/, not fail and not mix in the wheel's.
    python, _ = wheel_venv
    package, kernel, _ = _where(python, ROOT)
    assert package == os.path.realpath(os.path.join(ROOT, "oneflow_compat", "__init__.py"))
    assert kernel == os.path.realpath(os.path.join(ROOT, "kernels", "nn.py"))


def test_this_checkout_uses_its_own_kernels():
    import oneflow_compat
    import oneflow_compat.kernels.nn as nn

    checkout_package = os.path.realpath(os.path.join(ROOT, "oneflow_compat"))
    if os.path.realpath(os.path.dirname(oneflow_compat.__file__)) != checkout_package:
        pytest.skip("the tests import an installed oneflow_compat, not this checkout")
    assert os.path.realpath(nn.__file__) == os.path.realpath(os.path.join(ROOT, "kernels", "nn.py"))


def test_kernels_location_tells_layouts_apart(tmp_path):
    from oneflow_compat.backend.kernels_location import checkout_kernels_dir

    def make(*paths):
        for p in paths:
            (tmp_path / p).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / p).write_text("")

    make("checkout/oneflow_compat/__init__.py", "checkout/kernels/__init__.py", "checkout/setup.cfg",
         "site/oneflow_compat/__init__.py", "site/oneflow_compat/kernels/__init__.py", "site/kernels/__init__.py",
         "other/oneflow_compat/__init__.py", "other/kernels/__init__.py")
    assert checkout_kernels_dir(str(tmp_path / "checkout" / "oneflow_compat")) == str(tmp_path / "checkout" / "kernels")
    assert checkout_kernels_dir(str(tmp_path / "site" / "oneflow_compat")) is None   # installed: its own kernels
    assert checkout_kernels_dir(str(tmp_path / "other" / "oneflow_compat")) is None  # not a checkout (no setup.cfg)
