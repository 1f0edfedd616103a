"""The session: what compiling and running a job sees of the process — the one session type of both APIs.

Ops' builders (`DeviceSlot.session`), the passes and the executable read from it the process runtime (`runtime`:
comm, local devices, device moves), the root seed random ops derive their seeds from (`root_seed`), the variables
(`vars`) and per-op state that outlives one built closure (`op_state`: call counters of dropout and data readers,
so that a rebuilt op goes on where the last one stopped).

Three kinds of session exist, all of this type:
* the legacy default session (`framework/session.py`, `kind="legacy"`), with the lifecycle of OneFlow v0.3
  (legacy-api.md §2.1): decoration registers job functions; the first job call or checkpoint call traces and
  compiles every registered job together and initializes all variables; afterwards nothing can be defined. Its
  resource configuration (`flow.config.*`) chooses the devices;
* the session of the global-tensor API (`runtime/global_eager.py`, `kind="global"`): eager ops and their plans,
  no root seed (global random ops draw from the generators of `_global/generators.py`);
* the session of one nn.Graph (`runtime/graph_trace.py`, `kind="graph"`): the graph's variables, and the root
  seed of its random ops (dropout in `build`).
"""
import os
import random

from oneflow_compat.runtime import context
from oneflow_compat.runtime.variables import VarStore

NOTHING_HAPPENED = "Nothing happened because the session is running"


class ResourceConfig:
    """`flow.config.*`: the devices of each machine of a legacy session."""

    def __init__(self):
        from oneflow_compat.backend import devices

        self.gpu_device_num = 1 if devices.cuda_usable() else 0
        self.cpu_device_num = 1
        self.machine_num = None  # None: from flow.env.machine / the MPI world
        self.legacy_model_io = False
        self.debug_mode = False
        self.gpu_requested = False  # flow.config.gpu_device_num(n > 0) without a usable CUDA device

    @property
    def devices_per_machine(self):
        return self.gpu_device_num if self.gpu_device_num > 0 else self.cpu_device_num

    @property
    def default_device_tag(self):
        return "gpu" if self.gpu_device_num > 0 else "cpu"

    @property
    def requested_device_tag(self):
        """The default tag as the script asked: `gpu_device_num(n)` asks for "gpu" even where it falls back to CPU."""
        return "gpu" if self.gpu_device_num > 0 or self.gpu_requested else "cpu"


class Session:
    """See the module docstring. `runtime`: given (global and graph sessions) or made at the legacy session's
    start (`init_runtime`)."""

    def __init__(self, kind="legacy", runtime=None, root_seed=None):
        self.kind = kind
        self.status = "open"
        self.runtime = runtime
        self.root_seed = root_seed
        self.vars = VarStore(self)
        self.op_state = {}  # per-op state that outlives a built closure (ops/nn_ops.py, ops/data_ops.py)
        self.eager = False  # legacy eager mode (flow.enable_eager_execution)
        self.job_functions = {}
        self.jobs = {}
        self.compiled = {}
        self._resource = None

    @property
    def resource(self):
        if self._resource is None:
            self._resource = ResourceConfig()
        return self._resource

    # --- lifecycle of the legacy session -------------------------------------------------------------------
    @property
    def is_running(self):
        return self.status == "running"

    def check_open(self, what):
        if self.status == "closed":
            raise AssertionError("%s: this session was closed by flow.clear_default_session(); "
                                 "define the job function again" % what)

    def add_job_function(self, jf):
        self.job_functions[jf.name] = jf  # legacy: same __name__ silently replaces the earlier registration

    def try_init(self):
        self.check_open("session")
        if self.status == "open":
            self.init()
        return self

    def init(self):
        """Traces every registered job function, compiles the jobs together (`passes/pipeline.py`), checks that
        every rank compiled the same plans, initializes the variables and binds them."""
        from oneflow_compat.framework import trace
        from oneflow_compat.passes import pipeline
        from oneflow_compat.runtime import executable
        from oneflow_compat.runtime.executor import CompiledJob

        if self.eager:
            self.init_runtime()
            self.status = "running"
            return
        if not (len(self.job_functions) > 0):
            raise AssertionError("no job function is defined (decorate one with @flow.global_function)")
        self.init_runtime()
        jobs = {}
        for name, jf in self.job_functions.items():
            jobs[name] = trace.trace_job(self, jf)
        compiled = {name: CompiledJob(self, pipeline.compile_job(self, job, pipeline.LEGACY_JOB))
                    for name, job in jobs.items()}
        executable.check_same_plans_across_ranks(
            self.runtime.comm, [("plan of job '%s'" % name, compiled[name].job) for name in sorted(compiled)],
            ("job list", sorted(compiled)))
        self.jobs, self.compiled = jobs, compiled
        for spec in self.vars.specs.values():
            self.vars.initialize(spec)
        for c in compiled.values():
            c.bind()
        self.status = "running"

    def init_runtime(self):
        if self.runtime is not None:
            return
        from oneflow_compat.comm import world
        from oneflow_compat.runtime.runtime import Runtime

        comm = world.get_process_comm()
        machine_num = self.machine_num()
        if machine_num != comm.size:
            raise RuntimeError("rank %d: %d machine(s) configured (flow.env.machine / flow.config.machine_num) but "
                               "the job runs on %d process(es); under mpiexec start one process per machine"
                               % (comm.rank, machine_num, comm.size))
        context.get().env.initialized = True
        self.runtime = Runtime(comm, comm.rank, self.resource.devices_per_machine)
        seed = os.environ.get("ONEFLOW_COMPAT_SEED")
        root = int(seed) if seed is not None else random.SystemRandom().randrange(2 ** 62)
        self.root_seed = comm.bcast_object(root, root=0)

    def machine_num(self):
        if self.resource.machine_num is not None:
            return self.resource.machine_num
        env = context.get().env
        if env.machines is not None:
            return len(env.machines)
        from oneflow_compat.comm import world

        w = world.detect_mpi_world()
        return w[1] if w else 1

    def sync(self):
        """Calls complete before they return (callbacks included), so there is nothing left to wait for."""

    def close(self):
        self.sync()
        self.status = "closed"
