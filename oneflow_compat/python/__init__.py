"""`oneflow.python`: the module paths of OneFlow v0.3/v0.4's Python sources that user scripts import directly.
OneFlow-Benchmark's DCGAN (`Generative/layers.py`) imports `oneflow.python.framework.distribute`."""
