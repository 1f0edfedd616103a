"""`flow.optimizer.grad_clipping.by_global_norm(clip_norm)` (legacy-api.md §2.13).

Source-faithful to OneFlow (autograd.cpp, identical v0.2–v0.5): every gradient of the optimizer is multiplied by
`min(1/‖g‖, 1/clip_norm)`, ‖g‖ the L2 norm over *all* its variables' gradients. This deliberately differs from
`tf.clip_by_global_norm` (`g·clip_norm/max(‖g‖, clip_norm)`) and from OneFlow's own docstring
(`clip_norm·g/‖g‖`) by a factor `clip_norm`: with `clip_norm=1` the three agree; otherwise OneFlow's result is
`1/clip_norm` times TF's. Kept for bit-compatibility with models trained by OneFlow.
"""
import numpy as np


class ClipGradientConf:
    """Base of gradient-clipping strategies."""

    def scale(self, global_norm):
        raise NotImplementedError


class by_global_norm(ClipGradientConf):  # noqa: N801 - legacy class name
    def __init__(self, clip_norm):
        self.clip_norm = clip_norm

    def scale(self, global_norm):
        """The factor every gradient is multiplied by, given the global L2 norm of all the gradients."""
        norm = np.float32(global_norm)
        inverse_norm = np.float32(np.inf) if norm == 0 else np.float32(1) / norm
        return float(min(inverse_norm, np.float32(1) / np.float32(self.clip_norm)))

    def scale_from_squared_norm(self, squared_norm):
        """Same from Σ g² (what OneFlow reduced; it took rsqrt of it), avoiding a sqrt on the caller's side."""
        squared = np.float32(squared_norm)
        inverse_norm = np.float32(np.inf) if squared == 0 else np.float32(1) / np.sqrt(squared)
        return float(min(inverse_norm, np.float32(1) / np.float32(self.clip_norm)))

    def __repr__(self):
        return "grad_clipping.by_global_norm(clip_norm=%r)" % (self.clip_norm,)


class by_max_norm(by_global_norm):  # noqa: N801 - the spelling of its sibling
    """OneFlow 0.9's clipping of a param group in nn.Graph (`clip_grad_max_norm`, norm type 2): every gradient times
    min(max_norm / (‖g‖ + 1e-6), 1) (job_rewriter/autograd.cpp ClipGradientByGlobalNorm, v0.9.0), the factor of
    the eager `clip_grad_norm_`; not the legacy formula above."""

    formula = "max_norm"

    def __init__(self, clip_norm, norm_type=2.0):
        super().__init__(clip_norm)
        # the group's clip_grad_norm_type: 2 is the L2 norm of the sum of squares; any other p (inf and -inf
        # included) is clipped by passes/clip_norm_types.py, as OneFlow 0.9's GlobalNorm / GlobalAbsMaxMin
        self.norm_type = float(norm_type)

    def scale(self, global_norm):
        return float(min(np.float32(self.clip_norm) / (np.float32(global_norm) + np.float32(1e-6)), np.float32(1)))

    def scale_from_squared_norm(self, squared_norm):
        return self.scale(np.sqrt(np.float32(squared_norm)))

    def __repr__(self):
        if self.norm_type != 2.0:
            return "grad_clipping.by_max_norm(max_norm=%r, norm_type=%r)" % (self.clip_norm, self.norm_type)
        return "grad_clipping.by_max_norm(max_norm=%r)" % (self.clip_norm,)
