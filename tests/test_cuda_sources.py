"""Every CUDA source of the project compiles for sm_90 (H100/H200) through NVRTC, on any machine where NVRTC is
installed (no GPU needed: `pip install cupy-cuda13x nvidia-cuda-nvrtc`, in the `test` extra); and no CUDA source
escapes this test: the package builds raw kernels only through `kernels/cuda_source.py`'s CudaModule, whose every
instance is compiled here, and the C signatures the launcher checks arguments against are parsed from each source."""
import importlib
import os
import pkgutil
import re

import pytest

import oneflow_compat
from oneflow_compat import kernels
from oneflow_compat.kernels import cuda_source

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE_DIRS = [os.path.join(ROOT, "oneflow_compat"), os.path.join(ROOT, "kernels")]
_BUILDS_CUDA = re.compile(r"\b(RawKernel|RawModule|ElementwiseKernel|ReductionKernel)\s*\(|\bcupy\.fuse\b|@fuse\b")
_DECLARES = re.compile(r"\bCudaModule\(\s*\"(\w+)\"")
ARCH = "sm_90"


def _sources():
    for folder in PACKAGE_DIRS:
        for dirpath, _, files in os.walk(folder):
            for f in files:
                if f.endswith(".py"):
                    path = os.path.join(dirpath, f)
                    with open(path) as fh:
                        yield os.path.relpath(path, ROOT), fh.read()


def _import_every_kernel_module():
    for info in pkgutil.iter_modules(kernels.__path__):
        importlib.import_module("oneflow_compat.kernels." + info.name)
    return oneflow_compat


def test_cuda_code_is_built_only_through_cuda_modules():
    offenders = []
    for path, text in _sources():
        if path == os.path.join("kernels", "cuda_source.py"):
            continue
        for m in _BUILDS_CUDA.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            offenders.append("%s:%d: %s" % (path, line, m.group(0)))
    assert not offenders, "CUDA code built outside kernels/cuda_source.CudaModule (it would escape the NVRTC " \
                          "compile test):\n" + "\n".join(offenders)


def test_every_declared_module_is_registered():
    _import_every_kernel_module()
    declared = sorted(name for _, text in _sources() for name in _DECLARES.findall(text))
    assert declared == sorted(cuda_source.MODULES)
    assert {"nn", "loss", "optim", "random"} <= set(cuda_source.MODULES)


def test_signatures_parse_and_every_function_has_its_twin():
    _import_every_kernel_module()
    for module in cuda_source.MODULES.values():
        for name, params in module.functions.items():
            assert callable(module.twins[name])
            assert params, name
        # the emulation's rules (module docstring): no shared memory, no barriers, no float atomics
        assert "__shared__" not in module.code and "__syncthreads" not in module.code, module.name
        assert not re.search(r"atomicAdd|atomicExch|atomicCAS", module.code), module.name


def test_a_bad_signature_is_refused():
    with pytest.raises(ValueError, match="parameter 'half\\* x' is not one of the types"):
        cuda_source.parse_functions('extern "C" __global__ void f(half* x, long long n) {}')
    with pytest.raises(ValueError, match="functions without a twin \\['f'\\]"):
        cuda_source.CudaModule("test-no-twin", 'extern "C" __global__ void f(float* x) {}', {})
    assert "test-no-twin" not in cuda_source.MODULES


def _nvrtc():
    try:
        from cupy.cuda import compiler, nvrtc

        nvrtc.getVersion()
    except Exception as e:  # noqa: BLE001 - CuPy or NVRTC missing, or unloadable: said in the skip
        pytest.skip("NVRTC is not available (%s: %s); pip install cupy-cuda13x nvidia-cuda-nvrtc" % (
            type(e).__name__, str(e)[:200]))
    return compiler


_import_every_kernel_module()  # every module declared, so that the compile test below is parametrized by all


@pytest.mark.parametrize("name", sorted(cuda_source.MODULES))
def test_module_compiles_for_sm90_through_nvrtc(name):
    """Whatever modules exist (a new one included) compile; ptxas reports no register spills."""
    compiler = _nvrtc()
    module = cuda_source.MODULES[name]
    program = compiler._NVRTCProgram(module.code, name + ".cu", method="cubin")
    log = []

    class _Log:
        def write(self, text):
            log.append(text)

    cubin, _ = program.compile(module.options + ("-arch=" + ARCH, "--ptxas-options=-v"), _Log())
    assert isinstance(cubin, bytes) and cubin[:4] == b"\x7fELF", "NVRTC did not return a cubin"
    text = "".join(log)
    for function in module.functions:
        assert function.encode() in cubin, "%s missing from the cubin" % function
    # ptxas's report (one "Function properties" block per function, its figures on the next line, after a
    # "ptxas ." prefix): no function spills registers to local memory
    spills = dict((name, (int(stores), int(loads))) for name, stores, loads in re.findall(
        r"Function properties for (\w+)\s*\n[^\n]*?(?:\d+) bytes stack frame, (\d+) bytes spill stores, "
        r"(\d+) bytes spill loads", text))
    assert set(spills) == set(module.functions), "ptxas -v reported %s, the module has %s" % (
        sorted(spills), sorted(module.functions))
    assert not {f: s for f, s in spills.items() if any(s)}, spills
    print(text)
