"""`oneflow.python.nn` (OneFlow v0.4.0 `oneflow/python/nn/`): the module paths of its eager modules that v0.4.0's
programs and tests import directly (`module`, `parameter`, `modules.utils`)."""
