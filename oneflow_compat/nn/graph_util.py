"""`oneflow.nn.graph.util` (OneFlow 0.9): the nested-argument tree of graph inputs and outputs. `oneflow.nn.graph`
is a module here (`_global/graph.py`), so the package's `__init__` binds this one as its `util`."""
from oneflow_compat._global.graph_args_tree import ArgsTree, NamedArg  # noqa: F401

__all__ = ["ArgsTree", "NamedArg"]
