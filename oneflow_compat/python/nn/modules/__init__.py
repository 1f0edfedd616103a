"""`oneflow.python.nn.modules` (v0.4.0 `oneflow/python/nn/modules/`): the helpers' module path."""
