"""The one command line (`oneflow-compat`, `python -m oneflow_compat`): subcommands with their own --help, --version,
the script shorthand, `validate --failures-only`, and `flow.__version__` as the packaging metadata says."""
import importlib.metadata
import os
import re
import subprocess
import sys

import pytest

import oneflow_compat as flow
from oneflow_compat import __main__ as cli
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ops import examples, registry
from oneflow_compat.tools import validate
from oneflow_compat.comm.environment import is_job_variable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(args, cwd=ROOT, **kw):
    env = {k: v for k, v in os.environ.items() if not is_job_variable(k, ("PMI_", "OMPI_", "MV2_", "PMIX_"))}
    env.update(kw)
    return subprocess.run([sys.executable] + args, capture_output=True, text=True, env=env, cwd=str(cwd),
                          timeout=120)


def test_version_everywhere_is_the_distribution_version():
    # setup.cfg reads oneflow_compat/version.py: the installed metadata, the package and --version agree
    assert flow.__version__ == importlib.metadata.version("oneflow_compat")
    done = _run(["-c", "import oneflow; print(oneflow.__version__)"])
    assert done.returncode == 0, done.stderr
    assert done.stdout == flow.__version__ + "\n" and done.stderr == ""
    done = _run(["-m", "oneflow_compat", "--version"])
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"oneflow-compat %s \(OneFlow legacy lazy API v0\.3-v0\.4, global-tensor API v0\.5-v0\.9; "
                        r"Python [\d.]+, numpy [\d.]+, (compiled CPU kernels \(numba [\w.]+\)|numpy CPU kernels)\)\n"
                        % re.escape(flow.__version__), done.stdout), done.stdout
    assert done.stderr == ""


@pytest.mark.parametrize("sub", ["run", "explain", "validate", "launch", "gpu-check"])
def test_every_subcommand_has_its_help(sub, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main([sub, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: oneflow-compat %s [-h]" % sub), out


def test_top_level_help_lists_the_subcommands(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for sub in cli.SUBCOMMANDS:
        assert sub in out
    assert "--version" in out


def test_no_arguments_is_a_usage_error(capsys):
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: oneflow-compat") and "a subcommand or a script is required" in err


def test_a_script_runs_with_or_without_run_and_keeps_its_own_options(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("import sys, oneflow\nprint('args', sys.argv[1:], oneflow.__name__)\n")
    for args in (["-m", "oneflow_compat", str(script), "--help", "-x"],
                 ["-m", "oneflow_compat", "run", str(script), "--help", "-x"]):
        done = _run(args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "args ['--help', '-x'] oneflow_compat\n"


def test_missing_script_is_named(tmp_path, capsys):
    assert cli.main([str(tmp_path / "nope.py")]) == 2
    assert "oneflow-compat: no such script: %s" % (tmp_path / "nope.py") in capsys.readouterr().err


def test_the_tools_modules_take_the_same_options():
    done = _run(["-m", "oneflow_compat.tools.validate", "--help"])
    assert done.returncode == 0 and "--failures-only" in done.stdout
    done = _run(["-m", "oneflow_compat.tools.launch", "--help"])
    assert done.returncode == 0 and "--selftest" in done.stdout


def test_validate_unknown_op_is_named(capsys):
    assert cli.main(["validate", "no_such_op"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("validate: unknown op type(s): no_such_op (known: ")


def _broken_square():
    # square is not linear: its P -> P signature is wrong on every device count
    def same(op):
        return [TensorMeta(op.inputs[0].shape, op.inputs[0].dtype)]

    def sigs(op):
        return [((S.B,), (S.B,)), ((S.P,), (S.P,))]

    return registry.OpDef("cli_test_bogus_square", infer=same, kernel=lambda xp, x: x * x, sbp=sigs)


def test_validate_failures_only_prints_the_failures_and_the_count(monkeypatch, capsys):
    defn = _broken_square()
    registry.register(defn)
    monkeypatch.setitem(examples.EXAMPLES, defn.type, [examples.Example(lambda rng: [rng.standard_normal((5, 7))])])
    monkeypatch.setattr(validate, "EXAMPLES", examples.EXAMPLES)
    try:
        assert cli.main(["validate", "--failures-only", "--devices", "2,3", defn.type, "relu"]) == 1
        out = capsys.readouterr().out.splitlines()
        assert cli.main(["validate", "--devices", "2", defn.type]) == 1
        full = capsys.readouterr().out.splitlines()
    finally:
        registry._REGISTRY.pop(defn.type, None)
    relu_checks = len(validate.check_examples("relu", (2, 3)))
    assert out[0].split() == ["op", "example", "signature", "devices", "result"]
    assert [line.split()[:5] for line in out[1:3]] == [
        [defn.type, "0", "(P)->(P)", "2", "FAIL"], [defn.type, "0", "(P)->(P)", "3", "FAIL"]]
    assert out[3:] == ["", "%d checks, 2 failed" % (4 + relu_checks)]
    assert any(line.split()[-1] == "OK" for line in full)  # without the flag the passing rows are shown too
    assert full[-1] == "2 checks, 1 failed"


def test_validate_failures_only_with_nothing_failing_prints_the_count_alone(capsys):
    assert cli.main(["validate", "--failures-only", "relu"]) == 0
    out = capsys.readouterr().out
    assert re.fullmatch(r"\d+ checks, 0 failed\n", out), out


def test_validate_refuses_a_bad_device_count(capsys):
    assert cli.main(["validate", "--devices", "0", "relu"]) == 2
    assert "--devices takes positive device counts" in capsys.readouterr().err
