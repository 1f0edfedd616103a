"""The legacy names this project refuses, each with its reason: calling one raises NotImplementedError naming the
name and why, at the line that asks for it (the name itself resolves, so `import`s and attribute lookups of a
script still work). `REFUSED` lists them for the README and tests/test_legacy_coverage.py.

Out of scope by decision (issue 20): TensorRT, ONNX export, custom C++ op libraries, OneFlow's internal test ops,
RDMA/grpc configuration, and OneFlow's own worker-process management (the MPI launcher starts the ranks); of
v0.4.0's additions, the SavedModel builder and serving session (OneFlow's job protobufs), `builtin_op` (C++ op
type names), `experimental.get_job_set` (OneFlow's JobSet protobuf) and `env.init_bootstrap_confs` (the grpc
control plane's bootstrap).
"""
import functools

TENSORRT = ("TensorRT is out of scope: oneflow_compat runs its kernels on numpy/CuPy and has no TensorRT "
            "(XLA/TensorRT) sub-graph compiler to calibrate")
ONNX = ("ONNX export is out of scope: it converts OneFlow's C++ job protobufs with onnx/oneflow-onnx, which "
        "oneflow_compat does not produce")
CUSTOM_CPP = ("custom C++ op libraries are out of scope: they compile against OneFlow's C++ headers and library, "
              "which oneflow_compat does not have")
GRPC = ("RDMA/grpc configuration is out of scope: oneflow_compat's processes talk over MPI, not OneFlow's grpc "
        "control plane or its RDMA data plane")
WORKERS = ("OneFlow's worker processes started over ssh are out of scope: start the ranks with mpiexec or "
           "`python -m oneflow_compat.tools.launch -n N --hosts ...` (every rank runs the script)")
NCCL_EAGER = ("out of scope: legacy eager mode runs on one logical device here, and "
              "GPU collectives go through the host (no NCCL)")
INTERNAL = ("OneFlow's internal protobufs are out of scope: oneflow_compat compiles jobs into its own IR, not "
            "into OneFlow's JobSet/OpConf protobufs")
SAVED_MODEL = ("OneFlow's SavedModel format and serving sessions are out of scope: a saved model is OneFlow's Job "
               "protobuf (OpConf per op) for OneFlow's C++ runtime to compile, which oneflow_compat neither writes nor "
               "reads; save variables with flow.checkpoint.save and rebuild the job function to serve")
BUILTIN_OP = ("out of scope: flow.builtin_op builds OneFlow's C++ user ops by their registered type names for the "
              "C++ eager interpreter, which oneflow_compat does not have; call the op's Python function instead")

REFUSED = {}


def refused(name, reason):
    """A stand-in for the legacy function `flow.<name>` that raises NotImplementedError with the reason."""
    REFUSED[name] = reason

    @functools.wraps(_stub)
    def refuse(*args, **kwargs):
        raise NotImplementedError("flow.%s: %s" % (name, reason))

    refuse.__name__ = refuse.__qualname__ = name.rsplit(".", 1)[-1]
    refuse.__doc__ = "Refused: %s." % reason
    return refuse


def _stub(*args, **kwargs):
    pass

