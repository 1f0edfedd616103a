"""`oneflow.mock_torch` (OneFlow 0.9), each case in a fresh interpreter (the mock changes what `import torch` gives
for the whole process): `enable()` as a scope and for good, `disable()`, submodules, a module that does not exist,
the real torch (where installed) coming back with the caller's global `torch`; and `eval $(python3 -m
oneflow.mock_torch)`'s PYTHONPATH, under which a program's `import torch` is oneflow."""
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCOPES = textwrap.dedent("""
    import importlib.util
    real = importlib.util.find_spec("torch") is not None
    if real:
        import torch
        before = torch
    import oneflow as flow
    import oneflow.mock_torch as mock
    with mock.enable():
        import torch
        import torch.nn.functional as F
        from torch import nn
        assert torch is flow and F is flow.nn.functional and nn is flow.nn
        assert isinstance(torch.zeros(2, 3), flow.Tensor)
        try:
            import torch.nothing_here
        except ModuleNotFoundError as e:
            assert str(e) == ("torch.nothing_here is not provided: mock_torch answers it with "
                              "oneflow_compat.nothing_here, which does not exist"), e
        else:
            raise AssertionError("torch.nothing_here imported")
    if real:
        assert torch is before  # the caller's global follows
        import torch
        assert torch is before and torch is not flow
    mock.enable()
    import torch
    assert torch is flow
    mock.disable()
    import torch
    assert (torch is before) if real else True
    print("OK")
""")


def _python(code, env=None):
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env=env)


def test_enable_and_disable_in_one_process():
    done = _python(SCOPES)
    assert done.returncode == 0 and done.stdout.strip().endswith("OK"), done.stdout + done.stderr


def test_the_module_command_puts_a_torch_on_pythonpath():
    env = dict(os.environ, PYTHONPATH="/some/where")
    line = subprocess.run([sys.executable, "-m", "oneflow.mock_torch"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env=env).stdout.strip()
    shim = os.path.join(ROOT, "oneflow_compat", "mock_torch", "shim")
    assert line == "export PYTHONPATH=%s:/some/where" % shim, line
    off = subprocess.run([sys.executable, "-m", "oneflow.mock_torch", "disable"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, env=dict(env, PYTHONPATH=shim + ":/some/where")).stdout.strip()
    assert off == "export PYTHONPATH=/some/where", off
    done = _python("import torch, oneflow as flow\n"
                   "import torch.nn as nn\n"
                   "assert torch is flow and nn is flow.nn and isinstance(torch.ones(2), flow.Tensor)\n"
                   "print(torch.__file__)", env=dict(os.environ, PYTHONPATH=shim))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == os.path.join(ROOT, "oneflow_compat", "__init__.py")


def test_the_console_script_oneflow_09_installs():
    """OneFlow 0.9.0's python/setup.py installs `oneflow-mock-torch` (entry point oneflow.mock_torch.__main__:main);
    the documentation page cookies/oneflow_torch.md tells users `eval $(oneflow-mock-torch)`."""
    import configparser
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, "setup.cfg"))
    scripts = dict(line.split(" = ") for line in cfg["options.entry_points"]["console_scripts"].strip().splitlines()
                   if not line.lstrip().startswith("#"))
    assert scripts["oneflow-mock-torch"] == "oneflow_compat.mock_torch.__main__:main"
    shim = os.path.join(ROOT, "oneflow_compat", "mock_torch", "shim")
    # what the installed script runs: the entry point's target with argv[0] the script's name
    run = ("import sys; sys.argv = ['/usr/bin/oneflow-mock-torch'] + sys.argv[1:]\n"
           "from oneflow_compat.mock_torch.__main__ import main; main()")
    on = subprocess.run([sys.executable, "-c", run], cwd=ROOT, capture_output=True, text=True, timeout=120,
                        env=dict(os.environ, PYTHONPATH="/some/where"))
    assert on.stdout.strip() == "export PYTHONPATH=%s:/some/where" % shim, on.stdout + on.stderr
    off = subprocess.run([sys.executable, "-c", run, "disable"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, env=dict(os.environ, PYTHONPATH=shim + ":/some/where"))
    assert off.stdout.strip() == "export PYTHONPATH=/some/where", off.stdout + off.stderr
    bad = subprocess.run([sys.executable, "-c", run, "--lazy"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.splitlines()[0] == "usage: oneflow-mock-torch [-h] [{enable,disable}]", bad.stderr
    installed = os.path.join(os.path.dirname(sys.executable), "oneflow-mock-torch")
    if os.path.exists(installed):  # an environment installed from this checkout after the script was added
        got = subprocess.run([installed], capture_output=True, text=True, timeout=120,
                             env=dict(os.environ, PYTHONPATH="/some/where"))
        assert got.stdout.strip() == "export PYTHONPATH=%s:/some/where" % shim, got.stdout + got.stderr
