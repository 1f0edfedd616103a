"""OneFlow 0.9's distances and further `flow.nn.functional` names, composed of registered ops (so they
differentiate, run on global tensors and trace into nn.Graph):

* `cosine_similarity(x1, x2, dim=1, eps=1e-8)` and `nn.CosineSimilarity`: OneFlow's CosineSimilarityFunctor —
  both inputs expanded to their broadcast shape and promoted to a common floating dtype, then
  Σx1·x2 / sqrt(max(Σx1² · Σx2², eps²));
* `pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False)` and `nn.PairwiseDistance`: PairwiseDistanceFunctor —
  the p-norm of x1 - x2 + eps over the last axis of the broadcast shape (integer inputs give float32, as the
  docstring's example shows);
* `gumbel_softmax(x, tau=1.0, dim=None, hard=False, generator=None)`: GumbelSoftmaxFunctor — softmax((x + g) / tau),
  g = -log(-log(U)), U ~ uniform[0, 1) from the generator; `hard` gives the one-hot of the argmax plus
  (soft - soft.detach()), the straight-through estimator (value one-hot, gradient the soft sample's);
* `sparse_softmax_cross_entropy(labels, logits)` (TensorFlow's argument order, as OneFlow's python wrapper): the
  registry's `sparse_softmax_cross_entropy` op, one loss per label;
* `upsample`: OneFlow 0.9 binds `nn.Upsample` itself as `nn.functional.upsample`
  (python/oneflow/nn/functional/__init__.py: `from oneflow.nn.modules.upsampling import Upsample as upsample`), so
  `F.upsample(scale_factor=2)` makes the module; called with a tensor first (`F.upsample(x, scale_factor=2)`,
  PyTorch's deprecated alias of interpolate) it interpolates.

Facts from OneFlow v0.9.0: oneflow/core/functional/impl/nn_functor.cpp, activation_functor.cpp,
python/oneflow/nn/modules/distance.py, python/oneflow/nn/modules/sparse_softmax_cross_entropy.py,
python/oneflow/framework/docstr/distance.py and activation.py.
"""
import numpy as np

from oneflow_compat import sbp as flow_sbp
from oneflow_compat.ir import dtypes
from oneflow_compat._global import functional as F
from oneflow_compat._global import dispatch, generators, lazy
from oneflow_compat._global import loss_op_checks
from oneflow_compat._global import tensor_functions as TF
from oneflow_compat._global.dispatch import apply_op_list
from oneflow_compat._global.modules import Module
from oneflow_compat._global.tensor import Tensor


# --- distances ----------------------------------------------------------------------------------------------------
def _broadcast_shape(a, b):
    out = []
    n = max(len(a), len(b))
    for i in range(n - 1, -1, -1):
        off = n - 1 - i
        sa = a[len(a) - 1 - off] if len(a) - 1 - off >= 0 else 1
        sb = b[len(b) - 1 - off] if len(b) - 1 - off >= 0 else 1
        if not (sa == sb or sa == 1 or sb == 1):
            raise RuntimeError("The size of tensor a (%d) must match the size of tensor b (%d) at non-singleton "
                               "dimension %d" % (sa, sb, i))
        out.append(max(sa, sb))
    return tuple(reversed(out))


def cosine_similarity(x1, x2, dim=1, eps=1e-08):
    """Σ x1·x2 / sqrt(max(Σ x1² · Σ x2², eps²)) along `dim` of the broadcast shape (which drops `dim`)."""
    x, y = F._check(x1, "cosine_similarity"), F._check(x2, "cosine_similarity")
    shape = _broadcast_shape(tuple(x.shape), tuple(y.shape))
    if tuple(x.shape) != shape:
        x = TF.expand(x, *shape)
    if tuple(y.shape) != shape:
        y = TF.expand(y, *shape)
    common = F._promote(x.dtype, y.dtype)
    if not common.is_floating:
        raise RuntimeError("expected common dtype to be floating point, yet common dtype is oneflow.%s" % common.name)
    x, y = F.cast(x, common) if x.dtype != common else x, F.cast(y, common) if y.dtype != common else y
    w12 = F.sum(F.mul(x, y), dim)
    w1 = F.sum(F.mul(x, x), dim)
    w2 = F.sum(F.mul(y, y), dim)
    n12 = F.sqrt(F.clamp(F.mul(w1, w2), min=float(eps) * float(eps)))
    return F.div(w12, n12)


def pairwise_distance(x1, x2, p=2.0, eps=1e-06, keepdim=False):
    """‖x1 - x2 + eps‖_p over the last axis of the broadcast shape."""
    x, y = F._check(x1, "pairwise_distance"), F._check(x2, "pairwise_distance")
    diff = F.sub(x, y)
    if not diff.dtype.is_floating:  # an integer difference plus the float eps: float32, as OneFlow's scalar add
        diff = F.cast(diff, dtypes.float32)
    diff = F.add(diff, float(eps))
    return TF.norm(diff, float(p) if not isinstance(p, str) else p, max(x.ndim, y.ndim) - 1, keepdim)


class CosineSimilarity(Module):
    def __init__(self, dim=1, eps=1e-08):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    def __init__(self, p=2.0, eps=1e-06, keepdim=False):
        super().__init__()
        self.p, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return pairwise_distance(x1, x2, p=self.p, eps=self.eps, keepdim=self.keepdim)


# --- gumbel softmax -----------------------------------------------------------------------------------------------
def _uniform_like(x, generator):
    """U[0, 1) noise of x's shape and dtype on x's layout: local tensors draw from this rank's generator, global
    ones one full logical value from the global generator (every rank draws it; each keeps its piece), so N ranks
    give 1 rank's numbers."""
    from oneflow_compat._global import creation, nn_init

    gen = generator
    if gen is None:
        gen = generators.global_generator() if x.is_global else generators.default_generator()
    full = gen.uniform(tuple(x.shape), x.dtype.np)
    if x.is_local:
        return creation.tensor(full, dtype=x.dtype, device=x._device)
    sbp = [flow_sbp.broadcast if s == flow_sbp.partial_sum else s for s in x.sbp]
    noise = creation.zeros(*x.shape, dtype=x.dtype, placement=x.placement, sbp=sbp)
    return nn_init._fill(noise, full)


def gumbel_softmax(x, tau=1.0, dim=None, hard=False, generator=None):
    """softmax((x + g) / tau) along `dim` (OneFlow's softmax default axis when None), g standard Gumbel noise;
    `hard`: the one-hot of its argmax, with the soft sample's gradient (straight through)."""
    x = F._floating(F._check(x, "gumbel_softmax"))
    if lazy.tracer_active():
        # inside nn.Graph.build: the job's uniform_like op draws fresh noise at every call of the graph (noise made
        # here would be traced once into a constant), N devices drawing 1 device's numbers, as dropout's mask; a
        # generator given seeds it
        attrs = {"seed": None if generator is None else int(generator.initial_seed())}
        u = dispatch.apply_op("uniform_like", [x], attrs)
    else:
        u = _uniform_like(x, generator)
    # -log(-log(U)); U = 0 (a draw of exactly 0) would give -inf: the smallest positive value instead
    u = F.clamp(u, min=float(np.finfo(x.dtype.np).tiny))
    gumbels = F.neg(F.log(F.neg(F.log(u))))
    soft = F.softmax(F.div(F.add(x, gumbels), float(tau)), dim)
    if not hard:
        return soft
    d = F._softmax_dim(x.ndim) if dim is None else F._axes(dim, x.ndim)[0]
    index = F.argmax(soft, d, keepdim=True)
    hard_out = F.cast(F.eq(_arange_along(soft, d), index), soft.dtype)
    return F.add(F.sub(hard_out, soft.detach()), soft)


def _arange_along(t, d):
    """0, 1, … along axis d of t's shape (1 elsewhere), on t's layout."""
    from oneflow_compat._global import creation

    n = t.shape[d]
    shape = [1] * t.ndim
    shape[d] = n
    values = np.arange(n, dtype=np.int64).reshape(shape)
    if t.is_local:
        return creation.tensor(values, dtype=dtypes.int64, device=t._device)
    return creation.tensor(values, dtype=dtypes.int64, placement=t.placement,
                           sbp=[flow_sbp.broadcast] * len(t.sbp))


# --- sparse softmax cross entropy ---------------------------------------------------------------------------------
def sparse_softmax_cross_entropy(labels, logits):
    """-log softmax(logits)[label] per label; logits (d_0, …, d_{r-1}, num_classes), labels (d_0, …, d_{r-1})
    int32 / int64."""
    lg, lb = F._check(logits, "sparse_softmax_cross_entropy"), F._check(labels, "sparse_softmax_cross_entropy")
    # OneFlow 0.9's op checks, types and words (user/ops/sparse_softmax_cross_entropy_op.cpp)
    loss_op_checks.sparse_softmax_cross_entropy(lg, lb)
    if not lg.dtype.is_floating:
        raise TypeError("sparse_softmax_cross_entropy: logits must be floating, got oneflow.%s" % lg.dtype.name)
    return apply_op_list("sparse_softmax_cross_entropy", [lg, lb])[0]


# --- upsample -----------------------------------------------------------------------------------------------------
def upsample(*args, **kwargs):
    """OneFlow 0.9's `nn.functional.upsample` is `nn.Upsample`: `upsample(size=None, scale_factor=None,
    mode='nearest', align_corners=None)` makes the module. With a tensor first, `upsample(input, size=None,
    scale_factor=None, mode='nearest', align_corners=None)` interpolates it (PyTorch's functional form)."""
    from oneflow_compat._global.nn_misc import Upsample, interpolate

    if args and isinstance(args[0], Tensor) or isinstance(kwargs.get("input"), Tensor):
        return interpolate(*args, **kwargs)
    return Upsample(*args, **kwargs)

