"""The legacy default session and legacy eager mode (legacy-api.md §2.1-2.2), as `flow.*` functions.

The session itself is `runtime/session.Session` (the one session type); which one is the default, and whether
eager mode is on, is process state held by the context (`runtime/context.py`).
"""
import atexit

from oneflow_compat.ir import builder
from oneflow_compat.runtime import context
from oneflow_compat.runtime.context import EnvConfig  # noqa: F401 - re-exported: what flow.env sets
from oneflow_compat.runtime.session import NOTHING_HAPPENED, ResourceConfig, Session  # noqa: F401 - re-exported


def default_session():
    ctx = context.get()
    if ctx.session is None:
        ctx.session = Session()
        ctx.session.eager = ctx.legacy_eager
    return ctx.session


def clear_default_session():
    ctx = context.get()
    if ctx.session is not None:
        ctx.session.close()
    ctx.session = Session()
    ctx.session.eager = ctx.legacy_eager


def sync_default_session():
    default_session().sync()


def enable_eager_execution(val=True):
    """Switch to eager mode. Job functions defined before it (the docs' eager_mlp_mnist.py decorates its job at
    import) then run eagerly too; only once lazy jobs were compiled (a first job call) is it too late."""
    from oneflow_compat.framework import client_mode

    client_mode.use(client_mode.LEGACY, "flow.enable_eager_execution")
    s = default_session()
    if s.status != "open" and not s.eager:
        raise NotImplementedError("no avaliable function found.\n  condition `session not initialized` failed: "
                                  "flow.enable_eager_execution must be called before the first job call")
    context.get().legacy_eager = bool(val)
    s.eager = bool(val)


def eager_execution_enabled():
    return default_session().eager


def env_config():
    """What `flow.env.*` set (it outlives sessions)."""
    return context.get().env


@atexit.register
def _close_at_exit():
    s = context.get().session
    if s is not None and s.status != "closed":
        s.close()


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
