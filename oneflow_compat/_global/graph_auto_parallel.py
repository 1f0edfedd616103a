"""`graph.config`'s auto-parallel settings (OneFlow 0.9 auto_parallel.rst, `python/oneflow/nn/graph/graph_config.py`
at v0.9.0, fields 700-705 of `job_conf.proto` with their defaults). They are recorded on the config, handed to the
graph's job when it compiles, and used there by `passes/auto_parallel.py` (the search over the whole job's SBP
signatures); `explain` and the graph's debug output show the settings and what the search changed."""
from oneflow_compat.passes.auto_parallel import AutoParallelConf

__all__ = ["install"]


def _conf(config):
    conf = config.__dict__.get("_auto_parallel")
    if conf is None:
        conf = config.__dict__["_auto_parallel"] = AutoParallelConf()
    return conf


def _flag(mode, what):
    if not isinstance(mode, bool):
        raise TypeError("GraphConfig.%s: mode must be a bool, got %s" % (what, type(mode).__name__))
    return mode


def _number(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError("GraphConfig.%s: expected a number >= 0, got %r" % (what, value))
    return float(value)


def enable_auto_parallel(self, mode: bool = True):
    """If true, then graph will use the auto parallel algorithm to select a parallelism strategy."""
    _conf(self).enable = _flag(mode, "enable_auto_parallel")


def enable_auto_parallel_ignore_user_sbp_config(self, mode: bool = True):
    """If true, it will ignore all user configurations of SBP (the `to_global` calls inside `build`; the graph's
    inputs and parameters keep the layouts of their eager tensors)."""
    _conf(self).ignore_user_sbp_config = _flag(mode, "enable_auto_parallel_ignore_user_sbp_config")


def set_auto_parallel_computation_cost_ratio(self, ratio):
    """Set coefficient of computation cost in auto-parallel algorithm (default 0.05)."""
    _conf(self).computation_cost_ratio = _number(ratio, "set_auto_parallel_computation_cost_ratio")


def set_auto_parallel_wait_time(self, cost):
    """Set wait time for auto-parallel algorithm (default 1.65e4): the extra cost added to each boxing that
    communicates between devices."""
    _conf(self).wait_time = _number(cost, "set_auto_parallel_wait_time")


def enable_auto_parallel_trunk_algo(self, mode: bool = True):
    """Find the trunk of the SBP graph, then reduce the wait time for tributaries (OneFlow's refinement: recorded
    and reported; this implementation's search has no trunk phase)."""
    _conf(self).trunk_algo = _flag(mode, "enable_auto_parallel_trunk_algo")


def enable_auto_parallel_sbp_collector(self, mode: bool = True):
    """Use "sbp collector" to create "sbp proxy" for nodes with multiple downstream operators (OneFlow's
    refinement: recorded and reported; this implementation's search has no collector phase)."""
    _conf(self).sbp_collector = _flag(mode, "enable_auto_parallel_sbp_collector")


def auto_parallel_conf(config):
    """The settings (an AutoParallelConf) of a GraphConfig, or None where none was ever set."""
    return config.__dict__.get("_auto_parallel")


def install(graph_config_class):
    for fn in (enable_auto_parallel, enable_auto_parallel_ignore_user_sbp_config,
               set_auto_parallel_computation_cost_ratio, set_auto_parallel_wait_time, enable_auto_parallel_trunk_algo,
               enable_auto_parallel_sbp_collector):
        setattr(graph_config_class, fn.__name__, fn)
