"""`flow.roi_align(input, rois, spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned)` (OneFlow v0.9.0
functional_api.yaml `roi_align`, bound at the top of python/oneflow/__init__.py from oneflow._C): every region of
`rois` (R, 5: batch index, x1, y1, x2, y2) of the feature map `input` (N, C, H, W) pooled to (R, C, pooled_h,
pooled_w) by bilinear sampling (the op `roi_align`, ops/roi_align_ops.py; formula in kernels/roi_align.py).
Differentiable in `input`."""
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global.tensor import Tensor


def roi_align(input, rois, spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned):  # noqa: A002
    for name, t in (("input", input), ("rois", rois)):
        if not isinstance(t, Tensor):
            raise TypeError("roi_align(): argument '%s' must be Tensor, not %s" % (name, type(t).__name__))
    return apply_op("roi_align", [input, rois], {
        "spatial_scale": float(spatial_scale), "pooled_h": int(pooled_h), "pooled_w": int(pooled_w),
        "sampling_ratio": int(sampling_ratio), "aligned": bool(aligned)})
