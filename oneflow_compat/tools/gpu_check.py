"""The GPU check of a checkout: ONE run of at most 8 minutes on a GPU machine, stage after stage, and a summary.

Run it from the checkout's root with the machine's own Python (on the lent GPU machines `python3` is itself a venv
with CuPy, torch and pytest; a venv made from it would not see them), before anything is installed:

    python3 oneflow_compat/tools/gpu_check.py --out gpu_check          # (a file: it imports nothing of the package)

Installed, the same is `python -m oneflow_compat.tools.gpu_check` and `oneflow-compat gpu-check`.

Stages (default: every one but mpi and bench, in this order), each a child process under a time limit — its own
budget, cut to what is left of `--budget` seconds (default 470) for the whole run; a stage that cannot get 15 s is
skipped; every stage runs whatever happened before it:

* setup     offline install of the checkout into this Python: `pip install --no-index --no-deps
            --no-build-isolation -e .` (build isolation would fetch setuptools); where mpi4py finds no MPI library,
            the mpich wheel carried in `.whl/` (`pip download --no-deps --only-binary=:all: --platform
            manylinux_2_28_x86_64 -d .whl mpich==5.0.2`, 13 MB, git-ignored);
* env       Python, numpy, CuPy, CUDA runtime/driver, NVRTC, NCCL, the GPUs, mpi4py and mpiexec, torch, pytest,
            nvidia-smi and nvcc;
* models    the docs' MLP and LeNet train steps (batch 100) on the GPU against the CPU (the losses of 3 steps and
            every variable after the first, rtol 1e-5; dropout masks come from the same Philox bits; the variables
            after 3 steps reported), with and without a CUDA graph; milliseconds
            per step against torch CUDA eager (its batch resident on the GPU, and fed from the host each step as
            ours is, timed A B A B); kernel launches, host->device and device->host copies per step and the
            device time of each kernel by name, ours and torch's (torch's profiler over 5 steps: CUPTI sees CuPy's
            kernels); where the eager step's host time goes (cProfile: the top functions, and µs per step by
            category: launches, cuBLAS, CuPy reductions, allocations, uploads, downloads, runtime, ...);
* graph     the project's GEMMs (kernels/cuda_blas.py) captured and replayed for each layout the models use, CuPy's
            own cuBLAS in a capture (refused, noted), and the MLP and LeNet train steps captured over calls
            whose learning rate changes, against the CPU;
* nccl      NCCL behind the comm interface (oneflow_compat/comm/nccl_comm.py): a 1-rank communicator running every
            collective, the bootstrap over MPI on 1 and 2 ranks (2 ranks on one GPU: refused by NCCL, said so);
* parity    the CUDA kernels against numpy (tests/test_cuda_kernels.py on CuPy), every CUDA source compiled by
            NVRTC, the kernel tests over CuPy, the fake-device tests;
* validate  `validate --device gpu`: every op's signatures (on 2, 3, 4 devices and a 2x2 mesh) with the GPU's
            kernels against numpy, one op type at a time (a line each, validate.json after each);
* suite     the test suite on the GPU (ONEFLOW_COMPAT_DEVICE=gpu) but the multi-process tests, with the time left;
* mpi       the multi-process tests; bench: `python -m benchmarks --quick` (on request).

`--fake` is the dry run on a machine without a GPU: the GPU is the strict fake device of tests/strict_device.py
(CuPy's host/device rules on numpy, launches and synchronisations counted, a fake CUDA runtime with streams and
graphs), NCCL a fake communicator; no setup. It shows the run starts and finishes in time.

Everything lands in `--out`: `summary.json` (per stage: status, counts, seconds, the command, the log, and the
stage's own numbers), `summary.txt` (the table and the headline numbers a person reads first), `<stage>.log`,
`<stage>.json`.
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

STAGES = ("setup", "env", "models", "graph", "nccl", "parity", "validate", "suite", "mpi", "bench")
DEFAULT_STAGES = ("setup", "env", "models", "graph", "nccl", "parity", "validate", "suite")
BUDGETS = {"setup": 90, "env": 40, "models": 150, "graph": 60, "nccl": 60, "parity": 120, "validate": 75,
           "suite": 600, "mpi": 300, "bench": 300}
# the dry run's (--fake) own limits: the suite on the fake device is a sample (the whole of it takes a CPU machine
# far longer than a GPU one); the run shows every stage starting, finishing and reporting, well within the budget
FAKE_BUDGETS = {"suite": 60, "parity": 200}
MIN_STAGE_SECONDS = 15
MPI_TESTS = ("test_agreement_mpi.py", "test_comm_mpi.py", "test_faults.py", "test_global_launch.py",
             "test_global_mpi.py", "test_mpi_abort_reporting.py", "test_mpi_failures.py", "test_mpi_training.py",
             "test_nn_ops_global_mpi.py", "test_engine_mpi.py", "test_global_2d_mpi.py")
# the parity stage's files, most telling first (a stage stopped at its time limit still reports what ran)
PARITY_TESTS = ("test_cuda_sources.py", "test_cuda_kernels.py", "test_philox.py", "test_nccl_comm.py",
                "test_device_syncs.py", "test_fake_gpu.py", "test_gpu_step_budget.py", "test_cuda_graph.py",
                "test_device_switch.py")
FAKE_ENV = "GPU_CHECK_FAKE"
# the model zoo's (issue 24): dynamic blobs across 2 MPI ranks
MPI_TESTS += ("test_zoo_hybrid_embedding_mpi.py",)
# OneFlow 0.9's API reference, nn.Graph ZeRO and one_embedding over 2 MPI ranks
MPI_TESTS += ("test_api_shape_mpi.py", "test_api_gaps_mpi.py", "test_graph_zero_mpi.py", "test_one_embedding_mpi.py")
# gradients read inside nn.Graph.build (x.grad, weight.grad) on 2 MPI ranks
MPI_TESTS += ("test_graph_retain_grad_mpi.py",)
_COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)\b")
_SUMMARY = re.compile(r"^(=+ )?(\d+ \w+|no tests ran)[\w, ]* in [\d.]+s\b[^=]*( =+)?$")
_PROGRESS = re.compile(r"^[.FEsxX]+(\s+\[\s*\d+%\])?$")
_VERBOSE = re.compile(r"^(?:\[gw\d+\]\s+\[\s*\d+%\]\s+)?(?:(\S+::\S+)\s+)?(PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS)"
                      r"(?:\s+(\S+::\S+))?")


def repository_root():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def stage_command(stage, root, python=sys.executable, pytest_args=(), device="gpu", fake=False):
    """The argv of a stage, run in `root` (the checkout)."""
    tests = os.path.join(root, "tests")
    # -v: a line per test, so that a stage stopped at its time limit still says which tests ran and failed
    pytest = [python, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-rfE"]
    stages = [python, "-m", "oneflow_compat.tools.gpu_stages"]
    if stage == "setup":
        return [python, os.path.abspath(__file__), "--run-setup"]
    if stage == "env":
        return [python, "-m", "oneflow_compat.tools.gpu_check", "--report-environment"]
    if stage in ("models", "graph", "nccl"):
        return stages + [stage]
    if stage == "parity":
        kernels = sorted(f for f in os.listdir(tests) if f.startswith("test_kernels_"))
        files = [f for f in list(PARITY_TESTS) + kernels if os.path.exists(os.path.join(tests, f))]
        return pytest + [os.path.join(tests, f) for f in files] + list(pytest_args)
    if stage == "validate":  # (validate --device gpu, one op type at a time: see gpu_stages.stage_validate)
        return stages + ["validate"]
    if stage == "suite":
        plugin = ["-p", "strict_device"] if fake else []
        return pytest + plugin + ["--maxfail=300", tests] + \
            ["--ignore=" + os.path.join(tests, f) for f in MPI_TESTS] + list(pytest_args)
    if stage == "mpi":
        return pytest + [os.path.join(tests, f) for f in MPI_TESTS] + list(pytest_args)
    if stage == "bench":
        return [python, "-m", "benchmarks", "--quick"]
    raise ValueError("unknown stage %r (stages: %s)" % (stage, ", ".join(STAGES)))


def stage_environment(stage, root, device, fake):
    """The environment of a stage's process: the device switch, the seed both sides of a comparison share, and
    in a dry run the fake device (the pytest stages through the plugin, the others through GPU_CHECK_FAKE)."""
    env = dict(os.environ, ONEFLOW_COMPAT_DEVICE=device, ONEFLOW_COMPAT_SEED=os.environ.get("ONEFLOW_COMPAT_SEED",
                                                                                              "1234"),
               PYTHONUNBUFFERED="1")
    env.setdefault("CUPY_CACHE_DIR", os.path.join(root, ".cupy_cache"))
    # where mpi4py finds an Open MPI rather than the carried mpich, the machines run everything as root
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.setdefault("NCCL_DEBUG", "WARN")
    if fake:
        env[FAKE_ENV] = "1"
        tests = os.path.join(root, "tests")
        env["PYTHONPATH"] = os.pathsep.join([tests] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        if stage in ("suite", "parity", "mpi"):
            env["ONEFLOW_COMPAT_DEVICE"] = "cpu"  # the plugin puts the placements on the fake GPU itself
            env["STRICT_DEVICE_SYNCS"] = "allow"
    return env


def parse_counts(stage, output, stopped=False):
    """passed/failed/skipped of a stage's output: pytest's last summary line (or, for a run stopped at its time
    limit, its progress characters), the env report's PASS/FAIL/SKIP lines, validate's 'N checks, M failed', a
    stage's own `GPU_CHECK ok/failed` lines."""
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    if stage == "env":
        for line in output.splitlines():
            for word, key in (("PASS ", "passed"), ("FAIL ", "failed"), ("SKIP ", "skipped")):
                if line.startswith(word):
                    counts[key] += 1
        return counts
    if stage == "validate":
        found = re.findall(r"^(\d+) checks, (\d+) failed$", output, re.M)
        if not found:  # stopped before its total: the op types checked so far
            found = re.findall(r"^validate \S+: (\d+) checks, (\d+) failed", output, re.M)
        for total, failed in found[-1:] if found and re.search(r"^\d+ checks", output, re.M) else found:
            counts["passed"] += int(total) - int(failed)
            counts["failed"] += int(failed)
        return counts
    if stage in ("models", "graph", "nccl", "setup"):
        for line in output.splitlines():
            m = re.match(r"^GPU_CHECK (ok|failed|skipped) ", line)
            if m:
                counts[{"ok": "passed", "failed": "failed", "skipped": "skipped"}[m.group(1)]] += 1
        return counts
    # pytest's own last line ("==== 3 failed, 10 passed in 4.2s ====", without the rules under -q); a stage stopped
    # at its time limit has none of its own: a line like it there is a count some test printed (tests that run
    # pytest in a child process)
    summaries = [line for line in output.splitlines() if _SUMMARY.match(line.strip())]
    if summaries and not stopped:
        for n, word in _COUNT.findall(summaries[-1]):
            key = "failed" if word.startswith("error") else word if word in counts else None
            if key is not None:
                counts[key] += int(n)
        return counts
    verbose = {"PASSED": "passed", "XPASS": "passed", "FAILED": "failed", "ERROR": "failed", "SKIPPED": "skipped",
               "XFAIL": "skipped"}
    for line in output.splitlines():  # stopped before its summary: what the per-test or progress lines show
        line = line.strip()
        m = _VERBOSE.match(line)
        if m and (m.group(1) or m.group(3)):
            counts[verbose[m.group(2)]] += 1
        elif line and _PROGRESS.match(line):
            marks = line.split()[0]
            counts["passed"] += marks.count(".")
            counts["failed"] += marks.count("F") + marks.count("E")
            counts["skipped"] += marks.count("s") + marks.count("x")
    return counts


def _failures(output, limit=40):
    """The failed tests: pytest's short summary, or (a stage stopped before it) the per-test lines."""
    found = [line for line in output.splitlines() if line.startswith(("FAILED ", "ERROR "))]
    if not found:
        for line in output.splitlines():
            m = _VERBOSE.match(line.strip())
            if m and m.group(2) in ("FAILED", "ERROR") and (m.group(1) or m.group(3)):
                found.append("%s %s" % (m.group(2), m.group(1) or m.group(3)))
    return found[:limit]


def stage_status(stage, code, counts):
    """ok / failed / timeout, or partial: the suite takes the time left by design, so a suite stopped at its limit
    with tests passed and none failed is a partial pass (its counts say how far it came)."""
    if code is None:
        return "partial" if stage == "suite" and counts["failed"] == 0 and counts["passed"] else "timeout"
    return "ok" if code == 0 and counts["failed"] == 0 else "failed"


def run_stage(stage, root, out_dir, device, timeout, pytest_args=(), fake=False, python=sys.executable):
    """Runs one stage in its own process group (a stage past its time ends with everything it started: mpiexec
    and its ranks, pytest's workers); returns its summary entry."""
    command = stage_command(stage, root, python=python, pytest_args=pytest_args, device=device, fake=fake)
    if stage in ("models", "graph", "nccl", "validate") and command[1:3] == ["-m", "oneflow_compat.tools.gpu_stages"]:
        command = command + ["--out", out_dir]
    if stage == "env":
        command = command + ["--out", out_dir]
    env = stage_environment(stage, root, device, fake)
    log_path = os.path.join(out_dir, "%s.log" % stage)
    start = time.monotonic()
    with open(log_path, "w") as log:
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
    counts = parse_counts(stage, output, stopped=code is None)
    status = stage_status(stage, code, counts)
    entry = dict(stage=stage, status=status, exit_code=code, seconds=seconds, device=device, fake=fake,
                 command=" ".join(command), log=log_path, failures=_failures(output), **counts)
    results = os.path.join(out_dir, "%s.json" % stage)
    if os.path.exists(results):
        with open(results) as f:
            entry["results"] = json.load(f)
    return entry


def update_summary(path, entries):
    summary = {}
    if os.path.exists(path):
        with open(path) as f:
            summary = json.load(f)
    for entry in entries:
        summary[entry["stage"]] = entry
    with open(path, "w") as f:
        json.dump(summary, f, indent=2, sort_keys=True, default=str)
        f.write("\n")
    return summary


def format_summary(summary):
    rows = [("stage", "status", "passed", "failed", "skipped", "seconds")]
    rows += [(s, e["status"], str(e["passed"]), str(e["failed"]), str(e["skipped"]), "%.1f" % e["seconds"])
             for s, e in sorted(((s, e) for s, e in summary.items() if s in STAGES),
                                key=lambda item: STAGES.index(item[0]))]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def headline(summary):
    """The lines a person reads first: per model, GPU == CPU, ms per step against torch, launches and syncs."""
    lines = []
    env = summary.get("env", {}).get("results", {})
    shown = [k for k in ("gpu 0", "cupy", "first kernel", "nvrtc", "nccl", "torch", "mpi4py") if k in env]
    if shown:
        lines.append("env: " + "; ".join("%s %s" % (k, env[k]) for k in shown))
    models = summary.get("models", {}).get("results", {})
    for name in ("mlp", "lenet"):
        r = models.get(name)
        if not r:
            continue
        for key, label in (("gpu", "GPU"), ("gpu_graph", "GPU+graph")):
            g = r.get(key, {})
            if not g:
                continue
            parts = ["%s %s: matches CPU %s (max rel loss %.2g, weight after step 1 %.2g, after 3 %.2g)" % (
                name, label, g.get("matches_cpu"), g.get("max_rel_loss", float("nan")),
                g.get("max_rel_weight_step1", float("nan")), g.get("max_rel_weight", float("nan")))]
            if "ms" in g:
                parts.append("%.3f ms/step" % g["ms"])
            if g.get("replay_ms") is not None:
                parts.append("the graph's replay alone %.3f ms" % g["replay_ms"])
            if g.get("not_captured_because"):
                parts.append("not captured: %s" % "; ".join(g["not_captured_because"]))
            if r.get("torch_cuda_eager_ms"):
                parts.append("%.2fx torch eager (%.3f ms)" % (g.get("ms", 0) / r["torch_cuda_eager_ms"],
                                                              r["torch_cuda_eager_ms"]))
            if r.get("torch_cuda_eager_fed_ms"):  # torch uploading its batch each step, as this step does
                parts.append("%.2fx torch eager fed from the host (%.3f ms)" % (
                    g.get("ms", 0) / r["torch_cuda_eager_fed_ms"], r["torch_cuda_eager_fed_ms"]))
            if "per_step" in g:
                parts.append("per step: %s" % ", ".join("%s %s" % (k, v) for k, v in sorted(g["per_step"].items())))
            lines.append("; ".join(parts))
        if r.get("cpu_ms"):
            lines.append("%s CPU: %.3f ms/step" % (name, r["cpu_ms"]))
        lines += _where_the_time_goes(name, r)
    for stage in ("graph", "nccl"):
        res = summary.get(stage, {}).get("results", {})
        for k, v in sorted(res.items()):
            lines.append("%s %s: %s" % (stage, k, v))
    for stage, entry in sorted(((s, e) for s, e in summary.items() if s in STAGES),
                               key=lambda item: STAGES.index(item[0])):
        for f in entry.get("failures", [])[:10]:
            lines.append("%s: %s" % (stage, f))
    return lines


def _where_the_time_goes(name, r):
    """A model's host µs per step by category (cProfile's own times: inflated by the profiler, compare categories
    with each other) and its device µs per step by kernel against torch's (the longest first)."""
    lines = []
    prof = r.get("gpu_host_profile", {})
    if prof.get("by_category"):
        lines.append("%s GPU host us/step by category (profiled %.3f ms/step): %s" % (
            name, prof.get("profiled_ms_per_step", float("nan")),
            ", ".join("%s %.0f (%g calls)" % (c, us, calls) for c, us, calls in prof["by_category"])))
    for label, table in (("GPU", r.get("gpu", {}).get("by_kernel")), ("torch", r.get("torch_by_kernel"))):
        if table:
            lines.append("%s %s device us/step by kernel: %s" % (
                name, label, "; ".join("%s x%g %.1f" % (k, n, us) for k, n, us, _ in table[:15])))
    launches = r.get("gpu", {}).get("launches_by_kernel")
    if launches:
        lines.append("%s GPU launches/step by kernel: %s" % (name, ", ".join("%s %d" % tuple(kv) for kv in launches)))
    return lines


def write_text_summary(out_dir, summary, total):
    text = format_summary(summary) + "\n\n" + "\n".join(headline(summary)) + "\n\ntotal %.1f s\n" % total
    with open(os.path.join(out_dir, "summary.txt"), "w") as f:
        f.write(text)
    return text


# --- the setup stage (runs before the package is installed: stdlib only) -------------------------------------------
def _say(status, what, detail=""):
    print("GPU_CHECK %s %s%s" % (status, what, (": " + detail) if detail else ""), flush=True)


def importable(python, env=None):
    """Whether `python` imports the package (its kernels included) from outside the checkout."""
    done = subprocess.run([python, "-c", "import oneflow_compat.kernels.nn"], capture_output=True, text=True, cwd="/",
                          env=env)
    return done.returncode == 0


def link_farm(root, where):
    """The checkout made importable without installing it: `where/oneflow_compat` holds links to the package's
    entries and `kernels` (which setup.cfg maps into the package); returns `where` for PYTHONPATH. The fallback
    where the offline install fails (an old setuptools without bdist_wheel)."""
    package = os.path.join(where, "oneflow_compat")
    os.makedirs(package, exist_ok=True)
    for name in os.listdir(os.path.join(root, "oneflow_compat")):
        link = os.path.join(package, name)
        if not os.path.lexists(link):
            os.symlink(os.path.join(root, "oneflow_compat", name), link)
    link = os.path.join(package, "kernels")
    if not os.path.lexists(link):
        os.symlink(os.path.join(root, "kernels"), link)
    alias = os.path.join(where, "oneflow_compat_alias.py")
    if not os.path.lexists(alias):
        os.symlink(os.path.join(root, "oneflow_compat_alias.py"), alias)
    return where


def run_setup(root=None, python=sys.executable):
    """The offline install into this Python, and MPI from the carried wheel where mpi4py finds none."""
    root = root or repository_root()
    pip = [python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-build-isolation"]
    done = subprocess.run(pip + ["-e", root], capture_output=True, text=True)
    print(done.stdout + done.stderr, flush=True)
    _say("ok" if done.returncode == 0 else "failed", "install", "pip install -e (offline, --no-build-isolation)")
    probe = subprocess.run([python, "-c", "from mpi4py import MPI; print(MPI.Get_library_version().splitlines()[0])"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        wheels = sorted(glob.glob(os.path.join(root, ".whl", "mpich-*.whl")))
        if wheels:
            got = subprocess.run(pip + [wheels[-1]], capture_output=True, text=True)
            print(got.stdout + got.stderr, flush=True)
            _say("ok" if got.returncode == 0 else "failed", "mpich", "installed the carried %s"
                 % os.path.basename(wheels[-1]))
        else:
            _say("skipped", "mpich", "mpi4py finds no MPI library and no mpich wheel is in .whl/")
    else:
        _say("ok", "mpi", probe.stdout.strip())
    beside = os.path.join(os.path.dirname(python), "mpiexec")
    system = shutil.which("mpiexec")
    if not os.path.exists(beside) and system:
        try:
            os.symlink(system, beside)
            _say("ok", "mpiexec", "linked %s beside %s" % (system, python))
        except OSError as e:
            _say("skipped", "mpiexec", str(e))
    check = subprocess.run([python, "-c", "import oneflow_compat, cupy; print(oneflow_compat.__file__, "
                                          "cupy.__version__)"], capture_output=True, text=True, cwd="/")
    print(check.stdout + check.stderr, flush=True)
    _say("ok" if check.returncode == 0 else "failed", "import", "oneflow_compat and cupy from outside the checkout")
    return 0 if done.returncode == 0 and check.returncode == 0 else 1


# --- the env stage's report (runs in the child process) --------------------------------------------------------
_ENV = {}  # the env stage's findings, written to OUT/env.json (summary.json's env results)


def _check(name, ok, detail):
    status = "PASS" if ok is True else "FAIL" if ok is False else "SKIP"
    _ENV[name] = "%s %s" % (status, detail)
    print("%s %s: %s" % (status, name, detail), flush=True)


def report_environment(out=None):
    try:
        _report_environment()
    finally:
        if out:
            with open(os.path.join(out, "env.json"), "w") as f:
                json.dump(_ENV, f, indent=2, sort_keys=True, default=str)


def _report_environment():
    import platform

    import numpy

    _ENV["kernel"] = platform.release()

    from oneflow_compat.backend import devices

    mode = devices.mode()
    gpu = mode == "gpu"
    version = sys.version_info[:2]
    _check("python", version >= (3, 10) or not gpu, "%s %s (CuPy 14 needs >= 3.10)" % (platform.python_version(),
                                                                                       sys.executable))
    numpy_version = tuple(int(p) for p in numpy.__version__.split(".")[:2])
    _check("numpy", (2, 0) <= numpy_version < (2, 6) or not gpu, "%s (CuPy 14 needs >= 2.0, < 2.6)"
           % numpy.__version__)
    if mode == "cpu" or os.environ.get(FAKE_ENV) == "1":
        _check("cuda", None, "not probed under ONEFLOW_COMPAT_DEVICE=cpu" if mode == "cpu" else
               "not probed in a dry run (--fake)")
    else:
        _report_cuda(devices, gpu)
    try:
        import mpi4py
        from mpi4py import MPI

        _check("mpi4py", True, "%s on %s" % (mpi4py.__version__, MPI.Get_library_version().splitlines()[0].strip()))
    except Exception as e:  # noqa: BLE001 (report whatever failed)
        _check("mpi4py", False, "%s: %s" % (type(e).__name__, e))
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    from oneflow_compat.comm import mpiexec_command  # (which command-line syntax every MPI job of the run uses)

    _check("mpiexec", os.path.exists(mpiexec), "%s (%s)" % (mpiexec, mpiexec_command.flavour(mpiexec))
           if os.path.exists(mpiexec) else
           "missing beside %s: the multi-process tests skip (link the system's: ln -s \"$(command -v mpiexec)\" %s)"
           % (sys.executable, mpiexec))
    try:
        import pytest

        _check("pytest", True, pytest.__version__)
    except ImportError as e:
        _check("pytest", False, str(e))
    # nvidia-smi: the GPU's state as the run starts (memory another process holds, clocks, temperature)
    for tool, args in (("nvidia-smi", ["--query-gpu=name,driver_version,memory.total,memory.used,clocks.sm,"
                                       "clocks.max.sm,temperature.gpu", "--format=csv,noheader"]),
                       ("nvcc", ["--version"])):
        path = shutil.which(tool)
        if path:
            try:
                done = subprocess.run([path] + args, capture_output=True, text=True, timeout=20)
                lines = (done.stdout or done.stderr).strip().splitlines()
                _ENV[tool] = lines if tool == "nvidia-smi" else lines[-1:]
                print("%s: %s" % (tool, _ENV[tool]), flush=True)
            except (OSError, subprocess.SubprocessError) as e:
                _ENV[tool] = "%s: %s" % (type(e).__name__, e)
        else:
            _ENV[tool] = "not found"


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
    # the first kernel: CuPy compiles (or loads from its cache) and the context starts; seconds of it show here
    start = time.perf_counter()
    (cupy.arange(4, dtype=cupy.float32) * 2).get()
    _check("first kernel", True, "%.3f s (context start and compile or cache load)" % (time.perf_counter() - start))
    try:
        from cupy.cuda import nvrtc

        _check("nvrtc", True, "%s" % (nvrtc.getVersion(),))
    except Exception as e:  # noqa: BLE001
        _check("nvrtc", False, "%s: %s" % (type(e).__name__, e))
    try:
        from cupy.cuda import nccl

        _check("nccl", bool(getattr(nccl, "available", True)), "%s" % (nccl.get_version(),))
    except Exception as e:  # noqa: BLE001
        _check("nccl", None, "%s: %s" % (type(e).__name__, e))
    for index in range(runtime.getDeviceCount()):
        props = runtime.getDeviceProperties(index)
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        _check("gpu %d" % index, True, "%s, %.1f GiB, compute capability %d.%d" % (
            name, props["totalGlobalMem"] / 2 ** 30, props["major"], props["minor"]))
    try:
        import torch

        nccl = ""
        if torch.cuda.is_available():
            try:
                nccl = ", NCCL %s" % (torch.cuda.nccl.version(),)
            except Exception:  # noqa: BLE001 - a build without NCCL
                pass
        _check("torch", None if not torch.cuda.is_available() else True,
               "%s, CUDA %s, GPU %s%s" % (torch.__version__, torch.version.cuda, torch.cuda.is_available(), nccl))
    except ImportError as e:
        _check("torch", None, str(e))


# --- the command line --------------------------------------------------------------------------------------------
def build_parser(prog="python -m oneflow_compat.tools.gpu_check"):
    return add_arguments(argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0]))


def add_arguments(ap):
    """The command line of `oneflow-compat gpu-check` and `python -m oneflow_compat.tools.gpu_check`."""
    ap.add_argument("--stage", nargs="*", choices=STAGES, default=list(DEFAULT_STAGES),
                    help="stages to run (default: %s)" % " ".join(DEFAULT_STAGES))
    ap.add_argument("--device", choices=("gpu", "auto", "cpu"), default="gpu",
                    help="ONEFLOW_COMPAT_DEVICE for the stages (default gpu)")
    ap.add_argument("--out", default="gpu_check", help="folder of summary.json, summary.txt and the stage logs")
    ap.add_argument("--budget", type=float, default=470, help="seconds for the whole run (default 470)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds at most per stage (default: its budget)")
    ap.add_argument("--fake", action="store_true",
                    help="a dry run without a GPU: the strict fake device and a fake NCCL, no setup")
    ap.add_argument("--pytest-args", nargs=argparse.REMAINDER, default=[],
                    help="extra pytest arguments of the pytest stages (everything after it)")
    ap.add_argument("--report-environment", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--run-setup", action="store_true", help=argparse.SUPPRESS)
    return ap


def main(argv=None):
    return run(build_parser().parse_args(argv))


def run(a):
    if a.report_environment:
        report_environment(os.path.abspath(a.out) if a.out else None)
        return 0
    if a.run_setup:
        return run_setup()
    start = time.monotonic()
    deadline = start + a.budget
    os.makedirs(a.out, exist_ok=True)
    out = os.path.abspath(a.out)
    root = repository_root()
    summary_path = os.path.join(out, "summary.json")
    xdist = ["-n", str(min(8, os.cpu_count() or 1)), "--dist", "loadfile"] if _has_xdist() else []
    if any(arg.startswith("-n") for arg in a.pytest_args):
        xdist = []
    entries = []
    for stage in a.stage:
        if a.fake and stage == "setup":
            entry = dict(stage=stage, status="skipped", exit_code=None, seconds=0.0, device=a.device, fake=True,
                         command="", log="", failures=[], passed=0, failed=0, skipped=1,
                         note="a dry run installs nothing")
        else:
            left = deadline - time.monotonic() - 10
            budget = FAKE_BUDGETS.get(stage, BUDGETS[stage]) if a.fake else BUDGETS[stage]
            limit = min(budget, left, a.timeout if a.timeout is not None else budget)
            if limit < MIN_STAGE_SECONDS and (a.timeout is None or a.timeout >= MIN_STAGE_SECONDS):
                entry = dict(stage=stage, status="skipped", exit_code=None, seconds=0.0, device=a.device,
                             fake=a.fake, command="", log="", failures=[], passed=0, failed=0, skipped=1,
                             note="no time left (%.0f s)" % max(0.0, left))
            else:
                print("[gpu_check] %s (at most %.0f s, %.0f s left) ..." % (stage, limit, deadline - time.monotonic()),
                      file=sys.stderr, flush=True)
                pytest_args = list(a.pytest_args) + (xdist if stage in ("suite", "parity") else []) \
                    if stage in ("suite", "parity", "mpi") else []
                entry = run_stage(stage, root, out, a.device, limit, pytest_args, fake=a.fake)
        entries.append(entry)
        summary = update_summary(summary_path, entries)
        if stage == "setup" and not a.fake and not importable(sys.executable):
            where = link_farm(root, os.path.join(root, ".gpu_check_import"))
            os.environ["PYTHONPATH"] = os.pathsep.join([where] + [p for p in os.environ.get("PYTHONPATH", "")
                                                                  .split(os.pathsep) if p])
            entry["note"] = "not importable after the install: the stages import it from %s (links)" % where
            print("[gpu_check] %s" % entry["note"], file=sys.stderr, flush=True)
    summary = update_summary(summary_path, entries)
    summary["run"] = dict(budget_s=a.budget, total_s=round(time.monotonic() - start, 1), python=sys.executable,
                          fake=a.fake, device=a.device, stages=list(a.stage))
    with open(summary_path, "w") as f:
        json.dump(summary, f, indent=2, sort_keys=True, default=str)
        f.write("\n")
    print(write_text_summary(out, summary, time.monotonic() - start))
    return 0 if all(e["status"] in ("ok", "skipped", "partial") for e in entries) else 1


def _has_xdist():
    try:
        import xdist  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
