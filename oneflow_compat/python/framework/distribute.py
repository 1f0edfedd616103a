"""`oneflow.python.framework.distribute` (OneFlow v0.4.0 `oneflow/python/framework/distribute.py`): the module
behind `flow.distribute.*` and the view scopes, under its own names; every name is the object the public API
exports (flow.distribute, flow.scope, flow.distributed)."""
from oneflow_compat import distribute as _d
from oneflow_compat import scope as _scope
from oneflow_compat.distributed import get_rank, get_world_size  # noqa: F401

split = _d.split
broadcast = _d.broadcast
auto = _d.auto
assert_is_valid_distribute = _d.assert_is_valid_distribute
SplitDistribute, BroadcastDistribute, AutoDistribute = _d.SplitDistribute, _d.BroadcastDistribute, _d.AutoDistribute

# the view scopes: `flow.scope.mirrored_view` is the class DistributeMirroredStrategy there
DistributeMirroredStrategy = _scope.mirrored_view
DistributeConsistentStrategy = _scope.consistent_view
MirroredStrategyEnabled = _scope.mirrored_view_enabled
ConsistentStrategyEnabled = _scope.consistent_view_enabled
deprecated_mirrored_strategy = _d.mirrored_strategy
deprecated_consistent_strategy = _d.deprecated_consistent_strategy
deprecated_mirrored_strategy_enabled = _d.mirrored_strategy_enabled
deprecated_consistent_strategy_enabled = _d.consistent_strategy_enabled
