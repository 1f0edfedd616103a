"""`flow.losses.add_loss` (legacy optimizer API: marks a loss for `func_config.train.*`).

OneFlow v0.3.4 (`ops/losses/add_loss.py`) dispatches it with `enable_if.unique` to a lazy or an eager
implementation, both conditioned on `hob.in_global_mode & hob.is_trainable`: outside a job function, or in a
predict job, neither matches and the call raises NotImplementedError("no avaliable function found. ...") listing
both conditions as FAILED. The same error is raised here, with the same text.
"""
from oneflow_compat.framework import session as _session
from oneflow_compat.ir import builder as _builder


def add_loss(loss):
    ctx = _builder.current_or_none()
    if ctx is None or not ctx.job.is_train:
        in_global = ctx is not None
        eager = _session.eager_execution_enabled()
        state = "in_global_mode: %s, is_trainable: %s, eager_execution_enabled: %s" % (
            in_global, in_global and ctx.job.is_train, eager)
        raise NotImplementedError(
            "no avaliable function found.\n"
            "\nlazy_add_loss: FAILED\n\t(in_global_mode and is_trainable and not eager_execution_enabled) [%s]\n"
            "\neager_add_loss: FAILED\n\t(in_global_mode and is_trainable and eager_execution_enabled) [%s]\n"
            "(flow.losses.add_loss belongs inside a train job function)" % (state, state))
    _session.add_loss(loss)
