"""`flow.unittest`: the legacy test base class and device-count skips, for running OneFlow's own unit tests."""
import os
import unittest as _unittest

from oneflow_compat.framework import session as sess
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
