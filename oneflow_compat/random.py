"""`flow.random.*`: the data pipeline's CoinFlip (ops in `ops/data_ops.py`) and OneFlow v0.3.4's random ops —
bernoulli, the random batch permutation and shuffle, gen_seed (ops in `ops/random_ops.py`; surface after
`oneflow/python/ops/random_ops.py`, `random_util.py` and `array_ops.py`)."""
import random as _py_random
import sys as _sys

from oneflow_compat._api.data_api import CoinFlip, coin_flip  # noqa: F401
from oneflow_compat.ir import dtypes as _dtypes
from oneflow_compat.ops.registry import apply as _apply


class _BernoulliModule:
    """OneFlow's BernoulliModule: its first call names the op after the module, later calls get unique names."""

    def __init__(self, dtype, random_seed, name):
        self.dtype, self.seed, self.name, self.calls = dtype, random_seed, name, 0

    def __call__(self, x):
        from oneflow_compat.ir import builder

        name = self.name if self.calls == 0 else builder.current("flow.random.bernoulli").job.unique_name(
            "Bernoulli_")
        self.calls += 1
        return _apply("bernoulli", [x], {"dtype": self.dtype, "seed": self.seed}, name=name)


def bernoulli(x, seed=None, dtype=None, name="Bernoulli"):
    """1 with probability x (elementwise), else 0, in `dtype` (x's by default). As in OneFlow the op is a module
    found or created by `name`: a second call with the same name in the session is an error (give each call its
    own name)."""
    from oneflow_compat._api.legacy_misc import find_or_create_module

    assert isinstance(name, str)
    dtype = _dtypes.as_dtype(dtype) or x.dtype
    if seed is not None:
        assert name is not None
    module = find_or_create_module(name, lambda: _BernoulliModule(dtype, seed, name))
    return module(x)


def generate_random_batch_permutation_indices(value, seed=None, name=None):
    """A random permutation (int32) of value's rows, a new one every call; a seed needs a name (OneFlow asserts
    it)."""
    from oneflow_compat.ir import builder

    if seed is not None:
        assert name is not None
    if name is None:
        name = builder.current("flow.random.generate_random_batch_permutation_indices").job.unique_name(
            value.op.name + "_random_batch_permutation_indices")
    return _apply("generate_random_batch_permutation_indices", [value], {"seed": seed}, name=name)


def shuffle(value, seed=None, name=None):
    """value's rows in a random order (a new one every call). OneFlow v0.3.4 built the permutation without a name,
    so a seeded shuffle failed its assertion there; here the permutation op is named after `name` when one is
    given (a seeded shuffle without a name still fails, as in OneFlow)."""
    from oneflow_compat._api import array_api

    perm_name = None if name is None else name + "_random_batch_permutation_indices"
    return array_api.gather(value, generate_random_batch_permutation_indices(value, seed, perm_name), name=name)


def gen_seed(seed=None):
    """(seed, has_seed) as OneFlow gives them: in the consistent view a random seed when none is given (always
    has_seed); in the mirrored view -1, False."""
    from oneflow_compat import scope

    if scope.mirrored_view_enabled():
        return (-1, False) if seed is None else (seed, True)
    if seed is None:
        seed = _py_random.randint(-_sys.maxsize, _sys.maxsize)
    return seed, True
