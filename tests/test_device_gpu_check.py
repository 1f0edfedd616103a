"""The GPU machine's one command (oneflow_compat/tools/gpu_check.py): its stages' commands and counts (pytest's
summary, its per-test lines when a stage is stopped, the stages' own GPU_CHECK lines), the stages that run without a
GPU (under ONEFLOW_COMPAT_DEVICE=cpu, and the dry run on the fake device), the summary files, the per-stage limit
and the whole run's budget; and the `gpu` / `gpu-cuda12` extras with the markers CuPy 14 needs."""
import configparser
import json
import os

import pytest

from oneflow_compat.tools import gpu_check

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(ROOT, "tests")


def test_stage_commands_name_existing_tests_and_split_the_suite():
    assert gpu_check.repository_root() == ROOT
    mpi = gpu_check.stage_command("mpi", ROOT, python="py")
    suite = gpu_check.stage_command("suite", ROOT, python="py")
    parity = gpu_check.stage_command("parity", ROOT, python="py")
    for f in gpu_check.MPI_TESTS:
        assert os.path.join(TESTS, f) in mpi and "--ignore=" + os.path.join(TESTS, f) in suite
    # every multi-process test file is in the mpi stage, and only there
    # (by the words of the name: "compile" holds "mpi")
    spawning = {f for f in os.listdir(TESTS) if f.startswith("test_") and f.endswith(".py")
                and {"mpi", "launch", "launcher"} & set(f[:-3].split("_"))}
    assert spawning <= set(gpu_check.MPI_TESTS)
    assert all(os.path.exists(p) for p in mpi[7:] + parity[7:])
    assert {os.path.basename(p) for p in parity[7:]} >= {"test_kernels_nn.py", "test_kernels_optim.py",
                                                         "test_philox.py", "test_fake_gpu.py", "test_cuda_kernels.py",
                                                         "test_cuda_sources.py", "test_nccl_comm.py"}
    assert gpu_check.stage_command("suite", ROOT, python="py", fake=True)[7:9] == ["-p", "strict_device"]
    assert gpu_check.stage_command("validate", ROOT, python="py") == ["py", "-m", "oneflow_compat.tools.gpu_stages",
                                                                       "validate"]
    assert gpu_check.DEFAULT_STAGES == ("setup", "env", "models", "graph", "nccl", "parity", "validate", "suite")
    with pytest.raises(ValueError, match="unknown stage 'gpu'"):
        gpu_check.stage_command("gpu", ROOT)


@pytest.mark.parametrize("stage, output, counts, stopped", [c + (False,) * (4 - len(c)) for c in [
    ("suite", "....\n==== 2 failed, 1745 passed, 242 skipped, 3 warnings in 212.31s (0:03:32) ====\n", (1745, 2, 242)),
    ("parity", "1 passed in 0.10s\n", (1, 0, 0)),
    ("mpi", "3 passed, 1 error in 2.00s\n", (3, 1, 0)),
    ("mpi", "Traceback (most recent call last):\nKeyboardInterrupt\n", (0, 0, 0)),
    ("validate", "conv2d ... OK\n\n3157 checks, 2 failed\n", (3155, 2, 0)),
    ("validate", "validate add_n: 40 checks, 0 failed (0.1 s)\nvalidate conv2d: 30 checks, 2 failed (1.2 s)\n"
                 "70 checks, 2 failed\n", (68, 2, 0)),
    ("validate", "validate add_n: 40 checks, 0 failed (0.1 s)\nvalidate conv2d: 30 checks, 2 failed (1.2 s)\n",
     (68, 2, 0), True),
    ("env", "PASS python: 3.11\nFAIL cuda: no\nSKIP x: y\nPASS pytest: 9\n", (2, 1, 1)),
    ("suite", "tests/test_a.py::test_x PASSED [ 10%]\ntests/test_a.py::test_y FAILED [ 20%]\n"
              "tests/test_b.py::test_z SKIPPED (no GPU) [ 30%]\n[gw1] [ 40%] PASSED tests/test_c.py::test_w\n"
              "[gpu_check] stage suite stopped after 9 s\n", (2, 1, 1)),
    ("models", "GPU_CHECK ok mlp gpu: {}\nGPU_CHECK failed lenet gpu: {}\nGPU_CHECK skipped lenet torch: no CUDA\n",
     (1, 1, 1)),
    # a test's own child pytest printed a count line: the stage's counts are still its own per-test lines
    ("suite", "tests/test_a.py::test_x PASSED [ 10%]\n3 passed, 1 failed in 2.10s\ntests/test_a.py::test_y PASSED "
              "[ 20%]\n", (2, 0, 0), True),
    ("suite", "tests/test_a.py::test_x PASSED [ 10%]\n3 passed, 1 failed in 2.10s\ntests/test_a.py::test_y PASSED "
              "[ 20%]\n===== 2 passed in 9.00s =====\n", (2, 0, 0))]])
def test_counts_of_each_kind_of_output(stage, output, counts, stopped):
    got = gpu_check.parse_counts(stage, output, stopped=stopped)
    assert (got["passed"], got["failed"], got["skipped"]) == counts


def test_cpu_runnable_stages_pass_and_fill_the_summary(tmp_path):
    out = tmp_path / "out"
    code = gpu_check.main(["--stage", "env", "parity", "--device", "cpu", "--out", str(out),
                           "--pytest-args", "-k", "test_block_function_over_many_counters or test_mode_values"])
    summary = json.loads((out / "summary.json").read_text())
    assert code == 0, summary
    assert summary["run"]["stages"] == ["env", "parity"] and summary["run"]["budget_s"] == 470
    env, parity = summary["env"], summary["parity"]
    assert env["status"] == "ok" and env["failed"] == 0 and env["passed"] >= 4 and env["skipped"] == 1
    assert "SKIP cuda: not probed under ONEFLOW_COMPAT_DEVICE=cpu" in (out / "env.log").read_text()
    assert parity["status"] == "ok" and parity["passed"] == 7 and parity["failed"] == 0
    assert parity["device"] == "cpu" and parity["seconds"] > 0
    assert " passed" in (out / "parity.log").read_text()
    # a later run updates its own stage and keeps the others
    gpu_check.main(["--stage", "env", "--device", "cpu", "--out", str(out)])
    again = json.loads((out / "summary.json").read_text())
    assert sorted(again) == ["env", "parity", "run"] and again["parity"] == parity
    table = gpu_check.format_summary(again).splitlines()
    assert table[0].split() == ["stage", "status", "passed", "failed", "skipped", "seconds"]
    assert [row.split()[:2] for row in table[1:]] == [["env", "ok"], ["parity", "ok"]]


def test_gpu_stage_without_cuda_fails_naming_the_reason(tmp_path, monkeypatch):
    (tmp_path / "cupy.py").write_text("raise ImportError('no CUDA here')\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    code = gpu_check.main(["--stage", "env", "--out", str(tmp_path / "out")])
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert code == 1 and summary["env"]["status"] == "failed" and summary["env"]["failed"] == 1
    assert "FAIL cuda: CuPy could not be imported: ImportError: no CUDA here" in \
        (tmp_path / "out" / "env.log").read_text()


def test_a_stage_past_its_time_is_stopped(tmp_path):
    code = gpu_check.main(["--stage", "validate", "--device", "cpu", "--out", str(tmp_path), "--timeout", "0.2"])
    entry = json.loads((tmp_path / "summary.json").read_text())["validate"]
    assert code == 1 and entry["status"] == "timeout" and entry["exit_code"] is None
    assert entry["seconds"] < 30
    assert "[gpu_check] stage validate stopped after 0.2 s" in (tmp_path / "validate.log").read_text()


def test_validate_on_the_gpu_checks_the_cuda_kernels_ops_first():
    from oneflow_compat.tools import gpu_stages, validate

    types = validate.ops_with_signatures()
    ordered = gpu_stages.first_the_cuda_kernels(types)
    assert sorted(ordered) == sorted(types)
    assert set(gpu_stages.CUDA_FIRST) <= set(types)  # every name still an op type (a rename shows here)
    assert ordered[:len(gpu_stages.CUDA_FIRST)] == list(gpu_stages.CUDA_FIRST)


def test_a_suite_stopped_at_its_limit_without_failures_is_a_partial_pass():
    counts = dict(passed=120, failed=0, skipped=3)
    assert gpu_check.stage_status("suite", None, counts) == "partial"
    assert gpu_check.stage_status("suite", None, dict(counts, failed=1)) == "timeout"
    assert gpu_check.stage_status("suite", None, dict(counts, passed=0)) == "timeout"
    assert gpu_check.stage_status("parity", None, counts) == "timeout"  # only the suite is given the time left
    assert gpu_check.stage_status("suite", 0, counts) == "ok"
    assert gpu_check.stage_status("suite", 1, counts) == "failed"
    assert gpu_check.stage_status("suite", 0, dict(counts, failed=2)) == "failed"


def test_gpu_extras_carry_cupy_14_markers():
    from packaging.requirements import Requirement

    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "setup.cfg"))
    extras = config["options.extras_require"]
    for extra, cupy in (("gpu", "cupy-cuda13x"), ("gpu-cuda12", "cupy-cuda12x")):
        requirements = {r.name: r for r in map(Requirement, extras[extra].strip().splitlines())}
        assert sorted(requirements) == sorted([cupy, "numpy"])
        assert requirements[cupy].specifier.contains("14.2.0") and not requirements[cupy].specifier.contains("13.6")
        assert requirements["numpy"].specifier.contains("2.5.1")
        assert not requirements["numpy"].specifier.contains("2.6.0")
        assert not requirements["numpy"].specifier.contains("1.26.4")
        for r in requirements.values():
            assert r.marker.evaluate({"python_version": "3.10"}) and not r.marker.evaluate({"python_version": "3.9"})


def test_the_dry_run_of_the_quick_stages_passes_on_the_fake_device(tmp_path):
    """`--fake`: the GPU is the strict fake device, NCCL a fake communicator; nothing is installed."""
    out = tmp_path / "dry"
    code = gpu_check.main(["--fake", "--stage", "setup", "env", "graph", "nccl", "--out", str(out), "--budget", "300"])
    summary = json.loads((out / "summary.json").read_text())
    assert code == 0, {k: (v.get("status"), v.get("failures")) for k, v in summary.items() if k != "run"}
    assert summary["setup"]["status"] == "skipped" and summary["setup"]["note"] == "a dry run installs nothing"
    graph = summary["graph"]["results"]
    assert graph.pop("mlp_captured") is True and graph.pop("mlp_captured_equals_cpu") is True
    # the project's GEMMs (kernels/cuda_blas.py) captured and replayed on changed operands, every layout
    worst = graph.pop("gemm_capture_worst_rel_diff")
    assert sorted(worst) == ["2d", "a.T", "b.T", "batched_broadcast", "batched_transposed", "f_order", "float64"]
    assert all(v < 1e-5 for v in worst.values()) and graph == {}
    assert len(summary["nccl"]["results"]["one_rank_collectives"]) == 14
    assert summary["nccl"]["skipped"] == 1  # no NCCL of CuPy's alone in a dry run
    # across processes, on the fake NCCL with every process on "GPU 0": 1 rank through (fake) NCCL, 2 ranks through
    # MPI — what a one-GPU machine does, where NCCL refuses two ranks on one GPU
    assert summary["nccl"]["results"]["mpi_2_ranks"].startswith("rc 0, 2 of 2 ranks ok")
    assert "through MPI, staged: no NCCL, ranks 0 and 1 are on one GPU" in summary["nccl"]["results"]["mpi_2_ranks"]
    # the env stage's findings are the summary's too
    assert summary["env"]["results"]["cuda"] == "SKIP not probed in a dry run (--fake)"
    assert summary["env"]["results"]["mpi4py"].startswith("PASS ")
    text = (out / "summary.txt").read_text()
    assert text.splitlines()[0].split() == ["stage", "status", "passed", "failed", "skipped", "seconds"]
    assert "graph mlp_captured_equals_cpu: True" in text and "total " in text


def test_stages_past_the_budget_are_skipped_with_a_note(tmp_path):
    code = gpu_check.main(["--stage", "env", "parity", "--device", "cpu", "--out", str(tmp_path), "--budget", "5"])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert code == 0
    for stage in ("env", "parity"):
        assert summary[stage]["status"] == "skipped" and summary[stage]["note"].startswith("no time left")
