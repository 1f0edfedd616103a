"""The process state, in one explicit object: `context.get()`.

Everything a process remembers between calls of either API lives here, not in module globals: the legacy default
session and whether legacy eager mode is on, the cluster settings of `flow.env` (they outlive sessions), which of
OneFlow's two APIs the process uses (`framework/client_mode.py`), the session of the global-tensor API (eager
ops and nn.Graph), the compiled one-op plans of eager ops with their backward plans, the boxing log `explain`
prints for eager programs, the persistent gradient buckets of eager data-parallel steps, the reports of compiled
graphs, and the graphs whose `build` is being traced. Per-op
state that must outlive one built closure (dropout and data-reader call counters) lives with the session that
ran the op (`Session.op_state`), so it goes with the session.

`reset()` forgets all of it (closing the legacy session): the test suite, which runs programs of both APIs in one
process, calls it around every test (tests/conftest.py). A program has no reason to call it.

Simulated ranks (`explain --ranks N` of a global-tensor program: N threads of one process, `tools/explain_ranks.py`)
each run with a context of their own: `bound(ctx)` makes `get()` return `ctx` in the calling thread. Modules that
keep the context in a name hold `CURRENT`, which stands for whatever `get()` returns in the thread that reads it.

The default random generators of the global-tensor API are here too (one pair per process, or per simulated
rank), kept across `reset()`.

What is not here, on purpose: per-thread state (gradient mode, the agreement chain of each thread, the frames of
`activity`), the process comm (one MPI world per process, `comm/world.py`), and registries filled at import
(ops, dtypes).
"""
import collections
import contextlib
import threading


class EnvConfig:
    """What `flow.env.*` sets; it survives `clear_default_session` (legacy: the env outlives sessions)."""

    def __init__(self):
        self.machines = None
        self.ctrl_port = None
        self.data_port = None
        self.log_dir = None
        self.initialized = False


class Context:
    """The state of this process (see the module docstring)."""

    def __init__(self):
        self._fresh()
        # the global-tensor API's default random generators (_global/generators.py makes them on first use): a
        # process's, so a simulated rank has its own pair as a separate process would; kept by `reset()`, as a
        # process keeps its generators when its sessions are cleared
        self.generators = None

    def _fresh(self):
        self.session = None  # the legacy default session (framework/session.py creates it on first use)
        self.legacy_eager = False  # flow.enable_eager_execution(): sessions made from now on are eager
        self.env = EnvConfig()
        self.api = [None, None, None]  # [mode, what chose it, where] (framework/client_mode.py)
        self.global_session = None  # the session of eager global ops and nn.Graph (runtime/global_eager.py)
        self.eager_plans = collections.OrderedDict()  # compiled one-op plans of eager ops, by layout key
        self.boxing_log = collections.OrderedDict()  # BoxingRecord -> calls, of eager ops on this rank
        self.local_placements = {}  # device tag -> the placement of this rank's local tensors
        self.graph_reports = collections.OrderedDict()  # graph name -> GraphReport (runtime/graph_report.py)
        self.graph_instances = collections.Counter()  # nn.Graph class name -> instances made ('TrainGraph_0', ...)
        self.graph_traces = []  # (GraphTrace, GraphScope) of the nn.Graph builds being traced, innermost last
        self.buckets = {}  # persistent gradient buckets of eager data-parallel steps (runtime/buckets.py)

    def reset(self):
        """Forgets everything: a fresh process as far as this package is concerned (the test suite's hook).

        The device checks still pending in this thread (kernels/checks.py: made by a step whose results were never
        read) are dropped too: on the first GPU run a kernel test that never read its results left 'gather:
        negative index -1' pending, and the next test's unrelated job raised it."""
        from oneflow_compat.kernels import checks

        for session in (self.session, self.global_session):
            if session is not None and session.status != "closed":
                session.close()
        checks.discard_pending()
        self._fresh()


_CONTEXT = Context()


class _Bound(threading.local):
    context = None  # the context of a simulated rank running in this thread (None: the process's)


_BOUND = _Bound()


def get():
    """The process's context (a simulated rank's, in the thread that runs it: `bound`)."""
    return _BOUND.context or _CONTEXT


# For per-op fast paths that cannot afford a call: `THREAD.context or PROCESS` is `get()` inline (the process's
# object is never replaced: `reset()` refills it).
THREAD, PROCESS = _BOUND, _CONTEXT


@contextlib.contextmanager
def bound(ctx):
    """`get()` is `ctx` in this thread while inside (a simulated rank: its own session, plans, boxing log, ...)."""
    saved, _BOUND.context = _BOUND.context, ctx
    try:
        yield ctx
    finally:
        _BOUND.context = saved


class _Current:
    """Stands for `get()`: every attribute read or set is the current context's (for modules that keep the context
    in a module-level name)."""
    __slots__ = ()

    def __getattribute__(self, name):  # not __getattr__: that runs only after a failed lookup (an exception each)
        return getattr(_BOUND.context or _CONTEXT, name)

    def __setattr__(self, name, value):
        setattr(_BOUND.context or _CONTEXT, name, value)


CURRENT = _Current()


def reset():
    _CONTEXT.reset()
