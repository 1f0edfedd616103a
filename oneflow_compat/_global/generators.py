"""Random generators of the global-tensor API (this project's rule, stronger than OneFlow's).

* The GLOBAL generator draws global random tensors. A draw's values depend only on (seed, the generator's draw
  counter, logical shape, dtype, distribution): every member rank generates the full logical value with a
  counter-based generator (numpy's Philox keyed by the seed and the draw number) and keeps its piece. So
  `randn(4, 5, sbp=split(0))`, `randn(4, 5, sbp=broadcast)` and a one-rank `randn(4, 5)` are the same numbers
  under one seed. Every rank of the world calls every global creation op (OneFlow requires it too), so the
  counters advance alike on every rank. Its default seed is rank 0's, broadcast at the first draw.
* The LOCAL generator of each rank draws local tensors (and module initialisers). Default seeds differ per rank,
  like OneFlow's per-process seeds (with ONEFLOW_COMPAT_SEED set, both default seeds derive from it).
* `flow.manual_seed(s)` seeds the global generator and every rank's local generator alike.

Both are per process: simulated ranks (threads, each with a context of its own) have a pair each, as N MPI processes
have (`_pair`).
"""
import random as _py_random

import numpy as np

from oneflow_compat.kernels import random as random_k
from oneflow_compat.runtime import context as _CONTEXT


def _fresh_seed(shared):
    """A default seed: from ONEFLOW_COMPAT_SEED when set (the project's reproducibility switch; a rank's local
    generator then derives its own seed from it and the rank), else drawn from the system."""
    import os

    text = os.environ.get("ONEFLOW_COMPAT_SEED")
    if text is None:
        return _py_random.SystemRandom().randrange(2 ** 63)
    if shared:
        return int(text) % (1 << 63)
    from oneflow_compat.runtime import global_eager

    return random_k.derived_seed(int(text), "local generator of rank %d" % global_eager.rank())


# OneFlow 0.9 (oneflow/core/framework/random_generator.h): the seed of a generator made by `flow.Generator(...)`
DEFAULT_SEED = 67280421310721
# the seed argument that asks for a seed drawn at the first use (the default generators, the data loaders' one)
DRAWN = "drawn"
_DEVICE_TYPES = ("cpu", "cuda", "auto")


def _check_device(device):
    """OneFlow 0.9's `MakeGenerator` / ParsingDeviceTag (api/python/framework/random_generator.cpp): "cpu", "cuda"
    or "auto", with an optional ":index" (None: "auto", as framework/generator.py's create_generator); others are
    refused with its words, then ours."""
    if device is None:
        return "auto"
    text = str(device)  # (a flow.device too)
    kind, _, index = text.partition(":")
    if kind not in _DEVICE_TYPES or (index and not index.isdigit()):
        raise RuntimeError("Invalid device %s for making generator, please make sure the device is one of %s "
                           "(Generator: invalid device %r)"
                           % (kind if kind not in _DEVICE_TYPES else text, ", ".join(_DEVICE_TYPES), text))
    return text


class Generator:
    """`flow.Generator(device="auto")`: a seed and a draw counter; each draw gets its own Philox stream. A new
    generator starts at OneFlow's default seed 67280421310721 (`seed=DRAWN`: a seed drawn at first use)."""

    def __init__(self, device="auto", seed=DEFAULT_SEED, shared=False):
        self.device = _check_device(device)
        self._seed = None if seed == DRAWN else int(seed) % (1 << 63)
        self._shared = shared  # the global generator: default seed from rank 0
        self._draws = 0

    def manual_seed(self, seed):
        self._seed = int(seed) % (1 << 63)
        self._draws = 0
        return self

    def initial_seed(self):
        return self._current_seed()

    def seed(self):
        """OneFlow 0.9 `Generator::seed`: a fresh non-deterministic seed (53 bits), set and returned."""
        seed = _py_random.SystemRandom().getrandbits(53)
        if self._shared:
            from oneflow_compat.runtime import global_eager

            c = global_eager.comm()
            seed = c.bcast_object(seed, root=0) if c.size > 1 else seed
        return self.manual_seed(seed)._seed

    def _current_seed(self):
        if self._seed is None:
            seed = _fresh_seed(self._shared)
            if self._shared:
                from oneflow_compat.runtime import global_eager

                c = global_eager.comm()
                seed = c.bcast_object(seed, root=0) if c.size > 1 else seed
            self._seed = seed
        return self._seed

    # get_state / set_state: installed by _global/rng_state.py (their uint8 tensors need `creation`, which imports
    # this module)

    def _next_key(self):
        """The Philox key of the next draw (and the draw counted)."""
        key = random_k.call_key(self._current_seed(), self._draws)
        self._draws += 1
        return key

    def _next_rng(self):
        return np.random.Generator(np.random.Philox(key=self._next_key()))

    # --- draws (full logical values, host arrays) ----------------------------------------------------------
    def normal(self, shape, np_dtype, mean=0.0, std=1.0):
        return random_k.generator_normal(self._next_key(), shape, np_dtype, mean, std)

    def uniform(self, shape, np_dtype, low=0.0, high=1.0):
        return random_k.generator_uniform(self._next_key(), shape, np_dtype, low, high)

    def integers(self, low, high, shape, np_dtype):
        return random_k.generator_integers(self._next_key(), low, high, shape, np_dtype)

    def permutation(self, n):
        return random_k.generator_permutation(self._next_key(), n)


def _pair():
    """(global generator, local generator) of this process, or of the simulated rank running in this thread: each
    simulated rank (a thread with a context of its own, `runtime/context.py`) has its own pair, seeded and drawn as
    a separate process's, so that N simulated ranks draw what N MPI ranks draw."""
    ctx = _CONTEXT.get()
    own = ctx.generators
    if own is None:
        own = ctx.generators = {"pair": (Generator("cpu", seed=DRAWN, shared=True), Generator("cpu", seed=DRAWN))}
    return own["pair"]


def process_generator(name, make):
    """A generator the process (or simulated rank) keeps under `name`, made by `make()` at first use (the data
    loaders' shared default generator)."""
    _pair()
    own = _CONTEXT.get().generators
    found = own.get(name)
    if found is None:
        found = own[name] = make()
    return found


def global_generator():
    return _pair()[0]


def default_generator():
    """The rank's local generator (the object `flow.default_generator` stands for)."""
    return _pair()[1]


class DefaultGenerator(Generator):
    """`flow.default_generator`: OneFlow 0.9's is the process's CPU generator object itself
    (framework/generator.py @ v0.9.0); here it stands for the default generator of the process or simulated rank
    that reads it (`default_generator()`): every attribute is that generator's."""

    def __init__(self):  # (no state of its own)
        pass

    def __getattribute__(self, name):
        if name in _OWN:
            return object.__getattribute__(self, name)
        return getattr(default_generator(), name)

    def manual_seed(self, seed):  # (returns the object seeded: this one)
        default_generator().manual_seed(seed)
        return self

    def set_state(self, state):
        default_generator().set_state(state)
        return self

    def __setattr__(self, name, value):
        setattr(default_generator(), name, value)

    def __repr__(self):
        return repr(default_generator())

    def __eq__(self, other):
        return default_generator() is (default_generator() if isinstance(other, DefaultGenerator) else other)

    def __hash__(self):
        return hash(default_generator())

    def __reduce__(self):  # pickled (flow.save, deepcopy) as the generator it stands for
        return default_generator().__reduce__()


_OWN = frozenset(("__class__", "__init__", "__getattribute__", "__setattr__", "__reduce_ex__", "__reduce__",
                  "manual_seed", "set_state"))
DEFAULT = DefaultGenerator()


def manual_seed(seed):
    """Seeds the global generator and this rank's local generator (every rank calls it alike)."""
    g, local = _pair()
    g.manual_seed(seed)
    local.manual_seed(seed)
    return local


def initial_seed():
    return default_generator().initial_seed()


def seed():
    s = _py_random.SystemRandom().randrange(2 ** 63)
    default_generator().manual_seed(s)
    return s
