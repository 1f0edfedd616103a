"""Which of OneFlow's two APIs this process uses: the legacy job functions or the global tensors ("client mode").

The `oneflow` namespace carries both APIs, but one process runs one of them. They differ in what a process is
(legacy: a machine driving `flow.config.gpu_device_num(n)` devices, jobs compiled together on the first call;
global tensors: one rank = one device, every op eager) — OneFlow 0.5 kept them apart too: importing
`oneflow.compatible.single_client` switched the process to the legacy single client, and the two could not be
used together. So the first use of either API chooses the mode for the process, and the first use of the other one
is an error that says what was mixed, where, and what to do. Importing `oneflow` chooses nothing, and what both
APIs share (`flow.env`, `flow.sbp`, the dtypes, names such as `flow.matmul` that dispatch on their arguments)
chooses nothing either.

First uses (each entry point calls `use(...)`):
* legacy: defining a `@flow.global_function`, a `flow.config.*` resource call, `flow.scope.placement(...)`,
  `flow.enable_eager_execution()`, importing `oneflow.compatible.single_client`;
* global tensors: creating a `flow.Tensor` (every creation op and every op result), `flow.placement(...)`,
  creating a `flow.nn.Module`.

`reset()` forgets the choice. A program has no reason to call it (`flow.clear_default_session()` does not lift
the choice: live tensors or job functions of the other API may still exist); the test suite, which runs both
families of tests in one process, resets the whole context between tests (tests/conftest.py).
"""
import contextlib
import importlib
import os
import sys

from oneflow_compat.runtime import context

LEGACY = "legacy"
GLOBAL = "global"

_API = {
    LEGACY: "the legacy job-function API (@flow.global_function, flow.config, flow.scope.placement)",
    GLOBAL: "the global-tensor API of OneFlow 0.5+ (flow.Tensor, flow.placement, flow.nn.Module)",
}

# the context holds [mode, what chose it, where] (`context.api`): the fast path in `use` is one item read and one
# comparison (`reset()` of the context keeps the object, so it is read once here)
_CTX = context.CURRENT
_NEUTRAL = [0]  # > 0 inside `neutral()` (a scope, not process state: it is back to 0 when the scope ends)

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# frames skipped when naming the user's call: this package (and a checkout's kernels/), the `oneflow` alias hook,
# and the import machinery (an import of oneflow.compatible.single_client passes through importlib)
_INTERNAL = (_PACKAGE_DIR + os.sep,
             os.path.join(os.path.dirname(_PACKAGE_DIR), "kernels") + os.sep,
             os.path.join(os.path.dirname(_PACKAGE_DIR), "oneflow_compat_alias.py"),
             os.path.dirname(importlib.__file__) + os.sep)


def choice_holder():
    """The object whose `api[0]` is the mode chosen (the process context), for callers that check it per op."""
    return _CTX


def current():
    """`LEGACY`, `GLOBAL`, or None while neither API was used."""
    return _CTX.api[0]


def use(mode, what):
    """Records that `what` (e.g. "creating a flow.Tensor") uses the API `mode`; an error if the process already
    uses the other one. Cheap when the mode is already `mode` (it runs for every tensor an op creates)."""
    choice = _CTX.api
    if choice[0] == mode or _NEUTRAL[0]:
        return
    if choice[0] is None:
        choice[:] = [mode, what, _caller()]
        return
    raise RuntimeError(mixing_message(mode, what, _caller()))


@contextlib.contextmanager
def neutral():
    """Inside, `use` records and checks nothing: for the objects both APIs share that are built on a class of
    one of them (OneFlow v0.4.0's `flow.model.Model` and data modules subclass nn.Module whichever style they run
    in)."""
    _NEUTRAL[0] += 1
    try:
        yield
    finally:
        _NEUTRAL[0] -= 1


def mixing_message(mode, what, where):
    old, first, first_where = _CTX.api
    return ("mixing OneFlow's two APIs in one process: %s at %s belongs to %s, but this process already uses %s "
            "since %s at %s. A process runs one of them, as in OneFlow 0.5: keep the program to one API, or run "
            "each part as a separate program." % (what, where, _API[mode], _API[old], first, first_where))


def reset():
    """Forgets the mode chosen (`context.reset()` does it too; see the module docstring)."""
    _CTX.api[:] = [None, None, None]


def _caller():
    """`file:line` of the user's code that made the call: the innermost frame outside this package and the import
    machinery."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if not (name.startswith(_INTERNAL) or name.startswith("<frozen ")):
            return "%s:%d" % (name, frame.f_lineno)
        frame = frame.f_back
    return "unknown location"
