"""`@flow.global_function`: registers a job function with the default session and makes it callable."""
import functools
import traceback

from oneflow_compat.framework import client_mode
from oneflow_compat.framework import function_config as fc
from oneflow_compat.framework import session as sess
from oneflow_compat.framework import signature
from oneflow_compat.runtime import activity, agreement

# A compiled job keeps its registers (and the session its variables) in place between calls, so calls from several
# threads take turns of one process-wide lock (`agreement.LOCK`, the one nn.Graph calls and eager global ops take),
# held from compilation to the delivered result. Re-entrant, since a result callback may call another job function.


def global_function(type="predict", function_config=None):  # noqa: A002 - the legacy keyword is `type`
    if isinstance(type, fc.FunctionConfig):
        caller = traceback.extract_stack()[-2]
        print("WARNING: flow.global_function(func_config) is deprecated. Please replace it with "
              "flow.global_function(type, func_config).")
        print("  File \"%s\", line %d, in %s" % (caller.filename, caller.lineno, caller.name))
        function_config, job_type = type, type.job_type or "predict"
    else:
        if type not in ["train", "predict"]:
            raise AssertionError("flow.global_function type must be 'train' or 'predict', got %r" % (type,))
        job_type = type
    config = (function_config or fc.FunctionConfig()).clone()
    config.job_type = job_type

    def decorator(func):
        client_mode.use(client_mode.LEGACY, "defining the job function '%s' (@flow.global_function)"
                        % getattr(func, "__name__", func))
        session = sess.default_session()
        if session.eager:
            from oneflow_compat.framework import eager

            return eager.EagerJobFunction(func, job_type, config)
        if session.status != "open":
            raise NotImplementedError(
                "no avaliable function found.\n"
                "  condition `session not initialized` failed: job function '%s' is defined after the session "
                "started (the first job call or checkpoint call compiles all job functions; define every job "
                "function before that, or call flow.clear_default_session() first)" % func.__name__)
        jf = JobFunction(func, job_type, config, session)
        session.add_job_function(jf)
        return jf.wrapper

    return decorator


class JobFunction:
    def __init__(self, func, job_type, config, session):
        self.func = func
        self.name = func.__name__
        self.job_type = job_type
        self.config = config
        self.session = session
        self.params = signature.parse_params(func)
        self.ret = signature.parse_return(func)
        self._eager = None

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            if kwargs:
                raise TypeError("job function '%s' does not accept keyword arguments (got %s); pass inputs "
                                "positionally" % (self.name, ", ".join(sorted(kwargs))))
            return self.call(args)

        wrapper.__oneflow_job_function__ = self
        self.wrapper = wrapper

    def call(self, args):
        # one turn of the process-wide lock, in the same order of threads on every rank (`agreement.in_turn`)
        return agreement.in_turn(self._call_in_frame, args)

    def _call_in_frame(self, args):
        # the frame names this job and call in every collective's report (timeouts, departures, mismatches)
        with activity.operation(self._describe_call, name_errors=False):
            return self._call(args)

    def _describe_call(self):
        compiled = self.session.compiled.get(self.name)
        return "job '%s'" % self.name if compiled is None else "job '%s' call #%d" % (self.name, compiled.calls)

    def _call(self, args):
        session = self.session
        session.check_open("job function '%s'" % self.name)
        if session.eager:  # defined in lazy mode, then flow.enable_eager_execution() before any call
            if self._eager is None:
                from oneflow_compat.framework import eager

                self._eager = eager.EagerJobFunction(self.func, self.job_type, self.config)
            return self._eager(*args)
        session.try_init()
        activity.install(session.runtime.comm)
        if len(args) != len(self.params):
            raise AssertionError("job function '%s' takes %d argument(s), %d given" % (
                self.name, len(self.params), len(args)))
        return session.compiled[self.name].call(args, self)
