"""`flow.current_global_function_desc()` and `flow.current_scope()`: what a legacy job function's body can ask
about the job being built."""
from oneflow_compat.ir import builder


def current_global_function_desc():
    """The description of the job being built (legacy: `IsTrainable()` on it)."""
    ctx = builder.current("flow.current_global_function_desc")
    return FunctionDesc(ctx.job)


class FunctionDesc:
    def __init__(self, job):
        self.job = job

    def IsTrainable(self):  # noqa: N802 - legacy name
        return self.job.is_train

    @property
    def job_config(self):
        return self.job.config


def current_scope():
    return builder.current_or_none()
