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

What is not here, on purpose: per-thread state (gradient mode, the agreement chain of each thread, the frames of
`activity`), the process comm (one MPI world per process, `comm/world.py`), and registries filled at import
(ops, dtypes).
"""
import collections


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
        self.graph_traces = []  # (GraphTrace, GraphScope) of the nn.Graph builds being traced, innermost last
        self.buckets = {}  # persistent gradient buckets of eager data-parallel steps (runtime/buckets.py)

    def reset(self):
        """Forgets everything: a fresh process as far as this package is concerned (the test suite's hook)."""
        for session in (self.session, self.global_session):
            if session is not None and session.status != "closed":
                session.close()
        self._fresh()


_CONTEXT = Context()


def get():
    """The process's context."""
    return _CONTEXT


def reset():
    _CONTEXT.reset()
