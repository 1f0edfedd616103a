"""`Distribution`: the shapes every distribution has (OneFlow 0.9, `validate_args=None` only, as OneFlow's)."""
from oneflow_compat._global.size import Size


class Distribution:
    has_rsample = False
    has_enumerate_support = False

    def __init__(self, batch_shape=Size(), event_shape=Size(), validate_args=None):
        assert validate_args is None, "only support validate_args=None for now."
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    def _extended_shape(self, sample_shape=Size()):
        """sample_shape + batch_shape + event_shape: the shape of `sample(sample_shape)`."""
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def sample(self, sample_shape=Size()):
        raise NotImplementedError

    def __repr__(self):
        return type(self).__name__ + "()"
