"""The GPU checks of a checkout, in stages that each fit in ten minutes, with a summary file.

On a GPU machine without network, where CuPy, mpi4py and pytest come with the system Python:

    python3 -m venv --system-site-packages .venv-gpu
    .venv-gpu/bin/pip install --no-index --no-deps -e .
    .venv-gpu/bin/python -m oneflow_compat.tools.gpu_check --stage env        # then parity, validate, suite, ...

Stages (default: all, in this order), each a child process under `--timeout` seconds (default 600):

* env       Python, numpy, CuPy, CUDA runtime and driver, the GPUs, mpi4py and the `mpiexec` beside Python, pytest;
            under ONEFLOW_COMPAT_DEVICE=gpu, whether CUDA is usable (and why not);
* parity    the kernel tests over numpy and CuPy, the Philox twin, the fake-device and device-switch tests;
* validate  every op's SBP signatures (`python -m oneflow_compat validate`: its kernels still run on the host);
* suite     the test suite but the multi-process tests;
* mpi       the multi-process tests (`mpiexec`, launcher, faults);
* bench     `python -m benchmarks --quick`.

Every stage runs with ONEFLOW_COMPAT_DEVICE set to `--device` (default gpu: every placement on the GPU). The
summary (`OUT/summary.json`, one entry per stage, updated by each run so stages can run one command at a time)
holds the status, the passed/failed/skipped counts, the seconds and the command; `OUT/<stage>.log` the output.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

STAGES = ("env", "parity", "validate", "suite", "mpi", "bench")
MPI_TESTS = ("test_agreement_mpi.py", "test_comm_mpi.py", "test_faults.py", "test_global_launch.py",
             "test_global_mpi.py", "test_mpi_abort_reporting.py", "test_mpi_failures.py", "test_mpi_training.py",
             "test_nn_ops_global_mpi.py", "test_engine_mpi.py", "test_global_2d_mpi.py")
# the model zoo's (issue 24): dynamic blobs across 2 MPI ranks
MPI_TESTS += ("test_zoo_hybrid_embedding_mpi.py",)
PARITY_TESTS = ("test_philox.py", "test_fake_gpu.py", "test_device_switch.py")
_COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)\b")


def repository_root():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def stage_command(stage, root, python=sys.executable, pytest_args=()):
    """The argv of a stage, run in `root` (the checkout)."""
    tests = os.path.join(root, "tests")
    pytest = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    if stage == "env":
        return [python, "-m", "oneflow_compat.tools.gpu_check", "--report-environment"]
    if stage == "parity":
        kernels = sorted(f for f in os.listdir(tests) if f.startswith("test_kernels_"))
        return pytest + [os.path.join(tests, f) for f in kernels + list(PARITY_TESTS)] + list(pytest_args)
    if stage == "validate":
        return [python, "-m", "oneflow_compat", "validate"]
    if stage == "suite":
        return pytest + [tests] + ["--ignore=" + os.path.join(tests, f) for f in MPI_TESTS] + list(pytest_args)
    if stage == "mpi":
        return pytest + [os.path.join(tests, f) for f in MPI_TESTS] + list(pytest_args)
    if stage == "bench":
        return [python, "-m", "benchmarks", "--quick"]
    raise ValueError("unknown stage %r (stages: %s)" % (stage, ", ".join(STAGES)))


def parse_counts(stage, output):
    """passed/failed/skipped of a stage's output: pytest's last summary line, the env report's PASS/FAIL/SKIP
    lines, validate's 'N checks, M failed'."""
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    if stage == "env":
        for line in output.splitlines():
            for word, key in (("PASS ", "passed"), ("FAIL ", "failed"), ("SKIP ", "skipped")):
                if line.startswith(word):
                    counts[key] += 1
        return counts
    if stage == "validate":
        found = re.findall(r"^(\d+) checks, (\d+) failed$", output, re.M)
        if found:
            total, failed = map(int, found[-1])
            counts.update(passed=total - failed, failed=failed)
        return counts
    summaries = [line for line in output.splitlines() if _COUNT.search(line) and " in " in line]
    if summaries:
        for n, word in _COUNT.findall(summaries[-1]):
            key = "failed" if word.startswith("error") else word if word in counts else None
            if key is not None:
                counts[key] += int(n)
    return counts


def run_stage(stage, root, out_dir, device, timeout, pytest_args=()):
    """Runs one stage; returns its summary entry."""
    command = stage_command(stage, root, pytest_args=pytest_args)
    env = dict(os.environ, ONEFLOW_COMPAT_DEVICE=device)
    log_path = os.path.join(out_dir, "%s.log" % stage)
    start = time.monotonic()
    with open(log_path, "w") as log:
        # its own process group: a stage past its time ends with everything it started (mpiexec and its ranks)
        child = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        try:
            code = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            code = None
    seconds = round(time.monotonic() - start, 1)
    with open(log_path) as f:
        output = f.read()
    if code is None:
        with open(log_path, "a") as f:
            f.write("\n[gpu_check] stage %s stopped after %g s\n" % (stage, timeout))
    counts = parse_counts(stage, output)
    status = "timeout" if code is None else "ok" if code == 0 and counts["failed"] == 0 else "failed"
    return dict(stage=stage, status=status, exit_code=code, seconds=seconds, device=device,
                command=" ".join(command), log=log_path, **counts)


def update_summary(path, entries):
    summary = {}
    if os.path.exists(path):
        with open(path) as f:
            summary = json.load(f)
    for entry in entries:
        summary[entry["stage"]] = entry
    with open(path, "w") as f:
        json.dump(summary, f, indent=2, sort_keys=True)
        f.write("\n")
    return summary


def format_summary(summary):
    rows = [("stage", "status", "passed", "failed", "skipped", "seconds")]
    rows += [(s, e["status"], str(e["passed"]), str(e["failed"]), str(e["skipped"]), "%.1f" % e["seconds"])
             for s, e in sorted(summary.items(), key=lambda item: STAGES.index(item[0]))]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


# --- the env stage's report (runs in the child process) --------------------------------------------------------
def _check(name, ok, detail):
    print("%s %s: %s" % ("PASS" if ok is True else "FAIL" if ok is False else "SKIP", name, detail), flush=True)


def report_environment():
    import platform

    import numpy

    from oneflow_compat.backend import devices

    mode = devices.mode()
    gpu = mode == "gpu"
    version = sys.version_info[:2]
    _check("python", version >= (3, 10) or not gpu, "%s (CuPy 14 needs >= 3.10)" % platform.python_version())
    numpy_version = tuple(int(p) for p in numpy.__version__.split(".")[:2])
    _check("numpy", (2, 0) <= numpy_version < (2, 6) or not gpu, "%s (CuPy 14 needs >= 2.0, < 2.6)"
           % numpy.__version__)
    if mode == "cpu":
        _check("cuda", None, "not probed under ONEFLOW_COMPAT_DEVICE=cpu")
    else:
        _report_cuda(devices, gpu)
    try:
        import mpi4py
        from mpi4py import MPI

        _check("mpi4py", True, "%s on %s" % (mpi4py.__version__, MPI.Get_library_version().splitlines()[0].strip()))
    except Exception as e:  # noqa: BLE001 (report whatever failed)
        _check("mpi4py", False, "%s: %s" % (type(e).__name__, e))
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    _check("mpiexec", os.path.exists(mpiexec), mpiexec if os.path.exists(mpiexec) else
           "missing beside %s: the multi-process tests skip (link the system's: ln -s \"$(command -v mpiexec)\" %s)"
           % (sys.executable, mpiexec))
    try:
        import pytest

        _check("pytest", True, pytest.__version__)
    except ImportError as e:
        _check("pytest", False, str(e))


def _report_cuda(devices, required):
    usable = devices.cuda_usable()
    _check("cuda", usable if required else (True if usable else None),
           "usable" if usable else devices.unusable_reason())
    if not usable:
        return
    import cupy

    runtime = cupy.cuda.runtime
    _check("cupy", True, "%s, CUDA runtime %d, driver %d" % (cupy.__version__, runtime.runtimeGetVersion(),
                                                              runtime.driverGetVersion()))
    for index in range(runtime.getDeviceCount()):
        props = runtime.getDeviceProperties(index)
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        _check("gpu %d" % index, True, "%s, %.1f GiB, compute capability %d.%d" % (
            name, props["totalGlobalMem"] / 2 ** 30, props["major"], props["minor"]))


def build_parser(prog="python -m oneflow_compat.tools.gpu_check"):
    return add_arguments(argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0]))


def add_arguments(ap):
    """The command line of `oneflow-compat gpu-check` and `python -m oneflow_compat.tools.gpu_check`."""
    ap.add_argument("--stage", nargs="*", choices=STAGES, default=list(STAGES), help="stages to run (default: all)")
    ap.add_argument("--device", choices=("gpu", "auto", "cpu"), default="gpu",
                    help="ONEFLOW_COMPAT_DEVICE for the stages (default gpu)")
    ap.add_argument("--out", default="gpu_check", help="folder of summary.json and the stage logs")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per stage (default 600)")
    ap.add_argument("--pytest-args", nargs=argparse.REMAINDER, default=[],
                    help="extra pytest arguments of the pytest stages (everything after it)")
    ap.add_argument("--report-environment", action="store_true", help=argparse.SUPPRESS)
    return ap


def main(argv=None):
    return run(build_parser().parse_args(argv))


def run(a):
    if a.report_environment:
        report_environment()
        return 0
    os.makedirs(a.out, exist_ok=True)
    root = repository_root()
    entries = []
    for stage in a.stage:
        print("[gpu_check] %s ..." % stage, file=sys.stderr, flush=True)
        entries.append(run_stage(stage, root, os.path.abspath(a.out), a.device, a.timeout, a.pytest_args))
    summary = update_summary(os.path.join(a.out, "summary.json"), entries)
    print(format_summary(summary))
    return 0 if all(e["status"] == "ok" for e in entries) else 1


if __name__ == "__main__":
    sys.exit(main())
