"""`flow.sysconfig`: what the build has (v0.4.0's with_cuda / with_xla / has_rpc_backend_*), and the compile and
link flags of OneFlow's C++ library (v0.3.4), refused: they exist only to build custom C++ ops against OneFlow."""
from oneflow_compat._api.refusals import CUSTOM_CPP, refused

get_include = refused("sysconfig.get_include", CUSTOM_CPP)
get_lib = refused("sysconfig.get_lib", CUSTOM_CPP)
get_compile_flags = refused("sysconfig.get_compile_flags", CUSTOM_CPP)
get_link_flags = refused("sysconfig.get_link_flags", CUSTOM_CPP)


def with_cuda():
    """Whether "gpu" placements can run on a CUDA device here (CuPy with a usable GPU)."""
    from oneflow_compat.backend import devices

    return bool(devices.cuda_usable())


def with_xla():
    """False: there is no XLA backend."""
    return False


def has_rpc_backend_grpc():
    """False: processes talk over MPI, not grpc."""
    return False


def has_rpc_backend_local():
    """True: a single process needs no RPC backend at all."""
    return True


# --- modtests team: OneFlow 0.9's sysconfig.get_cuda_version (api/python/flags.cpp `cuda_version`)
def get_cuda_version():
    """The CUDA version the GPU path runs (CuPy's CUDA runtime, e.g. 13000), or 0 where there is none (OneFlow
    0.9 returns its build's CUDA_VERSION, 0 for a CPU build)."""
    if not with_cuda():
        return 0
    import cupy

    return int(cupy.cuda.runtime.runtimeGetVersion())
