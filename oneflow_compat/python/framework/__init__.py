"""`oneflow.python.framework`: module paths of OneFlow's `oneflow/python/framework/` that scripts import."""
