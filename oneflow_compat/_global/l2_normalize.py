"""`flow._C.normalize` with OneFlow 0.9's signature (functional_api.yaml: `normalize(input, p=2.0, dim=1,
eps=1e-12, use_l2_norm_kernel=True)`, core/functional/impl/nn_functor.cpp NormalizeFunctor): p == 2 with
`use_l2_norm_kernel` runs the l2_normalize formula y = x / sqrt(max(sum(x^2 along dim), eps)) after OneFlow's
axis checks (L2NormalizeFunctor, its words); otherwise x / max(||x||_p, eps) (`nn.functional.normalize`)."""
from oneflow_compat._global import functional as F
from oneflow_compat._global import tensor_functions


def normalize(input, p=2.0, dim=1, eps=1e-12, use_l2_norm_kernel=True):  # noqa: A002
    x = F._check(input, "normalize")
    if use_l2_norm_kernel and abs(float(p) - 2.0) == 0.0:
        ndim = x.ndim
        axis = dim if dim >= 0 else dim + ndim
        if axis < 0:
            raise RuntimeError("Axis should >=0 but axis is %d now." % axis)
        if axis > ndim - 1:
            raise RuntimeError("Axis should < %d but axis is %d now." % (ndim, axis))
        x = F._floating(x)
        square_sum = F.sum(F.mul(x, x), axis, keepdim=True)
        return F.div(x, F.sqrt(F.clamp(square_sum, min=float(eps))))
    return tensor_functions.normalize(x, p, dim, eps)
