"""What this thread runs, as every collective names it: the job or nn.Graph and its call number, or the eager
op and its number, and the op of the plan that issued the collective.

Each thread keeps a stack of frames (`operation`). The MPI comm asks `describe_current()` at the start of every
collective (`MPIComm.context`, set by `install`), so a timeout report, a departure report or a mismatch names what
each rank was running, e.g. "allgatherv in nn.Graph 'TrainGraph_0' call #3, op 'fc.weight-boxing-1'". The op
comes from `issued_by`, which wraps the collective functions a plan calls: naming costs nothing until a
collective starts.
"""
import threading

from oneflow_compat.comm import world
from oneflow_compat.kernels import checks


class _Frames(threading.local):
    def __init__(self):
        self.stack = []
        self.thread = threading.current_thread().name


_FRAMES = _Frames()
_COMM = {}  # "comm": the process comm the frames are installed on


def install(comm):
    """Let `comm` name this process's frames in what it reports (MPI comms; others report nothing)."""
    if world.thread_comm() is comm:  # a simulated rank's comm: this thread's alone (`installed_comm`)
        return
    if _COMM.get("comm") is not comm:
        _COMM["comm"] = comm
        if hasattr(comm, "context"):
            comm.context = describe_current


def installed_comm():
    """The comm `install` was given (None before); a simulated rank's in the thread that runs it."""
    bound = world.thread_comm()
    return bound if bound is not None else _COMM.get("comm")


def describe_current():
    """What this thread runs (innermost frame, then the frames around it), or None outside any frame."""
    stack = _FRAMES.stack
    if not stack:
        return None
    text = stack[-1].describe()
    for outer in reversed(stack[:-1]):
        text += " (within %s)" % outer.describe()
    if _FRAMES.thread != "MainThread":
        text += " in thread %r" % _FRAMES.thread
    return text


def thread_name():
    return _FRAMES.thread


def top():
    """The innermost frame of this thread, or None."""
    stack = _FRAMES.stack
    return stack[-1] if stack else None


def issued_by(op_name, fn):
    """`fn` (a plan's collective function), naming op `op_name` in the current frame while it runs."""
    def collective(*pieces):
        stack = _FRAMES.stack
        if not stack:
            return fn(*pieces)
        frame = stack[-1]
        frame.op = op_name
        try:
            return fn(*pieces)
        finally:
            frame.op = None
    return collective


class operation:  # noqa: N801 - used as a context manager
    """A frame: this thread runs `what` (a text, or a callable giving it when asked). With `name_errors`, a comm
    error leaving it is prefixed with this rank and `what`, and other errors get a note naming it."""

    __slots__ = ("what", "number", "op", "checking", "name_errors")

    def __init__(self, what, name_errors=True):
        self.what = what
        self.number = None   # the global op number (`agreement.global_op`)
        self.op = None       # the op whose collective runs now (`issued_by`)
        self.checking = False  # the ranks are comparing what they run (`agreement.global_op`)
        self.name_errors = name_errors

    def text(self):
        return self.what() if callable(self.what) else self.what

    def describe(self):
        text = self.text()
        if self.number is not None:
            text += ", global op #%d" % self.number
        if self.op is not None:
            text += ", op '%s'" % self.op
        if self.checking:
            text += ", identity check"
        return text

    def __enter__(self):
        _FRAMES.stack.append(self)
        return self

    def __exit__(self, exc_type, e, tb):
        _FRAMES.stack.pop()
        if e is None or not self.name_errors or getattr(e, "_named_operation", False):
            return False
        from oneflow_compat.comm.process_comm import CommError

        what = self.text()
        if isinstance(e, CommError):
            if e.args and what in str(e.args[0]):
                return False  # the comm already named it
            comm = _COMM.get("comm")
            rank = comm.rank if comm is not None else 0
            e.args = ("rank %d, in %s: %s" % (rank, what, e.args[0] if e.args else ""),) + tuple(e.args[1:])
        elif hasattr(e, "add_note"):
            e.add_note("(while running %s)" % what)
        try:
            e._named_operation = True
        except AttributeError:
            pass
        return False


def _note_of_device_check():
    """The note the innermost naming frame would give an error raised now: a device check made now gets it
    (kernels/checks.py), as its host twin's error would."""
    for frame in reversed(_FRAMES.stack):
        if frame.name_errors:
            return "(while running %s)" % frame.text()
    return None


checks.note_context(_note_of_device_check)
