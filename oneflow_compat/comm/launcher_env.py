"""OneFlow's launch variables — MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK — read and checked.

`python -m oneflow.distributed.launch` sets them for every process it starts (so may a user, by hand, in several
terminals). OneFlow's rule: all five are set or none is; none means a world of one process. This module only
reads the environment (no MPI, no numpy), so `import oneflow` can apply the rule before anything starts.

The launcher also sets two variables of this project's own:
* `ONEFLOW_COMPAT_NODE_SIZE` — the number of nodes (`--nnodes`), for `flow.env.get_node_size()`;
* `ONEFLOW_COMPAT_RENDEZVOUS=launcher` — the node-0 launcher serves the port-name exchange at
  MASTER_ADDR:MASTER_PORT (`rendezvous.py`); unset, the first process of the job serves it itself.
"""
import os
from collections import namedtuple

VARIABLES = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK")
NODE_SIZE_ENV = "ONEFLOW_COMPAT_NODE_SIZE"
RENDEZVOUS_ENV = "ONEFLOW_COMPAT_RENDEZVOUS"

LaunchEnvironment = namedtuple("LaunchEnvironment", "master_addr master_port world_size rank local_rank")


class LaunchEnvironmentError(ValueError):
    """The launch variables are partly set, not numbers, or contradict each other."""


def _integer(environ, name, low, high=None):
    text = environ[name]
    try:
        value = int(text.strip())
    except ValueError:
        raise LaunchEnvironmentError("environment variable %s=%r is not an integer" % (name, text)) from None
    if value < low or (high is not None and value >= high):
        bound = "%d <= %s" % (low, name) + ("" if high is None else " < %d" % high)
        raise LaunchEnvironmentError("environment variable %s=%d is out of range (%s)" % (name, value, bound))
    return value


def read_launch_environment(environ=None):
    """The five variables as a `LaunchEnvironment`, or None when none is set; `LaunchEnvironmentError` when only
    some are set or their values are impossible."""
    environ = os.environ if environ is None else environ
    present = [name for name in VARIABLES if name in environ]
    if not present:
        return None
    if len(present) != len(VARIABLES):
        missing = [name for name in VARIABLES if name not in environ]
        raise LaunchEnvironmentError(
            "MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK and LOCAL_RANK must be all set or all unset (as OneFlow "
            "requires); set: %s; unset: %s. Start the processes with `python -m oneflow.distributed.launch`, or "
            "unset them for a single process" % (", ".join(present), ", ".join(missing)))
    world_size = _integer(environ, "WORLD_SIZE", 1)
    if not environ["MASTER_ADDR"].strip():
        raise LaunchEnvironmentError("environment variable MASTER_ADDR is empty")
    return LaunchEnvironment(master_addr=environ["MASTER_ADDR"].strip(),
                             master_port=_integer(environ, "MASTER_PORT", 1, 65536),
                             world_size=world_size,
                             rank=_integer(environ, "RANK", 0, world_size),
                             local_rank=_integer(environ, "LOCAL_RANK", 0))


def node_size(environ=None):
    """Number of nodes the launcher said (`--nnodes`), or None when it did not say."""
    environ = os.environ if environ is None else environ
    if NODE_SIZE_ENV not in environ:
        return None
    try:
        value = int(environ[NODE_SIZE_ENV])
    except ValueError:
        raise LaunchEnvironmentError("environment variable %s=%r is not an integer"
                                     % (NODE_SIZE_ENV, environ[NODE_SIZE_ENV])) from None
    if value < 1:
        raise LaunchEnvironmentError("environment variable %s=%d must be >= 1" % (NODE_SIZE_ENV, value))
    return value


def launcher_serves_rendezvous(environ=None):
    environ = os.environ if environ is None else environ
    return environ.get(RENDEZVOUS_ENV, "").strip().lower() == "launcher"
