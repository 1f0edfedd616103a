"""`oneflow.nn.modules`: OneFlow 0.9 keeps its layers in submodules of this package (`oneflow.nn.modules.module`,
`.container`, `.utils`, …); code that imports them by path (flowvision's `from oneflow.nn.modules.utils import
_pair`) finds them here. As in OneFlow, the package itself binds nothing: the classes are `oneflow.nn.*`."""
