"""`flow.optim`: eager optimizers over (local or global) parameters, and `flow.optim.lr_scheduler`."""
from oneflow_compat.optim import lr_scheduler  # noqa: F401
from oneflow_compat.optim.adam import Adam  # noqa: F401
from oneflow_compat.optim.optimizer import Optimizer  # noqa: F401
from oneflow_compat.optim.sgd import SGD  # noqa: F401
# OneFlow 0.9's other optimizers (issue 21)
from oneflow_compat.optim.adaptive import LAMB, Adadelta, Adagrad, AdamW, RMSprop  # noqa: F401
