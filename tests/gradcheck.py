"""Gradient checks of registered ops through the whole framework (trace, autodiff, SBP, plan, kernels).

For an op type, its input arrays and attrs, `check_op`:

* runs a predict job that feeds every input as a placeholder and returns the op's outputs, and from it computes
  the numeric gradient of loss(x) = Σ_k Σ(out_k(x) · r_k) (fixed random r_k) by central differences in float64;
* runs a train job computing the same loss, where each differentiated input is `placeholder + v_i` with a zero
  variable `v_i`: the framework's gradient d loss / d x_i is read with `flow.watch_diff(v_i)`, and one SGD step
  (lr 1, momentum 0; the loss has shape (1,), so no 1/N scaling) must leave `v_i = -gradient`, which checks the
  optimizer path as well.

`compare_devices` runs the train job on n devices (inputs split as the case asks) and checks that outputs and
gradients equal the single-device ones: the SBP signatures the op declares must compute the same logical result.
"""
import typing

import numpy as np

import oneflow_compat as flow
from oneflow_compat import typing as tp
from oneflow_compat.ir import dtypes
from oneflow_compat.ops import registry
from oneflow_compat.tools import validate

import cpu_reference  # (tests/ is on the path: gradcheck is imported from the tests)

_SGD_LR = 1.0
# N devices vs one: the same math up to summation order (partial sums, split reductions)
_DEVICE_RTOL = {2: 1e-2, 4: 1e-5, 8: 1e-10}


class Case:
    """One op invocation to check; `inputs` are numpy arrays (float64 for the differentiated ones).

    wrt: indices of the inputs to differentiate (default: every floating input);
    outputs: indices of the outputs entering the loss (default: every floating output);
    splits: per input, the batch axis of its placeholder on >1 devices (None = broadcast); default: axis 0 when
            that axis has at least 2 rows, else broadcast;
    layouts: more `splits` lists to try on >1 devices (other signatures of the op get chosen);
    eps / rtol / atol: finite-difference step and the tolerance (atol is raised by rtol · max|numeric grad|);
    body: instead of the single op, a function of the input blobs returning a list of output blobs (for ops that
          only make sense inside a construct, e.g. view casts);
    n_outputs: the output count (default: as many as the op builds on these inputs; 1 for a body).

    The rows of oneflow_compat/ops/examples.py carry the same fields.
    """

    def __init__(self, op_type, inputs, attrs=None, wrt=None, outputs=None, splits=None, layouts=(), eps=1e-6,
                 rtol=1e-6, atol=1e-9, label="", body=None, n_outputs=None):
        self.op_type = op_type
        self.inputs = [np.asarray(x) for x in inputs]
        self.attrs = dict(attrs or {})
        self.wrt = list(wrt) if wrt is not None else [i for i, x in enumerate(self.inputs) if x.dtype.kind == "f"]
        self.outputs = outputs
        self.splits = list(splits) if splits is not None else [_default_split(x) for x in self.inputs]
        self.layouts = [self.splits] + [list(lay) for lay in layouts]
        self.body = body
        if n_outputs is None:
            # variadic ops (split_like) have as many outputs as their inputs say
            n_outputs = 1 if body is not None else len(validate.build_op(op_type, self.inputs, self.attrs, 1).outputs)
        self.n_outputs = n_outputs
        self.eps, self.rtol, self.atol = eps, rtol, atol
        self.label = label

    def build(self, blobs):
        if self.body is not None:
            return _as_list(self.body(list(blobs)))
        return _as_list(registry.apply(self.op_type, list(blobs), self.attrs))

    def __repr__(self):
        shapes = ",".join("x".join(map(str, x.shape)) for x in self.inputs)
        return "%s(%s)%s" % (self.op_type, shapes, "[%s]" % self.label if self.label else "")


def _default_split(x):
    return 0 if x.ndim >= 1 and x.shape[0] >= 2 else None


def _placeholder(x, split):
    return tp.Numpy.Placeholder(tuple(x.shape), dtype=dtypes.from_numpy(x.dtype), batch_axis=split)


def _declare(name, body, params, n_returns, job_type):
    """A job function whose single parameter is a tuple of placeholders and which returns a tuple of arrays."""
    body.__name__ = body.__qualname__ = name
    body.__annotations__ = {"args": typing.Tuple[tuple(params)], "return": typing.Tuple[(tp.Numpy,) * n_returns]}
    return flow.global_function(type=job_type)(body)


def _as_list(outs):
    return list(outs) if isinstance(outs, (list, tuple)) else [outs]


def _new_session(devices):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)


def forward_job(case, devices=1):
    """A predict job (in a fresh session) returning the op's outputs for a tuple of input arrays."""
    _new_session(devices)
    params = [_placeholder(x, s if devices > 1 else _default_split(x)) for x, s in zip(case.inputs, case.splits)]

    def forward(args):
        return tuple(case.build(args))

    return _declare("gradcheck_fwd", forward, params, case.n_outputs, "predict")


def loss_weights(case, outs):
    """(indices of the outputs in the loss, their fixed random weights r_k: |r| in [0.5, 1.5], random signs)."""
    sel = case.outputs if case.outputs is not None else [k for k, o in enumerate(outs) if o.dtype.kind == "f"]
    assert sel, "%r: no floating output to build a loss from" % (case,)
    rng = np.random.default_rng(12345)
    rs = []
    for k in sel:
        shape, dt = outs[k].shape, outs[k].dtype
        rs.append((rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)).astype(dt))
    return sel, rs


def _loss(outs, sel, rs):
    return float(sum(np.sum(np.asarray(outs[k], dtype=np.float64) * r) for k, r in zip(sel, rs)))


def numeric_grads(case, fwd, sel, rs):
    """Central differences of Σ_k Σ(out_k · r_k), element by element, for every input in case.wrt."""
    grads = []
    for i in case.wrt:
        x = case.inputs[i]
        g = np.zeros(x.size, dtype=np.float64)
        for e in range(x.size):
            vals = []
            for step in (case.eps, -case.eps):
                moved = x.copy()
                moved.reshape(-1)[e] += step
                xs = list(case.inputs)
                xs[i] = moved
                vals.append(_loss(_as_list(fwd(tuple(xs))), sel, rs))
            g[e] = (vals[0] - vals[1]) / (2 * case.eps)
        grads.append(g.reshape(x.shape))
    return grads


def _keeper(store, key):
    def keep(g: tp.Numpy):
        store[key] = np.array(g)
    return keep


def framework_grads(case, sel, rs, devices=1, splits=None):
    """Runs the train job once on `devices` devices, inputs split as `splits` (default: the case's);
    returns (outputs, [d loss / d input_i for i in case.wrt])."""
    _new_session(devices)
    splits = (splits or case.splits) if devices > 1 else [_default_split(x) for x in case.inputs]
    params = [_placeholder(x, s) for x, s in zip(case.inputs, splits)]
    params += [tp.Numpy.Placeholder(tuple(r.shape), dtype=dtypes.from_numpy(r.dtype), batch_axis=None) for r in rs]
    seen = {}

    def backward(args):
        xs = list(args[:len(case.inputs)])
        weights = args[len(case.inputs):]
        for i in case.wrt:
            x = case.inputs[i]
            v = flow.get_variable("gradcheck_v%d" % i, shape=tuple(x.shape), dtype=dtypes.from_numpy(x.dtype),
                                  initializer=flow.zeros_initializer(), trainable=True)
            flow.watch_diff(v, _keeper(seen, i))
            xs[i] = registry.apply("add", [xs[i], v])
        outs = case.build(xs)
        loss = None
        for k, r in zip(sel, weights):
            term = registry.apply("reduce_sum", [registry.apply("multiply", [outs[k], r])],
                                  {"axis": None, "keepdims": False})
            loss = term if loss is None else registry.apply("add", [loss, term])
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [_SGD_LR]), momentum=0).minimize(loss)
        return tuple(outs)

    job = _declare("gradcheck_bwd", backward, params, case.n_outputs, "train")
    outs = [np.asarray(o) for o in job(tuple(case.inputs) + tuple(rs))]
    grads = []
    updated = flow.get_all_variables()
    for i in case.wrt:
        g = seen.get(i)
        assert g is not None, "%r: no gradient reached input %d" % (case, i)
        assert g.shape == case.inputs[i].shape and g.dtype == case.inputs[i].dtype, \
            "%r: gradient of input %d has shape %s dtype %s" % (case, i, g.shape, g.dtype)
        np.testing.assert_array_equal(updated["gradcheck_v%d" % i].numpy(), -_SGD_LR * g,
                                      err_msg="%r: the SGD update of input %d is not -lr * grad" % (case, i))
        grads.append(g)
    return outs, grads


def check_op(case):
    """Asserts the framework's gradient of `case` equals central differences; returns (outputs, grads).

    The central differences are computed on CPU devices (`cpu_reference`): on a GPU run of the suite the device's
    gradient is compared with them, and its outputs with the CPU's (within the gradient's tolerance), while its
    train and predict jobs still agree exactly with each other."""
    with cpu_reference.on_cpu():
        fwd = forward_job(case)
        outs = [np.asarray(o) for o in fwd(tuple(case.inputs))]
        sel, rs = loss_weights(case, outs)
        num = numeric_grads(case, fwd, sel, rs)
    train_outs, grads = framework_grads(case, sel, rs)
    same_device = outs
    if cpu_reference.device_under_test() != "cpu":
        same_device = [np.asarray(o) for o in forward_job(case)(tuple(case.inputs))]
        for k, (a, b) in enumerate(zip(same_device, outs)):
            if b.dtype.kind == "f":
                np.testing.assert_allclose(a, b, rtol=max(case.rtol, 1e-5), atol=case.atol,
                                           err_msg="%r: output %d on the device vs the CPU" % (case, k))
            else:
                np.testing.assert_array_equal(a, b, err_msg="%r: output %d on the device vs the CPU" % (case, k))
    for k, (a, b) in enumerate(zip(train_outs, same_device)):
        np.testing.assert_array_equal(a, b, err_msg="%r: output %d of the train and the predict job" % (case, k))
    for i, g, n in zip(case.wrt, grads, num):
        scale = float(np.max(np.abs(n))) if n.size else 0.0
        np.testing.assert_allclose(g, n, rtol=case.rtol, atol=case.atol + case.rtol * scale,
                                   err_msg="%r: gradient of input %d vs central differences" % (case, i))
    return outs, grads


def compare_devices(case, devices, reference):
    """Asserts the train job on `devices` devices, for each of the case's input layouts, gives the single-device
    `reference` = (outputs, grads)."""
    ref_outs, ref_grads = reference
    sel, rs = loss_weights(case, ref_outs)
    for splits in case.layouts:
        _compare(case, devices, splits, framework_grads(case, sel, rs, devices, splits), ref_outs, ref_grads)


def _compare(case, devices, splits, got, ref_outs, ref_grads):
    outs, grads = got
    where = "on %d devices, inputs split %s" % (devices, splits)
    for k, (a, b) in enumerate(zip(outs, ref_outs)):
        if b.dtype.kind == "f":
            tol = _DEVICE_RTOL[b.dtype.itemsize]
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol * 1e-2,
                                       err_msg="%r: output %d %s" % (case, k, where))
        else:
            np.testing.assert_array_equal(a, b, err_msg="%r: output %d %s" % (case, k, where))
    for i, a, b in zip(case.wrt, grads, ref_grads):
        tol = _DEVICE_RTOL[b.dtype.itemsize]
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * 1e-2,
                                   err_msg="%r: gradient of input %d %s" % (case, i, where))
