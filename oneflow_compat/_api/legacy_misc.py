"""Small legacy names of OneFlow v0.3.4 around sessions, scopes and dtypes: `flow.current_machine_id`,
`flow.current_resource`, `flow.find_or_create_module`, `flow.inter_job_reuse_mem_strategy`, `flow.is_deprecated`,
`flow.dtypes`, the deprecated `flow.name_scope` spellings, `flow.experimental.scope.config`,
`flow.experimental.enable_typing_check`, `flow.util.unique_str`, and the refused worker management of
`flow.deprecated`.

Sources: OneFlow v0.3.4 `oneflow/python/framework/env_util.py`, `session_util.py`, `job_set_util.py`,
`oneflow_export.py`, `dtype.py`, `scope_util.py`, `id_util.py`, `experimental/name_scope.py`,
`experimental/enable_typing_check.py`, `deprecated/init_cluster_env.py`.
"""
import itertools
import traceback

from oneflow_compat.ir import builder, dtypes as _dtypes
from oneflow_compat.framework import session as sess


def current_machine_id():
    """This process's machine id (its MPI rank); starts the runtime as OneFlow's env initialisation does."""
    from oneflow_compat import env

    return env.current_machine_id()


def current_resource():
    """The session's resource configuration (machine_num, gpu_device_num, cpu_device_num, …)."""
    return sess.default_session().resource


def find_or_create_module(module_name, create, reuse=False):
    """The module of this name in the job being built, made by `create()` the first time; asking again for a
    name already used in this session is an error unless `reuse` (OneFlow's session rule)."""
    assert callable(create)
    ctx = builder.current("flow.find_or_create_module")
    session = sess.default_session()
    modules = session.__dict__.setdefault("_legacy_modules", {})
    used = session.__dict__.setdefault("_legacy_module_names", set())
    per_job = modules.setdefault(ctx.job.name, {})
    if module_name not in per_job:
        per_job[module_name] = create()
    elif not reuse:
        assert module_name not in used, "duplicated module_name `%s' in global_function `%s'" % (
            module_name, ctx.job.name)
    used.add(module_name)
    return per_job[module_name]


_REUSE_STRATEGIES = ("reuse_mem_priority", "parallelism_priority", "custom_parallelism")


def inter_job_reuse_mem_strategy(strategy_str, job_set=None, **kwargs):
    """Accepted and checked, with no effect: OneFlow chose how jobs share device memory; here every job plans its
    own registers."""
    assert type(strategy_str) is str
    if strategy_str == "custom_parallelism":
        assert kwargs["job_name_groups"] is not None
        for group in kwargs["job_name_groups"]:
            for job_name in group:
                assert type(job_name) is str


_DEPRECATED = set()


def deprecate(fn):
    """Marks a function as deprecated, as OneFlow's @oneflow_deprecate does."""
    _DEPRECATED.add(fn)
    return fn


def is_deprecated(func_or_class):
    """Whether the function or class was marked deprecated."""
    try:
        return func_or_class in _DEPRECATED
    except TypeError:  # unhashable
        return False


def dtypes():
    """Every legacy dtype object, in OneFlow's order."""
    return [_dtypes.char, _dtypes.float32, _dtypes.float32, _dtypes.float64, _dtypes.float64, _dtypes.float16,
            _dtypes.int8, _dtypes.int32, _dtypes.int64, _dtypes.uint8, _dtypes.record, _dtypes.tensor_buffer]


@deprecate
def name_scope(*args, **kwargs):
    """`flow.name_scope` / `flow.experimental.name_scope` / `flow.deprecated.variable_scope`: prints OneFlow's
    deprecation warning and the caller's line, then is `flow.scope.namespace`."""
    from oneflow_compat import scope

    print("WARNING:", "oneflow.name_scope/oneflow.experimental.name_scope/deprecated.variable_scope",
          "will be removed in the future, use {} instead.".format("oneflow.scope.namespace"))
    print(traceback.format_stack()[-2])
    return scope.namespace(*args, **kwargs)


# the scope attributes OneFlow v0.3.4 registers (REGISTER_SCOPE_CONFIG_DEF) and their defaults, and those v0.4.0 adds
# (core/job/pipeline_config_def.cpp, qat_config_def.cpp): GPT marks its pipeline stages with pipeline_stage_id_hint,
# which places OneFlow's pipeline buffers (scheduling, never values; the stages' placements already differ)
SCOPE_CONFIG_DEFAULTS = {"checkpointing": False, "ssp_num_stages": -1, "ssp_stage_id": -1,
                         "pipeline_stage_id_hint": 0, "quantization_aware_training": True}


class scope_config:  # noqa: N801 - OneFlow's name (experimental.scope.config)
    """`with flow.experimental.scope.config(checkpointing=True): ...` — the scope attributes of OneFlow.
    Recomputing activations (checkpointing) and SSP stages change memory and scheduling, never values: they are
    recorded on the build context for the ops built inside, and have no other effect here."""

    def __init__(self, **kwargs):
        for name in kwargs:
            assert name in SCOPE_CONFIG_DEFAULTS, "unknown scope attribute %r (OneFlow v0.4.0 has %s)" % (
                name, ", ".join(sorted(SCOPE_CONFIG_DEFAULTS)))
        self.attrs = kwargs

    def __enter__(self):
        ctx = builder.current("flow.experimental.scope.config")
        self._ctx = ctx
        stack = ctx.__dict__.setdefault("scope_attrs", [dict(SCOPE_CONFIG_DEFAULTS)])
        stack.append(dict(stack[-1], **self.attrs))
        return self

    def __exit__(self, *exc):
        self._ctx.scope_attrs.pop()
        return False


_TYPING_CHECK = [False]


def enable_typing_check(val=True):
    """Turns OneFlow's run-time typing check of job-function annotations on or off; only before any job function
    is defined (OneFlow's condition). The annotations are always checked here."""
    session = sess.default_session()
    if getattr(session, "job_functions", None):
        raise NotImplementedError("flow.experimental.enable_typing_check must be called before any global function "
                                  "is defined")
    _TYPING_CHECK[0] = bool(val)


def typing_check_enabled():
    return _TYPING_CHECK[0]


_IDS = itertools.count()


def unique_str(prefix):
    """prefix followed by a number unique in this process (OneFlow's id_util.UniqueStr)."""
    return "%s%d" % (prefix, next(_IDS))


class Module:
    """`flow.deprecated.nn.Module` (OneFlow v0.4.0 `framework/module.py`): a named callable whose `forward` builds
    ops; `call_seq_no` counts the calls."""

    def __init__(self, name=None):
        if name is None:
            name = unique_str("Module_")
        self.module_name_ = name
        self.call_seq_no_ = 0

    @property
    def module_name(self):
        return self.module_name_

    @property
    def call_seq_no(self):
        return self.call_seq_no_

    # only for overriding; do not call module.forward(*args) directly
    def forward(self, *args):
        raise NotImplementedError()

    def __call__(self, *args):
        ret = self.forward(*args)
        self.call_seq_no_ = self.call_seq_no_ + 1
        return ret

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # OneFlow asserted it in __del__ ("do not override __call__"); here when the class is defined
        assert cls.__call__ is Module.__call__, "do not override __call__"


def InitEagerGlobalSession():  # noqa: N802 - OneFlow's name
    """OneFlow v0.4.0 initialized its C++ eager session with the default config before eager tensors were used;
    eager execution needs no session set-up here, so this does nothing."""
