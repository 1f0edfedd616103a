"""The default session: registered job functions, their compiled plans, variables, and the lifecycle rules of
OneFlow v0.3 (legacy-api.md §2.1): decoration registers; the first job call or checkpoint call traces and compiles
every registered job together and initializes all variables; afterwards nothing can be defined."""
import atexit
import os
import random

from oneflow_compat.ir import builder
from oneflow_compat.runtime.variables import VarStore

NOTHING_HAPPENED = "Nothing happened because the session is running"


class ResourceConfig:
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


class EnvConfig:
    """What `flow.env.*` sets; it survives `clear_default_session` (legacy: the env outlives sessions)."""

    def __init__(self):
        self.machines = None
        self.ctrl_port = None
        self.data_port = None
        self.log_dir = None
        self.initialized = False


ENV = EnvConfig()


class Session:
    def __init__(self):
        self.status = "open"
        self.resource = ResourceConfig()
        self.job_functions = {}
        self.jobs = {}
        self.compiled = {}
        self.vars = VarStore(self)
        self.runtime = None
        self.eager = False
        self.root_seed = None

    # --- lifecycle -----------------------------------------------------------------------------------------
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
        from oneflow_compat.framework import trace
        from oneflow_compat.passes import pipeline
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
        compiled = {name: CompiledJob(self, pipeline.compile_job(self, job)) for name, job in jobs.items()}
        pipeline.check_same_plans_across_ranks(self, compiled)
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
        ENV.initialized = True
        self.runtime = Runtime(comm, comm.rank)
        seed = os.environ.get("ONEFLOW_COMPAT_SEED")
        root = int(seed) if seed is not None else random.SystemRandom().randrange(2 ** 62)
        self.root_seed = comm.bcast_object(root, root=0)

    def machine_num(self):
        if self.resource.machine_num is not None:
            return self.resource.machine_num
        if ENV.machines is not None:
            return len(ENV.machines)
        from oneflow_compat.comm import world

        w = world.detect_mpi_world()
        return w[1] if w else 1

    def sync(self):
        """Job calls complete before they return (callbacks included), so there is nothing left to wait for."""

    def close(self):
        self.sync()
        self.status = "closed"


_SESSION = None


def default_session():
    global _SESSION
    if _SESSION is None:
        _SESSION = Session()
    return _SESSION


def clear_default_session():
    global _SESSION
    if _SESSION is not None:
        _SESSION.close()
    _SESSION = Session()
    if _EAGER_FLAG[0]:
        _SESSION.eager = True


def sync_default_session():
    default_session().sync()


_EAGER_FLAG = [False]


def enable_eager_execution(val=True):
    """Switch to eager mode. Job functions defined before it (the docs' eager_mlp_mnist.py decorates its job at
    import) then run eagerly too; only once lazy jobs were compiled (a first job call) is it too late."""
    from oneflow_compat.framework import client_mode

    client_mode.use(client_mode.LEGACY, "flow.enable_eager_execution")
    s = default_session()
    if s.status != "open" and not s.eager:
        raise NotImplementedError("no avaliable function found.\n  condition `session not initialized` failed: "
                                  "flow.enable_eager_execution must be called before the first job call")
    _EAGER_FLAG[0] = bool(val)
    s.eager = bool(val)


def eager_execution_enabled():
    return default_session().eager


@atexit.register
def _close_at_exit():
    if _SESSION is not None and _SESSION.status != "closed":
        _SESSION.close()


# --- called from the public API ----------------------------------------------------------------------------
def register_minimize(optimizer, loss):
    ctx = builder.current_or_none()
    if ctx is None:
        raise RuntimeError("Optimizer's Variables() or minimize() method should be called inside a Job Function "
                           "to implicitly get variables from a job.")
    job = ctx.job
    if not job.is_train:
        raise RuntimeError("minimize() is only allowed in a train job; job '%s' was declared with "
                           "@flow.global_function(type=\"%s\")" % (job.name, job.type))
    losses = list(loss) if isinstance(loss, (list, tuple)) else [loss]
    # Legacy: one optimizer per job; a second minimize replaces the whole train conf, losses included.
    job.optimizer = optimizer
    job.losses = losses  # (eager mode runs backward and the update once the body has returned)


def add_loss(loss):
    ctx = builder.current_or_none()
    if ctx is None or not ctx.job.is_train:
        raise RuntimeError("flow.losses.add_loss can only be called inside a train job function")
    ctx.job.losses.append(loss)
