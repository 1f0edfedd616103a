"""One `oneflow` namespace for both APIs: `oneflow.compatible.single_client` is the legacy API itself (the same module
objects, no second copy), and a process that mixes legacy job functions with global tensors gets a clear error
at the first use of the second API (oneflow_compat/framework/client_mode.py)."""
import importlib
import os
import re
import subprocess
import sys
import types

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat.framework import client_mode
from oneflow_compat.comm.environment import is_job_variable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MPI_VARIABLE_PREFIXES = ("PMI_", "OMPI_", "MV2_", "PMIX_", "MPI_LOCAL", "HYDRA_", "SLURM_")
LAUNCH_VARIABLES = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK")

LEGACY_API = ("the legacy job-function API (@flow.global_function, flow.config, flow.scope.placement)")
GLOBAL_API = ("the global-tensor API of OneFlow 0.5+ (flow.Tensor, flow.placement, flow.nn.Module)")


def mixing(what, where, api, old_api, first, first_where):
    """The whole expected message, as a regex (`where` parts may hold `\\d+` for line numbers)."""
    return ("mixing OneFlow's two APIs in one process: %s at %s belongs to %s, but this process already uses %s "
            "since %s at %s. A process runs one of them, as in OneFlow 0.5: keep the program to one API, or run "
            "each part as a separate program." % (re.escape(what), where, re.escape(api), re.escape(old_api),
                                                  re.escape(first), first_where))


def run_python(args, cwd):
    env = {k: v for k, v in os.environ.items()
           if not is_job_variable(k, MPI_VARIABLE_PREFIXES) and k not in LAUNCH_VARIABLES}
    env["PYTHONPATH"] = ROOT
    return subprocess.run([sys.executable] + list(args), cwd=str(cwd), env=env, capture_output=True, text=True,
                          timeout=120)


# --- oneflow.compatible.single_client: the legacy API's own objects ------------------------------------------------
LEGACY_MODULES = ("checkpoint", "config", "data", "distribute", "env", "image", "layers", "losses", "math", "nn",
                  "optimizer", "random", "regularizers", "scope", "train", "typing", "unittest")


def test_single_client_names_are_the_legacy_objects():
    import oneflow
    import oneflow.compatible.single_client as sc
    import oneflow.compatible.single_client.typing as tp
    import oneflow.compatible.single_client.optimizer.lr_scheduler as lr_scheduler
    import oneflow_compat.compatible.single_client as sc_compat
    from oneflow.compatible import single_client
    from oneflow.compatible.single_client import typing as tp2
    from oneflow_compat.compatible.single_client import nn

    assert oneflow is flow and sc is sc_compat is single_client is flow.compatible.single_client
    assert tp is tp2 is flow.typing and nn is flow.nn
    assert lr_scheduler is importlib.import_module("oneflow_compat.optimizer.lr_scheduler")
    for name in LEGACY_MODULES:
        module = getattr(flow, name)
        assert getattr(sc, name) is module, name
        for prefix in ("oneflow.compatible.single_client.", "oneflow_compat.compatible.single_client."):
            assert importlib.import_module(prefix + name) is module, prefix + name
        assert module.__spec__.name == "oneflow_compat." + name  # the real spec (reload, pickling) is kept
    # no legacy module ever ran a second time under the alias names
    for key, module in list(sys.modules.items()):
        if "single_client." in key and not key.startswith("oneflow_compat.compatible.single_client._"):
            assert module.__name__.startswith("oneflow_compat.") and "single_client" not in module.__name__, key
    # functions: the same objects; names both APIs share are the legacy functions here
    for name in ("global_function", "FunctionConfig", "function_config", "get_variable", "clear_default_session",
                 "enable_eager_execution", "constant_initializer", "float32", "watch", "load_variables",
                 "current_global_function_desc", "name_scope", "fixed_placement", "user_op_builder"):
        assert getattr(sc, name) is getattr(flow, name), name
    for name in ("matmul", "reshape", "zeros", "ones", "concat", "transpose", "where", "cast", "zeros_like"):
        assert getattr(sc, name) is getattr(flow, name).legacy, name
    assert sc.save is flow.checkpoint.save and sc.load is flow.checkpoint.get
    for name in ("randn", "tensor", "Tensor", "placement", "sbp", "optim", "manual_seed", "Size", "no_grad"):
        assert not hasattr(sc, name), name
    with pytest.raises(ModuleNotFoundError, match=r"^No module named 'oneflow.compatible.single_client.nothing'$"):
        import oneflow.compatible.single_client.nothing  # noqa: F401


def test_every_legacy_name_of_oneflow_is_in_single_client():
    from oneflow_compat._global.tensor_types import TensorType
    import oneflow_compat.compatible.single_client as sc

    # modern or project tools
    internal_modules = {"amp", "autograd", "backends", "distributions", "mock_torch", "cuda", "sbp", "explain", "custom_ops", "compatible", "jit", "version", "hub",
                        "asyncs"}  # (api-misc2: OneFlow 0.9 modern-only module)
    for name in dir(flow):
        value = getattr(flow, name)
        if name.startswith("_") or hasattr(sc, name):
            continue
        if isinstance(value, types.ModuleType):
            assert (name in internal_modules or hasattr(value, "__path__")
                    or value.__name__.startswith("oneflow_compat.ops.")), name
            continue
        origin = getattr(value, "__module__", None) if callable(value) else type(value).__module__
        if isinstance(value, TensorType):  # OneFlow 0.9's flow.FloatTensor, ...: classes that name "oneflow" as
            origin = TensorType.__module__  # their module, as 0.9's repr shows; made in _global.tensor_types
        # (bfloat16: OneFlow 0.9's dtype, kept in ir/dtypes for the runtime's rounding; not a legacy name)
        assert name in ("bool", "dtype", "bfloat16") or origin.startswith(("oneflow_compat._global.", "oneflow_compat.runtime.autograd",
                                                                   "oneflow_compat.runtime.inference_mode")), \
            "%s (from %s) is missing in oneflow.compatible.single_client" % (name, origin)


def test_a_job_defined_through_single_client_lives_in_the_default_session():
    import oneflow_compat.compatible.single_client as sc
    from oneflow_compat.compatible.single_client import typing as tp
    from oneflow_compat.framework import session

    @sc.global_function()
    def double(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return sc.math.multiply(x, sc.constant(2.0, dtype=sc.float32, shape=(2, 3)))

    assert set(session.default_session().job_functions) == {"double"}
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(double(x), 2 * x)


V050_SCRIPT = r'''
import numpy as np
{imports}

flow.config.gpu_device_num(1)
func_config = flow.FunctionConfig()
func_config.default_data_type(flow.float)
func_config.default_logical_view(flow.scope.consistent_view())


@flow.global_function(type="train", function_config=func_config)
def train_job(x: tp.Numpy.Placeholder((8, 4)), y: tp.Numpy.Placeholder((8, 1))) -> tp.Numpy:
    with flow.scope.placement("gpu", "0:0"):
        w = flow.get_variable("w", shape=(4, 1), initializer=flow.zeros_initializer())
        loss = flow.math.reduce_mean(flow.math.square(flow.matmul(x, w) - y))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
    return loss


rng = np.random.RandomState(0)
x = rng.rand(8, 4).astype(np.float32)
y = rng.rand(8, 1).astype(np.float32)
for step in range(3):
    print("step %d loss %.6f" % (step, float(train_job(x, y)[0])))
'''

IMPORTS = {
    "import-as": "import oneflow.compatible.single_client as flow\nimport oneflow.compatible.single_client.typing as tp",
    "from-import": "from oneflow.compatible import single_client as flow\n"
                   "from oneflow.compatible.single_client import typing as tp",
}


@pytest.mark.parametrize("runner,imports", [("python", "from-import"), ("python -m oneflow_compat", "import-as")])
def test_a_v050_legacy_script_runs_unchanged(tmp_path, runner, imports):
    script = tmp_path / "train_v050.py"
    script.write_text(V050_SCRIPT.format(imports=IMPORTS[imports]))
    args = [str(script)] if runner == "python" else ["-m", "oneflow_compat", str(script)]
    done = run_python(args, tmp_path)
    assert done.returncode == 0, done.stderr
    # the same SGD steps in numpy: loss = mean((x w - y)^2), w -= 0.1 * 2/8 x^T (x w - y), from w = 0
    rng = np.random.RandomState(0)
    x = rng.rand(8, 4).astype(np.float32)
    y = rng.rand(8, 1).astype(np.float32)
    w = np.zeros((4, 1), np.float32)
    lines = [line for line in done.stdout.splitlines() if line.startswith("step ")]
    assert len(lines) == 3
    for step, line in enumerate(lines):
        r = x @ w - y
        assert line.startswith("step %d loss " % step)
        np.testing.assert_allclose(float(line.split()[-1]), (r ** 2).mean(), rtol=1e-5)
        w -= 0.1 * 2 * x.T @ r / 8


# --- one API per process ---------------------------------------------------------------------------------------------
def test_a_job_function_after_global_tensors_is_refused():
    here = re.escape(__file__)
    x = flow.randn(2, 3)
    assert client_mode.current() == client_mode.GLOBAL
    with pytest.raises(RuntimeError) as err:
        @flow.global_function()
        def job():
            pass
    assert re.fullmatch(mixing("defining the job function 'job' (@flow.global_function)", here + r":\d+",
                               LEGACY_API, GLOBAL_API, "creating a flow.Tensor", here + r":\d+"), str(err.value))
    for legacy_use, what in ((lambda: flow.config.gpu_device_num(1), "flow.config.gpu_device_num"),
                             (lambda: flow.scope.placement("cpu", "0:0"), "flow.scope.placement"),
                             (flow.enable_eager_execution, "flow.enable_eager_execution")):
        with pytest.raises(RuntimeError, match="^" + re.escape("mixing OneFlow's two APIs in one process: " + what)):
            legacy_use()
    # the refused calls changed nothing: global tensors keep working, the legacy session stays untouched
    np.testing.assert_allclose((x * 2).numpy(), 2 * x.numpy())
    assert flow.framework.session.default_session().job_functions == {}
    assert not flow.eager_execution_enabled()


def test_global_tensors_after_a_legacy_call_are_refused():
    here = re.escape(__file__)
    flow.config.cpu_device_num(1)
    assert client_mode.current() == client_mode.LEGACY
    for modern_use, what in ((lambda: flow.randn(2), "creating a flow.Tensor"),
                             (lambda: flow.tensor([1.0]), "creating a flow.Tensor"),
                             (lambda: flow.zeros(2), "creating a flow.Tensor"),  # outside a job: the modern zeros
                             (lambda: flow.placement("cpu", [0]), "flow.placement"),
                             (lambda: flow.nn.Linear(2, 3), "creating a flow.nn.Module (Linear)")):
        with pytest.raises(RuntimeError) as err:
            modern_use()
        assert re.fullmatch(mixing(what, here + r":\d+", GLOBAL_API, LEGACY_API, "flow.config.cpu_device_num",
                                   here + r":\d+"), str(err.value)), str(err.value)
    # the legacy API keeps working
    import oneflow_compat.typing as tp

    @flow.global_function()
    def add_one(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return x + 1

    np.testing.assert_array_equal(add_one(np.arange(3, dtype=np.float32)), [1, 2, 3])


MODE_PROGRAM = r'''
import sys
import oneflow as flow
from oneflow_compat.framework import client_mode

print("after import:", client_mode.current())
flow.sbp.split(0), flow.sbp.broadcast, flow.env.get_rank(), flow.env.get_world_size(), flow.float32, flow.nn.functional
print("after shared names:", client_mode.current())
try:
    flow.compatible.single_client
except AttributeError as e:
    print("attribute:", e)
if sys.argv[1] == "global-first":
    x = flow.randn(2)
    try:
        import oneflow.compatible.single_client
    except RuntimeError as e:
        print("import:", e)
    print("loaded:", "oneflow_compat.compatible.single_client" in sys.modules, client_mode.current())
else:
    import oneflow.compatible.single_client as legacy
    print("after import of single_client:", client_mode.current())
    try:
        flow.randn(2)
    except RuntimeError as e:
        print("randn:", e)
'''


def test_the_mode_is_chosen_by_first_use_never_by_import(tmp_path):
    program = tmp_path / "mode.py"
    program.write_text(MODE_PROGRAM)
    first = ["after import: None", "after shared names: None",
             "attribute: oneflow.compatible.single_client is loaded by importing it: `import "
             "oneflow.compatible.single_client as flow` (it chooses the legacy job-function API for this process)"]
    where = re.escape(str(program))
    done = run_python([str(program), "global-first"], tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:3] == first and len(lines) == 5
    assert re.fullmatch(mixing("import oneflow.compatible.single_client", where + ":16", LEGACY_API, GLOBAL_API,
                               "creating a flow.Tensor", where + ":14"), lines[3][len("import: "):]), lines[3]
    assert lines[4] == "loaded: False global"  # the failed import left nothing half-loaded
    done = run_python([str(program), "legacy-first"], tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:3] == first and lines[3] == "after import of single_client: legacy" and len(lines) == 5
    assert re.fullmatch(mixing("creating a flow.Tensor", where + ":24", GLOBAL_API, LEGACY_API,
                               "import oneflow.compatible.single_client", where + ":21"),
                        lines[4][len("randn: "):]), lines[4]


def test_backends_cudnn_setters_take_oneflows_types():
    cudnn = flow.backends.cudnn
    cudnn.set_reserved_mem_mbytes(1024)
    cudnn.enable_fused_normalization_add_relu(True)
    cudnn.enable_conv_heuristic_search_algo(False)
    with pytest.raises(AssertionError, match=r"^Attribute \['cudnn_conf', 'cudnn_conv_heuristic_search_algo'\] type "
                                             r"unmatched! Expected: <class 'bool'> but get: <class 'int'>$"):
        cudnn.enable_conv_heuristic_search_algo(1)


def test_oneflow_internal_holds_the_classes_oneflow_09_defines_there():
    """OneFlow 0.9 defines flow.Tensor, Size, device, placement, dtype and the dtypes in its extension module
    `oneflow._oneflow_internal`; libraries test against them there (flowvision's Resize)."""
    import importlib

    internal = importlib.import_module("oneflow._oneflow_internal")
    assert flow._oneflow_internal is internal
    for name in ("Tensor", "Size", "device", "placement", "dtype", "bool", "float16", "float32", "float", "double",
                 "float64", "int8", "int32", "int64", "uint8", "record", "tensor_buffer", "bfloat16"):
        assert getattr(internal, name) is getattr(flow, name), name
    assert isinstance(flow.ones(2), internal.Tensor) and not isinstance(np.ones(2), internal.Tensor)
