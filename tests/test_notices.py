"""The project's own notices go through the `oneflow_compat` logger as a library's should: a NullHandler, no level of
its own, the project's stderr line only while the application configured no handler, no level name in the text,
one notice per fact (in the script's own words: "gpu" or "cuda"), once per job (the first rank)."""
import logging
import os
import subprocess
import sys

import pytest

from oneflow_compat.comm.environment import is_job_variable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REASON = "ONEFLOW_COMPAT_DEVICE=cpu"
GPU_LINE = 'oneflow_compat: no usable CUDA device (%s): "gpu" placements run on CPU devices' % REASON

# A fresh interpreter, as a user's script has it: pytest's own log capture would otherwise count as configured logging.
TRIGGER = """
import logging, sys
{setup}
from oneflow_compat.backend import devices
devices._CUDA = False  # as on a machine without CUDA, even where one is present
assert devices.resolve_tag("gpu") == "cpu" and devices.resolve_tag("gpu") == "cpu"
print("done")
"""


def _env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not is_job_variable(k, ("PMI_", "OMPI_", "MV2_", "PMIX_", "ONEFLOW_COMPAT_OUT"))
           and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    env["ONEFLOW_COMPAT_DEVICE"] = "cpu"
    env.update(extra)
    return env


def _run_code(code, **extra):
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(**extra), capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result


def _run(setup="", **extra):
    result = _run_code(TRIGGER.format(setup=setup), **extra)
    assert result.stdout == "done\n"  # notices never go to stdout, which belongs to the script
    return result.stderr


def test_notice_on_stderr_once_by_default():
    assert _run().splitlines() == [GPU_LINE]


@pytest.mark.parametrize("setup", ['logging.getLogger("oneflow_compat").setLevel(logging.ERROR)',
                                   "logging.disable(logging.WARNING)"])
def test_notice_silenced_by_a_logging_level(setup):
    assert _run(setup) == ""


def test_configured_logging_gets_the_notice_instead():
    err = _run('logging.basicConfig(format="app|%(levelname)s|%(name)s|%(message)s")')
    assert err.splitlines() == [
        'app|WARNING|oneflow_compat|no usable CUDA device (%s): "gpu" placements run on CPU devices' % REASON]


def test_a_handler_of_the_application_on_the_logger_itself_takes_over():
    err = _run('h = logging.StreamHandler(sys.stderr); h.setFormatter(logging.Formatter("mine: %(message)s")); '
               'logging.getLogger("oneflow_compat").addHandler(h)')
    assert err.splitlines() == ['mine: no usable CUDA device (%s): "gpu" placements run on CPU devices' % REASON]


def test_library_convention_nullhandler_and_no_level():
    from oneflow_compat.backend import notices

    assert any(isinstance(h, logging.NullHandler) for h in notices.logger.handlers)
    assert notices.logger.level == logging.NOTSET  # the application's configuration decides


def test_a_script_on_cpu_that_asks_for_no_gpu_prints_only_its_own_lines(tmp_path):
    script = tmp_path / "cpu_prog.py"
    script.write_text("import numpy as np\nimport oneflow as flow\nimport oneflow.typing as tp\n"
                      "print('mine')\n"
                      "@flow.global_function()\n"
                      "def job(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:\n"
                      "    return flow.math.relu(x)\n"
                      "print(job(np.ones((2, 3), np.float32)).sum())\n")
    done = subprocess.run([sys.executable, str(script)], cwd=str(tmp_path), env=_env(ONEFLOW_COMPAT_DEVICE="auto"),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "mine\n6.0\n" and done.stderr == ""


@pytest.mark.parametrize("spelling, code, line", [
    ("legacy gpu_device_num then a gpu placement",
     "flow.config.gpu_device_num(2)\n"
     "@flow.global_function()\n"
     "def job(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:\n"
     "    with flow.scope.placement('gpu', '0:0-1'):\n"
     "        return flow.math.relu(x)\n"
     "job(np.ones((2, 3), np.float32))\n",
     "flow.config.gpu_device_num(2) runs 2 CPU devices instead"),
    ("global cuda placement and tensors",
     "p = flow.placement('cuda', [0])\n"
     "x = flow.ones(2, 3, placement=p, sbp=flow.sbp.broadcast)\n"
     "y = flow.ones(2, 3, device='cuda')\n"
     "print(float((x + x).to_local().numpy().sum()), y.device)\n",
     '"cuda" tensors and placements run on the CPU'),
])
def test_one_line_per_fact_in_the_scripts_words(spelling, code, line):
    done = _run_code("import numpy as np\nimport oneflow_compat as flow\nimport oneflow_compat.typing as tp\n" + code)
    assert done.stderr.splitlines() == ["oneflow_compat: no usable CUDA device (%s): %s" % (REASON, line)], spelling


def test_informational_notices_reach_the_logger(monkeypatch, caplog):
    import oneflow_compat as flow
    from oneflow_compat.backend import devices

    # the subject is the fallback of the default mode (auto) where CUDA is not usable, whatever mode the suite runs in
    # (under ONEFLOW_COMPAT_DEVICE=gpu an unusable CUDA is an error, not a notice)
    monkeypatch.setenv("ONEFLOW_COMPAT_DEVICE", "auto")
    monkeypatch.setattr(devices, "_CUDA", False)
    monkeypatch.setattr(devices, "_CUDA_REASON", None)
    monkeypatch.setattr(devices, "_NOTICED", False)
    flow.clear_default_session()  # a session made under the suite's mode would keep its devices
    with caplog.at_level(logging.INFO, logger="oneflow_compat"):
        flow.config.gpu_device_num(2)
        devices.resolve_tag("gpu")  # the same fact: not said again
    assert [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "oneflow_compat"] == [
        ("WARNING", "no usable CUDA device (CUDA was marked unusable): flow.config.gpu_device_num(2) runs 2 CPU "
         "devices instead")]


@pytest.mark.parametrize("env, shown", [({}, True), ({"PMI_RANK": "0", "PMI_SIZE": "2"}, True),
                                        ({"PMI_RANK": "1", "PMI_SIZE": "2"}, False),
                                        ({"PMI_RANK": "1", "PMI_SIZE": "2", "ONEFLOW_COMPAT_OUTPUT": "all"}, False),
                                        ({"PMI_RANK": "1", "PMI_SIZE": "2", "ONEFLOW_COMPAT_OUTPUT": "raw"}, False),
                                        ({"PMI_RANK": "0", "PMI_SIZE": "2", "RANK": "2", "WORLD_SIZE": "4",
                                          "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}, False),
                                        ({"PMI_RANK": "0", "PMI_SIZE": "2", "RANK": "0", "WORLD_SIZE": "4",
                                          "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}, True)])
def test_once_per_job_on_the_first_rank(monkeypatch, env, shown):
    # under the launcher every rank's output is shown ("raw"), and each node's first MPI rank is rank 0 of its own
    # mpiexec: the job's first rank (RANK) says it, once
    from oneflow_compat.backend import notices

    for name in [n for n in os.environ if is_job_variable(n, ("PMI_", "OMPI_", "MV2_", "PMIX_", "ONEFLOW_COMPAT_OUT"))
                 or n in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert notices._first_rank() is shown
    assert notices.progress_enabled() is shown


def test_a_notice_about_this_rank_alone_is_shown_there(monkeypatch, capsys):
    from oneflow_compat.backend import notices

    monkeypatch.setattr(notices, "_another_handler_receives", lambda: False)
    monkeypatch.setattr(notices, "_first_rank", lambda: False)
    notices.warn("everyone's fact")
    notices.warn("rank 3's own fact", this_rank=True)
    assert capsys.readouterr().err == "oneflow_compat: rank 3's own fact\n"
