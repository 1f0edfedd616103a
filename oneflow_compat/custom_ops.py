"""Custom C++ ops: `flow.user_op_builder` (and its consistent / module variants),
`flow.experimental.custom_op_module` and the libraries of `flow.config.load_library` are refused with an error
that names the op or the file.

In OneFlow these add an op type registered in C++ (`REGISTER_USER_OP`) with kernels compiled against OneFlow's
headers and loaded with `dlopen` (`oneflow/core/framework/load_library.cpp`); nothing of that runtime exists here,
so a script that needs one fails at the line that asks for it, not later with an AttributeError during tracing.
"""
import os

_WHY = ("custom ops need OneFlow's C++ runtime (an op type registered in C++ with kernels compiled against "
        "OneFlow), which oneflow_compat does not have")


def refusal(what):
    return NotImplementedError("%s: %s. The built-in ops are available as flow.* functions." % (what, _WHY))


class _UserOpBuilder:
    """What `flow.user_op_builder(name)` returns: naming the op type (`.Op(type)`, the chain's first call in
    OneFlow) is refused with both names."""

    def __init__(self, api, op_name):
        self._api = api
        self._op_name = op_name

    def Op(self, op_type_name):  # noqa: N802 - legacy name
        raise refusal("%s(%r).Op(%r): cannot add op '%s' of type '%s'" % (
            self._api, self._op_name, op_type_name, self._op_name, op_type_name))

    def __getattr__(self, attr):
        if attr.startswith("_"):
            raise AttributeError(attr)
        raise refusal("%s(%r).%s: cannot build user op '%s'" % (self._api, self._op_name, attr, self._op_name))


def user_op_builder(op_name):
    return _UserOpBuilder("flow.user_op_builder", op_name)


def consistent_user_op_builder(op_name):
    return _UserOpBuilder("flow.consistent_user_op_builder", op_name)


def user_op_module_builder(op_type_name):
    raise refusal("flow.user_op_module_builder(%r): cannot build op type '%s'" % (op_type_name, op_type_name))


def consistent_user_op_module_builder(op_type_name):
    raise refusal("flow.consistent_user_op_module_builder(%r): cannot build op type '%s'" % (
        op_type_name, op_type_name))


class CustomOpModule:
    """`flow.experimental.custom_op_module(op_module_name, module_path="")`: OneFlow compiled the module's C++
    definition and kernels with g++/nvcc and loaded the result; refused at construction, naming the module."""

    def __init__(self, op_module_name, module_path=""):
        raise refusal("flow.experimental.custom_op_module(%r, %r): cannot build custom op module '%s'" % (
            op_module_name, module_path, op_module_name))


def refuse_library(api, path):
    """`flow.config.load_library(path)`: a missing file is an error naming it (OneFlow's `LoadLibrary ERROR!
    Cannot load library file`, raised there only at session start); an existing one is refused, naming it."""
    if not (type(path) is str):
        raise AssertionError("%s expects a str path, got %r" % (api, path))
    if not os.path.isfile(path):
        raise FileNotFoundError("%s(%r): LoadLibrary ERROR! Cannot load library file: %s (no such file)" % (
            api, path, path))
    raise refusal("%s(%r): cannot load the custom op library %s" % (api, path, path))
