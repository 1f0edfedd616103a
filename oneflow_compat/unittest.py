"""`flow.unittest`: the legacy test base class and device-count skips, for running OneFlow's own unit tests."""
import os
import unittest as _unittest

from oneflow_compat.framework import client_mode, session as sess
from oneflow_compat.runtime import context


def _device_num():
    return int(os.environ.get("ONEFLOW_TEST_DEVICE_NUM", "1"))


def _node_size():
    return len(os.environ.get("ONEFLOW_TEST_NODE_LIST", "127.0.0.1").split(","))


class TestCase(_unittest.TestCase):
    """Each test starts in a fresh default session (eager when ONEFLOW_TEST_ENABLE_EAGER=1)."""

    def setUp(self):
        context.get().legacy_eager = False
        sess.clear_default_session()
        if os.environ.get("ONEFLOW_TEST_ENABLE_EAGER") == "1":
            # v0.4.0's setUp calls flow.enable_eager_execution(...) for its legacy eager tests and for its eager
            # module tests (`import oneflow.experimental as flow`) alike: the flag chooses neither API, the
            # tests' first use does (a job function: legacy; a flow.Tensor: the global-tensor API)
            with client_mode.neutral():
                sess.enable_eager_execution(True)


def _skip_unless(nodes, devices):
    return _unittest.skipUnless(_node_size() == nodes and _device_num() == devices,
                                "requires %d node(s) with %d device(s) each" % (nodes, devices))


skip_unless_1n1d = lambda: _skip_unless(1, 1)  # noqa: E731 - legacy names are functions returning decorators
skip_unless_1n2d = lambda: _skip_unless(1, 2)  # noqa: E731
skip_unless_1n4d = lambda: _skip_unless(1, 4)  # noqa: E731
skip_unless_2n1d = lambda: _skip_unless(2, 1)  # noqa: E731
skip_unless_2n2d = lambda: _skip_unless(2, 2)  # noqa: E731
skip_unless_2n4d = lambda: _skip_unless(2, 4)  # noqa: E731


class env:  # noqa: N801 - legacy namespace
    @staticmethod
    def device_num():
        return _device_num()

    @staticmethod
    def node_size():
        return _node_size()

    @staticmethod
    def eager_execution_enabled():
        return os.environ.get("ONEFLOW_TEST_ENABLE_EAGER") == "1"

    # --- the rest of OneFlow v0.3.4/v0.4.0's unittest.env (framework/unittest.py) ---------------------------------
    @staticmethod
    def typing_check_enabled():
        return os.environ.get("ONEFLOW_TEST_ENABLE_TYPING_CHECK") == "1"

    @staticmethod
    def node_list():
        node_list_str = os.environ.get("ONEFLOW_TEST_NODE_LIST")
        assert node_list_str
        return node_list_str.split(",")

    @staticmethod
    def has_node_list():
        return bool(os.environ.get("ONEFLOW_TEST_NODE_LIST"))

    @staticmethod
    def has_world_size():
        if os.environ.get("ONEFLOW_TEST_WORLD_SIZE"):
            assert os.environ["ONEFLOW_TEST_WORLD_SIZE"].isdigit(), "env var ONEFLOW_TEST_WORLD_SIZE must be num"
            return True
        return False

    @staticmethod
    def world_size():
        return int(os.environ.get("ONEFLOW_TEST_WORLD_SIZE"))


class _ClearDefaultSession:
    def setUp(self):
        sess.clear_default_session()
        sess.enable_eager_execution(False)


def num_nodes_required(num_nodes):
    """Marks a test function as needing `num_nodes` nodes (read by register_test_cases' filter)."""
    def decorator(f):
        f.__oneflow_test_case_num_nodes_required__ = num_nodes
        return f
    return decorator


def _num_nodes(func):
    return getattr(func, "__oneflow_test_case_num_nodes_required__", 1)


def register_test_cases(scope, directory, filter_by_num_nodes, base_class=_unittest.TestCase,
                        test_case_mixin=_ClearDefaultSession):
    """One TestCase class per `test*.py` file of `directory`, made of its `test*` functions that
    filter_by_num_nodes(num nodes required) keeps, put into `scope` under the file's name (OneFlow's loader)."""
    import importlib.util

    for f in sorted(os.listdir(directory)):
        path = os.path.join(directory, f)
        if not (os.path.isfile(path) and f.endswith(".py") and f.startswith("test")):
            continue
        class_name = f[:-3]
        spec = importlib.util.spec_from_file_location(class_name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        methods = {name: getattr(module, name) for name in dir(module)
                   if name.startswith("test") and callable(getattr(module, name))
                   and filter_by_num_nodes(_num_nodes(getattr(module, name)))}
        scope[class_name] = type(class_name, (test_case_mixin, base_class), methods)
