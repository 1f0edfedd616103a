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
