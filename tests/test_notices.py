"""The project's own notices go through the `oneflow_compat` logger: shown on stderr by default, silenced by a
logging level, handed to the application's handlers once it configures logging (and then shown only there)."""
import logging
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTICE = "NOTICE: no usable CUDA device (ONEFLOW_COMPAT_DEVICE=cpu): 'gpu' placements run on CPU devices."

# A fresh interpreter, as a user's script has it: pytest's own log capture would otherwise count as configured logging.
TRIGGER = """
import logging, sys
{setup}
from oneflow_compat.backend import devices
devices._CUDA = False  # as on a machine without CUDA, even where one is present
assert devices.resolve_tag("gpu") == "cpu" and devices.resolve_tag("gpu") == "cpu"
print("done")
"""


def _run(setup=""):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "OMPI_", "MV2_", "PMIX_"))}
    env["ONEFLOW_COMPAT_DEVICE"] = "cpu"
    result = subprocess.run([sys.executable, "-c", TRIGGER.format(setup=setup)], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "done\n"  # notices never go to stdout, which belongs to the script
    return result.stderr


def test_notice_on_stderr_once_by_default():
    assert _run().splitlines() == [NOTICE]


@pytest.mark.parametrize("setup", ['logging.getLogger("oneflow_compat").setLevel(logging.ERROR)',
                                   "logging.disable(logging.WARNING)"])
def test_notice_silenced_by_a_logging_level(setup):
    assert _run(setup) == ""


def test_configured_logging_gets_the_notice_instead():
    err = _run('logging.basicConfig(format="app|%(levelname)s|%(name)s|%(message)s")')
    assert err.splitlines() == ["app|WARNING|oneflow_compat|" + NOTICE]


def test_informational_notices_reach_the_logger(monkeypatch, caplog):
    import oneflow_compat as flow
    from oneflow_compat.backend import devices

    monkeypatch.setattr(devices, "_CUDA", False)
    with caplog.at_level(logging.INFO, logger="oneflow_compat"):
        flow.config.gpu_device_num(2)
    assert [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "oneflow_compat"] == [
        ("INFO", "INFO: no usable CUDA device; flow.config.gpu_device_num(2) sets cpu_device_num(2) instead")]


@pytest.mark.parametrize("env, shown", [({}, True), ({"PMI_RANK": "0", "PMI_SIZE": "2"}, True),
                                        ({"PMI_RANK": "1", "PMI_SIZE": "2"}, False),
                                        ({"PMI_RANK": "1", "PMI_SIZE": "2", "ONEFLOW_COMPAT_OUTPUT": "all"}, True),
                                        ({"PMI_RANK": "1", "PMI_SIZE": "2", "ONEFLOW_COMPAT_OUTPUT": "raw"}, True)])
def test_default_output_once_per_program_under_mpi(monkeypatch, env, shown):
    from oneflow_compat.backend import notices

    for name in [n for n in os.environ if n.startswith(("PMI_", "OMPI_", "MV2_", "PMIX_", "ONEFLOW_COMPAT_OUT"))]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert notices._shown_on_this_rank() is shown
    assert notices.progress_enabled() is shown
