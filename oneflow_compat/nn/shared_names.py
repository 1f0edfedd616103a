"""Names that OneFlow's legacy `flow.nn` exported as functions of blobs (v0.3.4/v0.4.0: `flow.nn.BCELoss(input,
target)`, `flow.nn.GroupNorm(x, num_groups)`, `flow.nn.PixelShuffle(input, 2)`, ...) and OneFlow 0.9's `flow.nn`
exports as module classes (`flow.nn.BCELoss(reduction="sum")`). One name serves both: called with a job
function's blob among its arguments it is the legacy function (and returns its blob), otherwise it constructs
the module. Subclasses are plain module classes."""
from oneflow_compat.ir.graph import LazyBlob


def _has_blob(args, kwargs):
    return any(isinstance(a, LazyBlob) for a in list(args) + list(kwargs.values()))


class _SharedName(type):
    def __call__(cls, *args, **kwargs):
        if "_legacy_function" in cls.__dict__ and _has_blob(args, kwargs):
            return cls._legacy_function(*args, **kwargs)
        return super().__call__(*args, **kwargs)


def shared(module_class, legacy_function):
    """`module_class` that, called with a blob, runs `legacy_function` instead of constructing a module."""
    return _SharedName(module_class.__name__, (module_class,), {
        "__module__": module_class.__module__, "__qualname__": module_class.__qualname__,
        "__doc__": module_class.__doc__, "_legacy_function": staticmethod(legacy_function)})
