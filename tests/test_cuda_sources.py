"""Every CUDA source of the project compiles for sm_90 (H100/H200) through NVRTC, on any machine where NVRTC is
installed (no GPU needed: `pip install cupy-cuda13x nvidia-cuda-nvrtc`, in the `test` extra); and no CUDA source
escapes this test: the package builds raw kernels only through `kernels/cuda_source.py`'s CudaModule, whose every
instance is compiled here, and the C signatures the launcher checks arguments against are parsed from each source."""
import importlib
import os
import pkgutil
import re

import pytest

import cubin_elf
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
        # the emulation's rules (module docstring): no shared memory, no barriers, no float atomics, except in a
        # cooperative module (a block of a fixed size reducing together; emulated with threads at a barrier)
        if module.block is None:
            assert "__shared__" not in module.code and "__syncthreads" not in module.code, module.name
        else:
            assert "__shared__" in module.code and "__syncthreads" in module.code, module.name
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


def ptxas_report(text):
    """{function: {"registers": n, "stack": bytes, "spill stores": bytes, "spill loads": bytes}} of ptxas's
    verbose report, whichever way the block of a function is headed: "Compiling entry function 'f' for 'sm_90'"
    and/or "Function properties for f" (the figures' lines follow either; versions print one or both), lines in
    any order after the header, with or without the "ptxas info    :" / "ptxas         ." prefixes."""
    report, current = {}, None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line) or re.search(r"Function properties for (\w+)", line)
        if m:
            current = m.group(1)
            report.setdefault(current, {})
            continue
        if current is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            report[current].update(zip(("stack", "spill stores", "spill loads"), map(int, m.groups())))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            report[current]["registers"] = int(m.group(1))
    return report


def test_the_ptxas_report_is_read_in_either_wording():
    nvrtc_13 = ("ptxas info    : 0 bytes gmem\n"
                "ptxas info    : Compiling entry function 'k_a' for 'sm_90'\n"
                "ptxas info    : Function properties for k_a\n"
                "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                "ptxas info    : Used 30 registers, used 0 barriers\n"
                "ptxas info    : Compile time = 71.981 ms\n")
    entry_only = ("ptxas info    : Compiling entry function 'k_b' for 'sm_90'\n"
                  "ptxas info    : Used 12 registers, 8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n")
    assert ptxas_report(nvrtc_13 + entry_only) == {
        "k_a": {"registers": 30, "stack": 0, "spill stores": 0, "spill loads": 0},
        "k_b": {"registers": 12, "stack": 8, "spill stores": 4, "spill loads": 4}}
    assert ptxas_report("") == {}


@pytest.mark.parametrize("name", sorted(cuda_source.MODULES))
def test_module_compiles_for_sm90_through_nvrtc(name, capfd):
    """Whatever modules exist (a new one included) compile; every function is an entry of the cubin, with a
    register count and no stack frame (no register spills). The figures come from the cubin itself
    (tests/cubin_elf.py); ptxas's verbose report, where NVRTC hands it back (in the program log, or printed to the
    process's stdout/stderr), must agree with them."""
    compiler = _nvrtc()
    module = cuda_source.MODULES[name]
    program = compiler._NVRTCProgram(module.code, name + ".cu", method="cubin")
    log = []

    class _Log:
        def write(self, text):
            log.append(text)

    capfd.readouterr()
    cubin, _ = program.compile(module.options + ("-arch=" + ARCH, "--ptxas-options=-v"), _Log())
    printed = capfd.readouterr()
    assert isinstance(cubin, bytes) and cubin[:4] == b"\x7fELF", "NVRTC did not return a cubin"
    entries = cubin_elf.kernels(cubin)
    assert set(entries) == set(module.functions), "the cubin's entry functions %s, the module declares %s" % (
        sorted(entries), sorted(module.functions))
    assert all(k.registers for k in entries.values()), entries
    assert not [k for k in entries.values() if k.frame != 0], "a stack frame (register spills): %s" % entries
    text = "".join(log) + printed.out + printed.err
    report = ptxas_report(text)
    if report:  # NVRTC handed ptxas's report back: it names the same functions, with the cubin's figures
        assert set(report) == set(module.functions), "ptxas -v reported %s, the module has %s" % (
            sorted(report), sorted(module.functions))
        for f, figures in report.items():
            assert figures.get("registers") in (None, entries[f].registers), (f, figures, entries[f])
            assert not figures.get("spill stores") and not figures.get("spill loads"), (f, figures)
    print(text or "(NVRTC gave no ptxas report; the cubin's figures: %s)" % sorted(entries.values(), key=str))


def test_the_cubin_reader_sees_spills_and_only_entry_functions():
    """The cubin check can fail: a kernel squeezed into 24 registers (`--maxrregcount`) with 64 live values spills
    to a stack frame, and a `__device__` helper is no entry of the cubin."""
    compiler = _nvrtc()
    code = ('extern "C" __global__ void squeezed(float* x, int k) { float a[64]; for (int i = 0; i < 64; ++i) '
            'a[i] = x[i]; a[k & 63] = 7; x[0] = a[(k >> 6) & 63]; }\n'
            '__device__ void helper(float* x) { x[0] = 1; }\n'
            'extern "C" __global__ void plain(float* x) { x[threadIdx.x] *= 2; }\n')
    program = compiler._NVRTCProgram(code, "squeezed.cu", method="cubin")
    log = []
    cubin, _ = program.compile(("-arch=" + ARCH, "--ptxas-options=-v", "--maxrregcount=16"),
                               type("L", (), {"write": log.append})())
    entries = cubin_elf.kernels(cubin)
    assert sorted(entries) == ["plain", "squeezed"]
    assert entries["squeezed"].frame > 0 and entries["plain"].frame == 0, entries
    report = ptxas_report("".join(log))
    if report:  # (where NVRTC reports) the same figures
        assert report["squeezed"]["stack"] == entries["squeezed"].frame and report["squeezed"]["spill stores"] > 0
        assert report["plain"]["registers"] == entries["plain"].registers


def test_a_cooperative_module_is_launched_with_its_block_size_only():
    # its reductions are written for exactly `block` threads per output (a fixed tree over that many lanes)
    import numpy as np
    import strict_device
    from oneflow_compat.kernels import cuda_optim

    assert cuda_optim.REDUCE.block == cuda_optim.LANES and cuda_optim.MODULE.block is None
    dev = strict_device.module()
    x, out = dev.asarray(np.ones((3, 5), np.float32)), dev.asarray(np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="CUDA module optim_reduce is cooperative: row_sums_f32 must be launched "
                                         "with block=256, got 128"):
        cuda_optim.REDUCE.launch(dev, "row_sums_f32", 3 * 128, x, out, 3, 5, block=128)
    cuda_optim.REDUCE.launch(dev, "row_sums_f32", 3 * 256, x, out, 3, 5, block=256)
    np.testing.assert_array_equal(out.get() if hasattr(out, "get") else np.asarray(out), [5, 5, 5])
