"""`Categorical(probs=None, logits=None)` (OneFlow 0.9): integers 0..K-1 drawn with the probabilities of the
last axis (`probs` normalized to sum to 1, or the softmax of `logits`); the other axes are a batch."""
import math

import numpy as np

from oneflow_compat._global import functional as F, tensor_functions as TF
from oneflow_compat._global.size import Size
from oneflow_compat.distributions.distribution import Distribution


class Categorical(Distribution):
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        param = probs if probs is not None else logits
        if param.ndim < 1:
            raise ValueError("`%s` parameter must be at least one-dimensional." % ("probs" if probs is not None
                                                                                  else "logits"))
        if probs is not None:
            self.probs = F.div(probs, F.sum(probs, -1, keepdim=True))
            self.logits = F.log(F.clamp(self.probs, min=_tiny(self.probs)))
        else:
            self.logits = F.sub(logits, TF.logsumexp(logits, -1, keepdim=True))  # normalized log-probabilities
            self.probs = F.softmax(logits, -1)
        self._num_events = param.shape[-1]
        super().__init__(Size(param.shape[:-1]), validate_args=validate_args)

    def sample(self, sample_shape=Size()):
        """Samples of shape sample_shape + batch_shape (int64), drawn with replacement from each row."""
        count = int(math.prod(sample_shape))
        rows = F.reshape(self.probs, (-1, self._num_events))
        drawn = TF.multinomial(rows, count, True)  # (rows, count)
        return F.reshape(F.permute(drawn, [1, 0]), tuple(self._extended_shape(sample_shape)))


def _tiny(t):
    return float(np.finfo(t.dtype.np).tiny)
