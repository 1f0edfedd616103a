"""Random generator states as OneFlow 0.9 hands them out (issue 21, the nnextra helper): `flow.get_rng_state()`,
`flow.set_rng_state(state)`, `Generator.get_state()` / `set_state(state)`, each state a uint8 tensor (OneFlow's
ByteTensor; python/oneflow/framework/generator.py, v0.9.0). A generator's state here is its seed and draw counter
(little-endian int64s, 16 bytes); the methods are installed on `generators.Generator` from this module because the
tensors need `creation`, which imports `generators`."""
import numpy as np

from oneflow_compat.ir import dtypes
from oneflow_compat._global import creation, generators


def _state_tensor(values):
    raw = np.asarray(values, dtype="<i8").view(np.uint8).copy()
    return creation.local_tensor(raw, dtype=dtypes.uint8)


def _state_values(state, count, what):
    """`count` int64s from a state of get_state / get_rng_state (a uint8 tensor, numpy array or bytes)."""
    if hasattr(state, "numpy"):
        state = state.numpy()
    raw = np.frombuffer(bytes(state), np.uint8) if isinstance(state, (bytes, bytearray)) else np.asarray(state)
    if raw.dtype != np.uint8 or raw.ndim != 1 or raw.size not in (8 * count,):
        raise ValueError("%s: expected the uint8 state of %d bytes that get_state / get_rng_state return, got %s "
                         "of shape %s" % (what, 8 * count, raw.dtype, raw.shape))
    values = np.ascontiguousarray(raw).view("<i8")
    if values.min() < 0:
        raise ValueError("%s: the state holds a negative seed or counter (%s): not a state get_state returned"
                         % (what, values.tolist()))
    return [int(v) for v in values]


def get_rng_state():
    """`flow.get_rng_state()`: the state of this rank's default generator and of the global generator (32 bytes,
    uint8), so that `set_rng_state` replays local and global random tensors alike (OneFlow's covers the default
    generator; this project draws global tensors from a generator of their own)."""
    g, local = generators.global_generator(), generators.default_generator()
    return _state_tensor([local._current_seed(), local._draws, g._current_seed(), g._draws])


def set_rng_state(new_state):
    """Restores what `get_rng_state` returned (both generators), or a default generator's 16-byte `get_state()`
    (that generator alone)."""
    n = int(np.prod(getattr(new_state, "shape", (len(new_state),))))
    if n == 16:
        _set_own_state(generators.default_generator(), new_state)
        return
    local_seed, local_draws, global_seed, global_draws = _state_values(new_state, 4, "set_rng_state")
    g, local = generators.global_generator(), generators.default_generator()
    local._seed, local._draws = local_seed, local_draws
    g._seed, g._draws = global_seed, global_draws


def _get_state(self):
    """The state as a uint8 tensor of 16 bytes (the seed and the draw counter), which `set_state` takes back. The
    default generator's is `flow.get_rng_state()`'s (OneFlow 0.9: get_rng_state is default_generator.get_state(),
    python/oneflow/framework/generator.py, v0.9.0), the global generator's state included."""
    if self is generators.default_generator():
        return get_rng_state()
    return _own_state(self)


def _own_state(self):
    return _state_tensor([self._current_seed(), self._draws])


def _set_state(self, state):
    if self is generators.default_generator():  # (what get_state gave: both generators' 32 bytes, or 16 for the default alone)
        set_rng_state(state)
        return self
    return _set_own_state(self, state)


def _set_own_state(self, state):
    seed, draws = _state_values(state, 2, "Generator.set_state")
    self._seed, self._draws = seed % (1 << 63), draws
    return self


generators.Generator.get_state = _get_state
generators.Generator.set_state = _set_state


def _getstate(self):
    """Pickling (`flow.save` of a generator, deep copies): OneFlow 0.9's {"device", "state"} dictionary."""
    return {"device": str(self.device), "state": _own_state(self)}


def _setstate(self, state_dict):
    self.__init__(state_dict["device"])
    _set_own_state(self, state_dict["state"])


generators.Generator.__getstate__ = _getstate
generators.Generator.__setstate__ = _setstate
