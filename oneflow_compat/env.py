"""`flow.env.*`: the cluster.

Legacy API (v0.3): machine addresses are not used to connect (MPI does that); the machine list's length fixes the
machine count, which must equal the MPI world size.

Global-tensor API (0.5-0.9): `get_rank()`, `get_world_size()`, `get_local_rank()`, `get_node_size()` describe this
process's place in the job. They come from OneFlow's launch variables (RANK, WORLD_SIZE, LOCAL_RANK; set by
`python -m oneflow.distributed.launch`), else from the MPI launcher (plain `mpiexec -n N`), else a world of one;
they never start MPI. As in OneFlow, the five launch variables must be all set or all unset.
"""
from oneflow_compat.comm import world as _world
from oneflow_compat.framework import session as sess

ENV_NOTHING = "Nothing happened because environment has been initialized"


def _env_setter(fn):
    def wrapper(*args, **kwargs):
        if sess.env_config().initialized:
            print(ENV_NOTHING)
            return False
        return fn(*args, **kwargs)

    wrapper.__name__ = fn.__name__
    return wrapper


@_env_setter
def machine(*val):
    if len(val) == 1 and isinstance(val[0], (list, tuple)):
        val = val[0]
    addrs = []
    for m in val:
        addr = m["addr"] if isinstance(m, dict) else m
        if not isinstance(addr, str):
            raise AssertionError("machine address must be a string, got %r" % (addr,))
        if addr in addrs:
            raise AssertionError("duplicate machine address %s" % addr)
        addrs.append(addr)
    sess.env_config().machines = addrs


@_env_setter
def ctrl_port(val):
    sess.env_config().ctrl_port = int(val)


@_env_setter
def data_port(val):
    sess.env_config().data_port = int(val)


@_env_setter
def log_dir(val):
    sess.env_config().log_dir = val


@_env_setter
def logtostderr(val):
    pass


@_env_setter
def logbuflevel(val):
    pass


def init():
    sess.default_session().init_runtime()
    return True


def current_resource():
    return sess.default_session().resource


def current_machine_id():
    s = sess.default_session()
    s.init_runtime()
    return s.runtime.machine_id


def get_rank():
    """This process's rank (0 .. world size - 1)."""
    return _world.job_rank()


def get_world_size():
    """The number of processes of the job."""
    return _world.job_size()


def get_local_rank():
    """This process's index on its node (its device: `cuda:<local rank>`)."""
    return _world.job_local_rank()


def get_node_size():
    """The number of nodes (the launcher's --nnodes)."""
    return _world.job_node_size()


def grpc_use_no_signal(val=True):
    """Deprecated in OneFlow v0.3.4 already, where it only printed this warning (env_util.py)."""
    import traceback

    print("WARNING:", "oneflow.env.grpc_use_no_signal is deprecated, users no longer need to set rpc use signal or "
          "not. \n", traceback.format_stack()[-2])


# v0.4.0, "only used by CI": the bootstrap of OneFlow's grpc control plane (refused, _api/refusals.py)
from oneflow_compat._api.refusals import GRPC as _GRPC, refused as _refused  # noqa: E402

init_bootstrap_confs = _refused("env.init_bootstrap_confs", _GRPC)


# --- api-autograd: OneFlow 0.9's distributed.rst / tensor_attributes.rst names of flow.env ---------------------------
from oneflow_compat._global.env_rdma import destory_rdma, init_rdma, rdma_is_initialized  # noqa: E402,F401
# (all_device_placement: bound by the package's __init__, from _global/env_placement.py)
