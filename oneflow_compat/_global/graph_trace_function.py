"""`nn.Graph.trace(func)` (OneFlow 0.9, python/oneflow/nn/graph/graph.py v0.9.0): a plain function turned into a
naive nn.Graph — an instance of a new Graph subclass named `<func name>_graph` whose build calls the function —
so calling it compiles the function on the first call and runs the compiled graph after (OneFlow marks it
pre-alpha: for training or saving, write an nn.Graph subclass). Only functions are accepted (OneFlow's assertion
and message). Bound as a static method of `Graph` by nn/global_api.py (api-misc2)."""
import inspect

from oneflow_compat._global.graph import Graph


def trace(func):
    assert inspect.isfunction(func), (
        "nn.Graph.trace only support function currently, so %s must be a function." % (func,))

    def __init__(self):
        Graph.__init__(self)

    def build(self, *args, **kwargs):
        return func(*args, **kwargs)

    cls = type(func.__name__ + "_graph", (Graph,), {"__init__": __init__, "build": build})
    return cls()
