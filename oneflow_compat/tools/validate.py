"""Mechanical check of the SBP signatures ops declare.

An op is correct on N devices only if every signature its `sbp` rule declares computes the same logical result as
one device. For each op type with example rows (`ops/examples.py`), this module builds the op in a throwaway job
on 1, 2, 3 and 4 simulated devices and on a 2 x 2 mesh (so the op's own `infer` and `sbp` rules run; on the mesh,
the n-D signatures the compiler derives from them, one declared signature per mesh axis:
`ops/sbp_rules.signatures`), and for every signature:

* cuts each logical input into the pieces the signature names: `S(k)` balanced slices (`ir.sbp`), `B` a full
  copy per device, `P` random addends that sum to the value (on a mesh: each device's block, nested along the mesh
  axes, with random addends along the P axes);
* runs the op's per-device function on each piece exactly as the plan does (`runtime.plan.DeviceSlot` +
  `device_fn`);
* assembles each output per its SBP (concatenate / sum / take one, checking that `B` copies agree and that every
  piece has the shape the plan expects) and compares it with the one-device result.

`oneflow-compat validate [--failures-only] [--devices 2,3,4,2x2] [--device gpu] [op_type ...]` (also `python -m
oneflow_compat validate`, `python -m oneflow_compat.tools.validate`) prints one line per (op, example, signature,
devices), or only the failures. With `--device gpu` the devices compute with CuPy: every signature's pieces run on
the GPU and the one-device reference stays numpy's, so each op's GPU kernels are checked against its numpy kernels too.
"""
import argparse
import dataclasses
import importlib
import pkgutil
import sys

import numpy as np

from oneflow_compat.backend import devices
from oneflow_compat.ir import builder, dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import Job
from oneflow_compat.ir.placement import Placement
from oneflow_compat.kernels import checks
from oneflow_compat.ops import registry
from oneflow_compat.ops import transitions as boxing_impl
from oneflow_compat.ops.examples import EXAMPLES, WITHOUT_EXAMPLES
from oneflow_compat.ops import sbp_rules
from oneflow_compat.runtime import plan

DEVICES = (2, 3, 4, (2, 2))  # device counts, and meshes (tuples)

_RTOL = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-10}


@dataclasses.dataclass
class Check:
    op_type: str
    example: str
    signature: str
    devices: int
    ok: bool
    message: str = ""
    mesh: tuple = None  # the mesh shape of a check on an n-D placement (`devices` its size)

    def __str__(self):
        return "%s [%s] %s on %s: %s" % (self.op_type, self.example, self.signature, where(self.devices, self.mesh),
                                         "OK" if self.ok else "FAIL " + self.message)


def where(devices, mesh):
    return "a %s mesh" % "x".join(map(str, mesh)) if mesh else "%d devices" % devices


def load_all_ops():
    """Imports every op module of the package, so that every op type that exists is registered."""
    import oneflow_compat.ops as ops_pkg

    for info in pkgutil.iter_modules(ops_pkg.__path__):
        importlib.import_module("oneflow_compat.ops." + info.name)


def placement_of(n):
    """A placement of `n` devices (an int), or a mesh of that shape (a tuple)."""
    if isinstance(n, tuple):
        size = int(np.prod(n))
        return Placement("cpu", [(0, i) for i in range(size)], hierarchy=n)
    return Placement("cpu", [(0, i) for i in range(n)])


def build_op(op_type, inputs, attrs, n):
    """The op as a job would hold it on `n` devices: input ops for its operands, then the op itself."""
    job = Job("validate-%s" % op_type, "predict", None)
    ctx = builder.BuildContext(job, None, placement_of(n), "consistent")
    with builder.Scoped(ctx):
        blobs = []
        for i, value in enumerate(inputs):
            value = np.asarray(value)
            blobs.append(registry.apply("input", [], {"shape": value.shape, "dtype": dtypes.from_numpy(value.dtype),
                                                      "kind": "numpy", "index": i, "batch_axis": None}))
        return registry.new_op(op_type, blobs, attrs)


def _validation_session():
    """A detached session for DeviceSlot.session (random ops read its root seed and keep per-session call
    counters); never the default session. Each run gets a fresh one, so every run is a job's first call."""
    from oneflow_compat.runtime.session import Session

    return Session("validation", root_seed=0)


def split_input(value, sbp, n, rng):
    """The n device pieces of a logical value for one SBP (1-D, or n-D on a mesh of n devices)."""
    if S.is_nd(sbp):
        return _split_on_mesh(value, sbp, n, rng)
    if sbp == S.B:
        return [value.copy() for _ in range(n)]
    if S.is_split(sbp):
        if sbp.axis >= value.ndim:
            raise ValueError("S(%d) of a %d-d input" % (sbp.axis, value.ndim))
        return [np.ascontiguousarray(value[S.local_slices(value.shape, sbp, i, n)]) for i in range(n)]
    if sbp == S.P:
        if value.dtype.kind == "f":
            scale = float(np.max(np.abs(value))) if value.size else 1.0
            addends = [(rng.standard_normal(value.shape) * scale).astype(value.dtype) for _ in range(n - 1)]
        elif value.dtype.kind in "iu":
            addends = [rng.integers(-3, 4, value.shape).astype(value.dtype) for _ in range(n - 1)]
        else:
            raise ValueError("no partial-sum addends for dtype %s" % value.dtype)
        last = value.copy()
        for a in addends:
            last -= a
        return addends + [last]
    raise ValueError("cannot split an input with sbp %r" % (sbp,))


def _split_on_mesh(value, sbp, n, rng):
    """Each device's block of `value` under the n-D `sbp`; along its P axes the devices sharing a block hold random
    addends of it (`split_input`'s P over the P coordinates), the same on every copy along the B axes."""
    for s in sbp.sbps:
        if S.is_split(s) and s.axis >= value.ndim:
            raise ValueError("S(%d) of a %d-d input" % (s.axis, value.ndim))
    pieces = [np.ascontiguousarray(value[S.local_slices(value.shape, sbp, i, n)]) for i in range(n)]
    p_axes = [k for k, s in enumerate(sbp.sbps) if s == S.P]
    if not p_axes:
        return pieces
    b_axes = [k for k, s in enumerate(sbp.sbps) if s == S.B]
    blocks = {}  # the devices of one block (coordinates on the split axes) by their P coordinates
    for i in range(n):
        c = S.mesh_coords(i, sbp.mesh)
        block = tuple(0 if k in p_axes or k in b_axes else x for k, x in enumerate(c))
        blocks.setdefault(block, {}).setdefault(tuple(c[k] for k in p_axes), []).append(i)
    for by_p in blocks.values():
        keys = sorted(by_p)
        first = by_p[keys[0]][0]
        for key, part in zip(keys, split_input(pieces[first], S.P, len(keys), rng)):
            for i in by_p[key]:
                pieces[i] = part.copy()
    return pieces


def _tolerance(dtype, reference):
    rtol = _RTOL.get(np.dtype(dtype))
    if rtol is None:
        return 0.0, 0.0
    # the scale of the finite values: an inf in the output (CTC's log alphas) would make any value pass
    finite = np.abs(reference[np.isfinite(reference)]) if reference.dtype.kind in "fc" else np.abs(reference)
    scale = float(np.max(finite)) if finite.size else 1.0
    # absolute part scaled to the output: partial sums cancel, so relative error alone is meaningless near zero
    return rtol, rtol * max(scale, 1.0)


def _close(a, b, dtype):
    rtol, atol = _tolerance(dtype, b)
    if rtol == 0.0:
        return a.shape == b.shape and bool(np.array_equal(a, b))
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))


def _max_error(a, b):
    if a.shape != b.shape:
        return "shape %s vs %s" % (a.shape, b.shape)
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        return "max abs error %.3g (reference max %.3g)" % (
            float(np.nanmax(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0,
            float(np.max(np.abs(b))) if b.size else 0.0)
    return "%d of %d elements differ" % (int(np.sum(a != b)), a.size)


def run_pieces(op, pieces_per_input, xp=np):
    """Runs the op's per-device function on each device's pieces; returns [device][output] host arrays (on a mesh,
    in its parallel order).

    `xp`: the array module the devices compute with — numpy, or the GPU's (`--device gpu`: each piece is copied up,
    each result down, and the op's device-side checks are read with them); object arrays (records, tensor
    buffers) stay on the host as the runtime keeps them."""
    n = op.placement.parallel_num
    session = _validation_session()
    outs = []
    for i in range(n):
        dev = plan.DeviceSlot(op, i, xp, session)
        fn = plan.device_fn(op, dev)
        args = [_up(xp, pieces[i]) for pieces in pieces_per_input]
        before = [devices.to_host(a).copy() for a in args]
        res = fn(*args)
        for k, (a, b) in enumerate(zip(args, before)):
            # kernels never write their inputs: on a device the same register may feed several ops
            if not np.array_equal(devices.to_host(a), b, equal_nan=b.dtype.kind in "fc"):
                raise AssertionError("device %d: the kernel modified its input %d in place" % (i, k))
        if len(op.outputs) == 1:
            res = (res,)
        outs.append([np.asarray(devices.to_host(r)) for r in res])
        checks.raise_failed()  # (a device kernel's checks fail here, with its results)
    return outs


def _up(xp, piece):
    if xp is np or getattr(piece, "dtype", None) == object:
        return piece
    return xp.asarray(piece)


def assemble_output(pieces, sbp, meta, n):
    """Logical value of one output from its device pieces, or raises AssertionError saying what is wrong."""
    for i, p in enumerate(pieces):
        want = S.local_shape(meta.shape, sbp, i, n)
        if not fits_shape(p.shape, want, meta.is_dynamic):
            raise AssertionError("device %d produced shape %s, the plan expects %s for %r of %s" % (
                i, tuple(p.shape), want, sbp, meta.shape))
        if p.dtype != meta.dtype.np:
            raise AssertionError("device %d produced dtype %s, infer says %s" % (i, p.dtype, meta.dtype.np))
    if S.is_nd(sbp):
        return _assemble_on_mesh(pieces, sbp, meta, n)
    if sbp == S.B:
        for i, p in enumerate(pieces[1:], 1):
            if not _close(p, pieces[0], p.dtype):
                raise AssertionError("B output differs between device 0 and device %d (%s)" % (
                    i, _max_error(p, pieces[0])))
        return pieces[0]
    if sbp == S.P or S.is_split(sbp):
        return boxing_impl.logical_from_pieces(np, pieces, sbp)
    raise AssertionError("output sbp %r cannot be assembled" % (sbp,))


def _assemble_on_mesh(pieces, sbp, meta, n):
    """The logical value of an n-D output: the devices at coordinate 0 of every B axis put their blocks in place,
    adding up along the P axes; every other device must hold what its copy at coordinate 0 holds."""
    b_axes = [k for k, s in enumerate(sbp.sbps) if s == S.B]
    if len(b_axes) == len(sbp.sbps):  # B on every axis: one value, copied (a dynamic blob's too)
        return assemble_output(pieces, S.B, meta, n)
    out = np.zeros(meta.shape, dtype=pieces[0].dtype)
    for i, p in enumerate(pieces):
        c = S.mesh_coords(i, sbp.mesh)
        first = S.mesh_index([0 if k in b_axes else x for k, x in enumerate(c)], sbp.mesh)
        if first != i:
            if not _close(p, pieces[first], p.dtype):
                raise AssertionError("B output differs between device %d and device %d along mesh axes %s (%s)"
                                     % (first, i, b_axes, _max_error(p, pieces[first])))
            continue
        block = out[S.local_slices(meta.shape, sbp, i, n)]
        block += p if block.dtype != np.bool_ else p.astype(bool)
    return out


def fits_shape(actual, static, is_dynamic):
    """A piece has the shape the plan expects: exactly, or for a dynamic blob (argwhere, sync_dynamic_resize) the
    same rank with no dim above the static (maximum) one."""
    actual, static = tuple(actual), tuple(static)
    if not is_dynamic:
        return actual == static
    return len(actual) == len(static) and all(a <= s for a, s in zip(actual, static))


def _format_sig(sig):
    ins, outs = sig
    return "(%s)->(%s)" % (", ".join(map(repr, ins)), ", ".join(map(repr, outs)))


def check_op(op_type, inputs, attrs, device_counts=DEVICES, example="", seed=0, xp=np):
    """Every declared signature of one op instance on each device count: a list of Check (passes and failures).
    The reference is the op on one host device (numpy); with `xp` a GPU module every device run is on the GPU,
    the one-device run included (a check of its own: the GPU's kernels against numpy's)."""
    inputs = [np.asarray(x) for x in inputs]
    attrs = dict(attrs or {})
    rng = np.random.default_rng(seed)
    single = build_op(op_type, inputs, attrs, 1)
    single.sbp_in, single.sbp_out = [S.B] * len(inputs), [S.B] * len(single.outputs)
    try:
        reference = run_pieces(single, [[x] for x in inputs])[0]
    except Exception as e:
        return [Check(op_type, example, "1 device", 1, False, "%s: %s" % (type(e).__name__, e))]
    for y, ref in zip(single.outputs, reference):
        if not fits_shape(ref.shape, y.shape, y.is_dynamic) or ref.dtype != y.dtype.np:
            return [Check(op_type, example, "1 device", 1, False, "kernel gives %s %s but infer says %s %s" % (
                ref.shape, ref.dtype, y.shape, y.dtype.np))]
    checks = []
    if xp is not np:
        checks.append(_check_on_device(single, inputs, reference, xp, example))
    for n in device_counts:
        op = build_op(op_type, inputs, attrs, n)
        sigs = sbp_rules.signatures(op)
        if not sigs:
            checks.append(Check(op_type, example, "-", op.placement.parallel_num, False, "no signature declared",
                                _mesh_of(op)))
        for sig in sigs:
            checks.append(_check_signature(op, sig, inputs, reference, rng, example, xp))
    return checks


def _check_on_device(single, inputs, reference, xp, example):
    """The op on one GPU device against the host reference."""
    def result(ok, message=""):
        return Check(single.type, example, "1 device on the GPU", 1, ok, message)

    try:
        got = run_pieces(single, [[x] for x in inputs], xp)[0]
        for k, (a, b) in enumerate(zip(got, reference)):
            if a.dtype != b.dtype or not _close(a, b, b.dtype):
                return result(False, "output %d differs from the host's: %s" % (
                    k, _max_error(a, b) if a.dtype == b.dtype else "dtype %s vs %s" % (a.dtype, b.dtype)))
    except AssertionError as e:
        return result(False, str(e))
    except Exception as e:  # noqa: BLE001 - a kernel that cannot run on the GPU is a failure to report
        return result(False, "%s: %s" % (type(e).__name__, e))
    return result(True)



def _mesh_of(op):
    return tuple(op.placement.hierarchy) if op.placement.is_nd else None


def _check_signature(op, sig, inputs, reference, rng, example, xp=np):
    n = op.placement.parallel_num
    ins, outs = tuple(sig[0]), tuple(sig[1])
    label = _format_sig(sig)

    def result(ok, message=""):
        return Check(op.type, example, label, n, ok, message, _mesh_of(op))

    if len(ins) != len(inputs) or len(outs) != len(op.outputs):
        return result(False, "signature has %d inputs / %d outputs, the op %d / %d" % (
            len(ins), len(outs), len(inputs), len(op.outputs)))
    op.sbp_in, op.sbp_out = list(ins), list(outs)
    try:
        pieces = [split_input(x, s, n, rng) for x, s in zip(inputs, ins)]
        per_device = run_pieces(op, pieces, xp)
        for k, (y, s) in enumerate(zip(op.outputs, outs)):
            value = assemble_output([d[k] for d in per_device], s, y.meta, n)
            if not _close(value, reference[k], reference[k].dtype):
                return result(False, "output %d differs from 1 device: %s" % (k, _max_error(value, reference[k])))
    except AssertionError as e:
        return result(False, str(e))
    except Exception as e:  # a kernel that cannot run on its pieces is as wrong as one giving wrong numbers
        return result(False, "%s: %s" % (type(e).__name__, e))
    return result(True)


def validate_op(op_type, inputs, attrs, device_counts=DEVICES):
    """The failing signatures of one op instance (an empty list when every declared signature is right)."""
    return [c for c in check_op(op_type, inputs, attrs, device_counts) if not c.ok]


def ops_with_signatures():
    """Registered op types whose `sbp` rule declares multi-device signatures."""
    load_all_ops()
    return [t for t in registry.all_types() if callable(registry.get(t).sbp)]


def missing_examples():
    """Op types with signatures but neither example rows nor a reason to have none (`ops/examples.py`)."""
    return [t for t in ops_with_signatures() if t not in EXAMPLES and t not in WITHOUT_EXAMPLES]


def check_examples(op_type, device_counts=DEVICES, xp=np):
    checks = []
    for k, ex in enumerate(EXAMPLES[op_type]):
        rng = np.random.default_rng(1000 + k)
        name = "%d%s" % (k, ": " + ex.note if ex.note else "")
        try:
            inputs = ex.make(rng)
            checks.extend(check_op(op_type, inputs, ex.attrs, device_counts, example=name, seed=k, xp=xp))
        except Exception as e:
            checks.append(Check(op_type, name, "-", 1, False, "example does not build: %s: %s" % (
                type(e).__name__, e)))
    return checks


def validate_all(op_types=None, device_counts=DEVICES, xp=np):
    """Checks for the given op types (default: every op with signatures); ops without examples give a failure.
    `xp`: the devices' array module (numpy, or the GPU's for `--device gpu`)."""
    types = list(op_types) if op_types else ops_with_signatures()
    checks = []
    for t in types:
        if t in EXAMPLES:
            checks.extend(check_examples(t, device_counts, xp))
        elif t in WITHOUT_EXAMPLES:
            checks.append(Check(t, "-", "skipped", 0, True, WITHOUT_EXAMPLES[t]))
        else:
            checks.append(Check(t, "-", "-", 0, False, "no example rows in oneflow_compat/ops/examples.py"))
    return checks


def format_table(checks):
    rows = [("op", "example", "signature", "devices", "result")]
    for c in checks:
        rows.append((c.op_type, c.example, c.signature,
                     ("x".join(map(str, c.mesh)) if c.mesh else str(c.devices)) if c.devices else "-",
                     ("OK" if c.ok else "FAIL") + ("  " + c.message if c.message else "")))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join("  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4] for r in rows)


def add_arguments(parser):
    """The command line of `oneflow-compat validate` and `python -m oneflow_compat.tools.validate`."""
    parser.add_argument("op_types", nargs="*", metavar="OP_TYPE",
                        help="op types to check (default: every op that declares SBP signatures)")
    parser.add_argument("--failures-only", action="store_true",
                        help="print only the failing checks and the count line")
    parser.add_argument("--devices", type=_device_counts, default=list(DEVICES), metavar="N,N,...",
                        help="device counts to check each signature on, and meshes written AxB (default: "
                             "2,3,4,2x2)")
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu",
                        help="what the devices compute with: cpu (numpy, the default) or gpu (CuPy: every device "
                             "run on the GPU, each op's one-device GPU run also checked against numpy)")
    return parser


def _device_counts(text):
    try:
        return [tuple(int(m) for m in n.split("x")) if "x" in n else int(n) for n in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError("expected device counts and meshes such as 2,3,4,2x2, got %r"
                                         % text) from None


def build_parser(prog="python -m oneflow_compat.tools.validate"):
    return add_arguments(argparse.ArgumentParser(prog=prog, description=DESCRIPTION))


DESCRIPTION = ("Check every SBP signature an op declares: run the op on 1 device and on N simulated devices with "
               "its inputs cut as the signature says, and compare the assembled outputs with the 1-device result.")


def run(options, out=None):
    out = out or sys.stdout
    load_all_ops()
    unknown = [t for t in options.op_types if t not in registry.all_types()]
    if unknown:
        print("validate: unknown op type(s): %s (known: %d op types; `oneflow-compat validate` checks them all)"
              % (", ".join(unknown), len(registry.all_types())), file=sys.stderr)
        return 2
    if any(min(n) < 1 if isinstance(n, tuple) else n < 1 for n in options.devices):
        print("validate: --devices takes positive device counts, got %s" % options.devices, file=sys.stderr)
        return 2
    xp = np
    if getattr(options, "device", "cpu") == "gpu":
        try:
            devices.require_cuda()
        except devices.CudaUnavailableError as e:
            print("validate --device gpu: %s" % e, file=sys.stderr)
            return 2
        xp = devices.array_module("gpu")
    checks = validate_all(options.op_types or None, tuple(options.devices), xp)
    failed = [c for c in checks if not c.ok]
    shown = failed if options.failures_only else checks
    if shown:
        print(format_table(shown), file=out)
        print("", file=out)
    print("%d checks, %d failed" % (len(checks), len(failed)), file=out)
    return 1 if failed else 0


def main(argv=None):
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
