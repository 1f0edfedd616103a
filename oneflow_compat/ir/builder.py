"""The context in which a job function's body runs: which job receives new ops, and the current scope
(placement, logical view, namespace, section).

Lazy mode appends ops; eager mode also runs each op as it is added (see `framework/eager.py`).
"""
import threading

from oneflow_compat.ir.graph import LazyBlob

# the build contexts open in each thread: ranks simulated as threads of one process (comm/simulated.py) compile
# their jobs (nn.Graph's, eager ops') at the same time, each in its own stack
_LOCAL = threading.local()


def _stack():
    stack = getattr(_LOCAL, "stack", None)
    if stack is None:
        stack = _LOCAL.stack = []
    return stack


class BuildContext:
    def __init__(self, job, session, placement, view, eager=None):
        self.job = job
        self.session = session
        self.placements = [placement]
        self.views = [view]
        self.namespaces = []
        self.section = "forward"
        self.eager = eager  # an eager.EagerRunner, or None in lazy mode

    @property
    def placement(self):
        return self.placements[-1]

    @property
    def view(self):
        return self.views[-1]

    def check_input(self, x, op_type):
        """`x` may feed an op of this job: a blob of the same job function (view casts are the op factory's)."""
        if not isinstance(x, LazyBlob):
            raise TypeError("op '%s' expects blobs as inputs, got %s" % (op_type, type(x).__name__))
        if x.op.job is not self.job:
            raise ValueError("op '%s' received blob %s of job '%s' inside job '%s': a blob cannot cross job "
                             "functions" % (op_type, x.logical_blob_name, x.op.job.name, self.job.name))
        return x

    def add_op(self, op):
        self.job.add(op)
        if self.eager is not None:
            self.eager.run_op(op)


def push(ctx):
    _stack().append(ctx)
    return ctx


def pop(ctx):
    stack = _stack()
    if not (stack and stack[-1] is ctx):
        raise AssertionError()
    stack.pop()


def current(what="this"):
    stack = _stack()
    if not stack:
        raise RuntimeError("%s can only be used inside a job function (a function decorated with "
                           "@flow.global_function) while it is being built" % what)
    return stack[-1]


def current_or_none():
    stack = _stack()
    return stack[-1] if stack else None


class Scoped:
    """Runs a body with `ctx` current and restores the stack even when the body raises."""

    def __init__(self, ctx):
        self.ctx = ctx

    def __enter__(self):
        return push(self.ctx)

    def __exit__(self, *exc):
        pop(self.ctx)
        return False
