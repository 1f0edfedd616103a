"""Matrix products whose operands are addressed through offset tables, compiled for this CPU: the convolution's
products read their patches straight from the padded input (no patch matrix), and its input gradient adds its
patch gradients straight into the padded gradient (no col2im pass).

    gemm(a, a_rows, a_k, b, b_k, b_cols, c, c_rows, c_cols, samples=1, strides=(0, 0, 0), accumulate=False,
         lanes=16)

For each sample s < samples, row i < len(a_rows), vector v < len(b_cols) and lane l < lanes:

    c[s*strides[2] + c_rows[i] + c_cols[v] + l]  (+)=  sum over k < len(a_k), in order, of
        a[s*strides[0] + a_rows[i] + a_k[k]] * b[s*strides[1] + b_k[k] + b_cols[v] + l]

on flat float32 arrays, each sum a chain of fused multiply-adds in k order (so a value never depends on which
block or tile it fell in). `accumulate` adds into c, in the order of the blocks, so entries of c that several
rows or samples address receive every contribution (the gradient's scatter-add); otherwise c is overwritten.

Why it exists: on LeNet's conv2 (per sample 196 pixels x 800 patch columns x 64 filters) OpenBLAS's sgemm runs
at ~97 GFLOP/s on this machine whatever the blocking, and the patch copies and col2im add ~8 ms per step on top;
these blocks run at ~105-116 GFLOP/s (the machine's peak is ~116 per core) with no copies.

How: LLVM IR written here for 6-row x 4-vector register blocks (24 accumulators in AVX-512 registers, each
product row's value broadcast from memory) plus the edge blocks, and a driver looping over samples, column tiles
and row blocks; compiled once per process through llvmlite (numba's code generator, present whenever numba is)
for the host CPU. Every call checks that the tables stay inside the arrays before any memory is touched.

`AVAILABLE`: numba's llvmlite can compile these (any CPU; tests use `lanes=1` on small shapes). `FAST`: the host
has AVX-512, where the blocks were measured faster than the BLAS; `nn.py` takes this path only then.
"""
import ctypes
import threading

import numpy as np

from .jit import AVAILABLE as _JIT

try:
    if not _JIT:
        raise ImportError("numba disabled or absent")
    import llvmlite.binding as _llvm
    if not hasattr(_llvm, "create_pass_builder"):  # the new pass manager's bindings: llvmlite >= 0.44
        raise ImportError("llvmlite too old")
except ImportError:
    _llvm = None

AVAILABLE = _llvm is not None
_ROWS, _VECTORS = 6, 4  # a block: rows x vectors of accumulators (24 of AVX-512's 32 registers)


def _host_has_avx512():
    if _llvm is None:
        return False
    try:
        return "+avx512f" in _llvm.get_host_cpu_features().flatten().split(",")
    except RuntimeError:  # features unknown on this host
        return False


FAST = _host_has_avx512()


def _block_ir(rows, vectors, lanes):
    """One block: `rows` x `vectors` accumulators over the k loop, then stored (or added) into c."""
    v_t = "<%d x float>" % lanes
    out = ["define internal void @block_%d_%d(float* noalias %%A, i64* %%arow, i64* %%ak, float* noalias %%B, "
           "i64* %%bk, i64* %%bcol, float* %%C, i64* %%crow, i64* %%ccol, i64 %%K, i64 %%acc) alwaysinline {"
           % (rows, vectors), "entry:"]
    for i in range(rows):
        out += ["  %%arp%d = getelementptr i64, i64* %%arow, i64 %d" % (i, i),
                "  %%ar%d = load i64, i64* %%arp%d" % (i, i),
                "  %%abase%d = getelementptr float, float* %%A, i64 %%ar%d" % (i, i)]
    for v in range(vectors):
        out += ["  %%bcp%d = getelementptr i64, i64* %%bcol, i64 %d" % (v, v),
                "  %%bc%d = load i64, i64* %%bcp%d" % (v, v),
                "  %%bbase%d = getelementptr float, float* %%B, i64 %%bc%d" % (v, v)]
    out += ["  br label %loop", "loop:", "  %k = phi i64 [0, %entry], [%k1, %loop]"]
    for i in range(rows):
        for v in range(vectors):
            out.append("  %%c%d_%d = phi %s [zeroinitializer, %%entry], [%%n%d_%d, %%loop]" % (i, v, v_t, i, v))
    out += ["  %akp = getelementptr i64, i64* %ak, i64 %k", "  %akv = load i64, i64* %akp",
            "  %bkp = getelementptr i64, i64* %bk, i64 %k", "  %bkv = load i64, i64* %bkp"]
    for v in range(vectors):
        out += ["  %%bp%d = getelementptr float, float* %%bbase%d, i64 %%bkv" % (v, v),
                "  %%bq%d = bitcast float* %%bp%d to %s*" % (v, v, v_t),
                "  %%b%d = load %s, %s* %%bq%d, align 4" % (v, v_t, v_t, v)]
    for i in range(rows):
        out += ["  %%xp%d = getelementptr float, float* %%abase%d, i64 %%akv" % (i, i),
                "  %%x%d = load float, float* %%xp%d, align 4" % (i, i),
                "  %%xi%d = insertelement %s undef, float %%x%d, i32 0" % (i, v_t, i),
                "  %%xs%d = shufflevector %s %%xi%d, %s undef, <%d x i32> zeroinitializer" % (i, v_t, i, v_t,
                                                                                               lanes)]
        for v in range(vectors):
            out.append("  %%n%d_%d = call %s @llvm.fma.v%df32(%s %%xs%d, %s %%b%d, %s %%c%d_%d)"
                       % (i, v, v_t, lanes, v_t, i, v_t, v, v_t, i, v))
    out += ["  %k1 = add i64 %k, 1", "  %more = icmp slt i64 %k1, %K", "  br i1 %more, label %loop, label %store",
            "store:", "  %adding = icmp ne i64 %acc, 0"]
    for v in range(vectors):
        out += ["  %%ccp%d = getelementptr i64, i64* %%ccol, i64 %d" % (v, v),
                "  %%cc%d = load i64, i64* %%ccp%d" % (v, v)]
    # c is not noalias: with `acc`, blocks whose entries coincide must add in program order
    for i in range(rows):
        out += ["  %%crp%d = getelementptr i64, i64* %%crow, i64 %d" % (i, i),
                "  %%cr%d = load i64, i64* %%crp%d" % (i, i)]
        for v in range(vectors):
            t = "%d_%d" % (i, v)
            out += ["  %%co%s = add i64 %%cr%d, %%cc%d" % (t, i, v),
                    "  %%cp%s = getelementptr float, float* %%C, i64 %%co%s" % (t, t),
                    "  %%cq%s = bitcast float* %%cp%s to %s*" % (t, t, v_t),
                    "  %%old%s = load %s, %s* %%cq%s, align 4" % (t, v_t, v_t, t),
                    "  %%sum%s = fadd %s %%old%s, %%n%s" % (t, v_t, t, t),
                    "  %%val%s = select i1 %%adding, %s %%sum%s, %s %%n%s" % (t, v_t, t, v_t, t),
                    "  store %s %%val%s, %s* %%cq%s, align 4" % (v_t, t, v_t, t)]
    out += ["  ret void", "}"]
    return out


def _driver_ir():
    """samples x column tiles (of _VECTORS vectors) x row blocks (of _ROWS rows), the edges by smaller blocks.
    alignstack(64): the blocks spill a few vector registers, and a spill slot straddling two cache lines halved
    the speed in every other process (wherever the caller's stack happened to lie)."""
    out = ["define void @gemm(float* %A, i64 %a_ss, i64* %arow, i64* %ak, float* %B, i64 %b_ss, i64* %bk, "
           "i64* %bcol, float* %C, i64 %c_ss, i64* %crow, i64* %ccol, i64 %S, i64 %M, i64 %K, i64 %NV, i64 %acc) "
           "alignstack(64) {",
           "entry:", "  br label %samples",
           "samples:", "  %s = phi i64 [0, %entry], [%s1, %next_sample]",
           "  %ao = mul i64 %s, %a_ss", "  %As = getelementptr float, float* %A, i64 %ao",
           "  %bo = mul i64 %s, %b_ss", "  %Bs = getelementptr float, float* %B, i64 %bo",
           "  %co = mul i64 %s, %c_ss", "  %Cs = getelementptr float, float* %C, i64 %co",
           "  br label %tiles",
           "tiles:", "  %t = phi i64 [0, %samples], [%t1, %next_tile]",
           "  %tleft = sub i64 %NV, %t", "  %tshort = icmp slt i64 %tleft, " + str(_VECTORS),
           "  %nv = select i1 %tshort, i64 %tleft, i64 " + str(_VECTORS),
           "  %bcolt = getelementptr i64, i64* %bcol, i64 %t", "  %ccolt = getelementptr i64, i64* %ccol, i64 %t",
           "  br label %blocks",
           "blocks:", "  %r = phi i64 [0, %tiles], [%r1, %next_block]",
           "  %rleft = sub i64 %M, %r", "  %rshort = icmp slt i64 %rleft, " + str(_ROWS),
           "  %mr = select i1 %rshort, i64 %rleft, i64 " + str(_ROWS),
           "  %arowr = getelementptr i64, i64* %arow, i64 %r", "  %crowr = getelementptr i64, i64* %crow, i64 %r",
           "  %mr8 = mul i64 %mr, 8", "  %key = add i64 %mr8, %nv"]
    shapes = [(m, n) for m in range(1, _ROWS + 1) for n in range(1, _VECTORS + 1)]
    out.append("  switch i64 %%key, label %%next_block [%s]"
               % " ".join("i64 %d, label %%b%d_%d" % (m * 8 + n, m, n) for m, n in shapes))
    for m, n in shapes:
        out += ["b%d_%d:" % (m, n),
                "  call void @block_%d_%d(float* %%As, i64* %%arowr, i64* %%ak, float* %%Bs, i64* %%bk, "
                "i64* %%bcolt, float* %%Cs, i64* %%crowr, i64* %%ccolt, i64 %%K, i64 %%acc)" % (m, n),
                "  br label %next_block"]
    out += ["next_block:", "  %r1 = add i64 %r, " + str(_ROWS), "  %rmore = icmp slt i64 %r1, %M",
            "  br i1 %rmore, label %blocks, label %next_tile",
            "next_tile:", "  %t1 = add i64 %t, " + str(_VECTORS), "  %tmore = icmp slt i64 %t1, %NV",
            "  br i1 %tmore, label %tiles, label %next_sample",
            "next_sample:", "  %s1 = add i64 %s, 1", "  %smore = icmp slt i64 %s1, %S",
            "  br i1 %smore, label %samples, label %done",
            "done:", "  ret void", "}"]
    return out


def module_ir(lanes):
    """The LLVM IR text of the module for vectors of `lanes` floats."""
    lines = ["declare <%d x float> @llvm.fma.v%df32(<%d x float>, <%d x float>, <%d x float>)" % ((lanes,) * 5)]
    for m in range(1, _ROWS + 1):
        for n in range(1, _VECTORS + 1):
            lines += _block_ir(m, n, lanes)
    return "\n".join(lines + _driver_ir())


_compiled = {}  # lanes -> (engine, function); the engine owns the code, so it lives as long as the process
_compile_lock = threading.Lock()
_I64, _PTR = ctypes.c_int64, ctypes.c_void_p
_SIGNATURE = ctypes.CFUNCTYPE(None, _PTR, _I64, _PTR, _PTR, _PTR, _I64, _PTR, _PTR, _PTR, _I64, _PTR, _PTR,
                              _I64, _I64, _I64, _I64, _I64)


def _function(lanes):
    found = _compiled.get(lanes)
    if found is not None:
        return found[1]
    # numba's compiler lock as well: LLVM's global state is shared with numba compiling in another thread
    from numba.core.compiler_lock import global_compiler_lock
    with _compile_lock, global_compiler_lock:
        if lanes not in _compiled:
            _llvm.initialize_native_target()
            _llvm.initialize_native_asmprinter()
            module = _llvm.parse_assembly(module_ir(lanes))
            module.verify()
            machine = _llvm.Target.from_default_triple().create_target_machine(
                cpu=_llvm.get_host_cpu_name(), features=_llvm.get_host_cpu_features().flatten(), opt=3)
            # no unrolling or re-vectorising: an unrolled k loop holds two iterations' operands at once and
            # spills the accumulators (measured: 36 GFLOP/s instead of 105)
            tuning = _llvm.PipelineTuningOptions(speed_level=3)
            tuning.loop_unrolling = tuning.loop_interleaving = False
            tuning.loop_vectorization = tuning.slp_vectorization = False
            passes = _llvm.create_pass_builder(machine, tuning)
            passes.getModulePassManager().run(module, passes)
            engine = _llvm.create_mcjit_compiler(module, machine)
            engine.finalize_object()
            _compiled[lanes] = (engine, _SIGNATURE(engine.get_function_address("gemm")))
    return _compiled[lanes][1]


def _table(name, t, length=None):
    if not (isinstance(t, np.ndarray) and t.dtype == np.int64 and t.ndim == 1 and t.flags.c_contiguous):
        raise TypeError("vector_gemm: table %s must be a contiguous 1-D int64 array" % name)
    if length is not None and t.shape[0] != length:
        raise ValueError("vector_gemm: table %s has %d entries, expected %d" % (name, t.shape[0], length))
    return (int(t.min()), int(t.max())) if t.size else (0, -1)


def _operand(name, arr):
    if not (isinstance(arr, np.ndarray) and arr.dtype == np.float32 and arr.flags.c_contiguous):
        raise TypeError("vector_gemm: %s must be a C-contiguous float32 numpy array" % name)


def _reach(name, arr, stride, samples, ranges, width):
    """The entries touched lie inside `arr` (sum of the tables' ranges, the sample stride, the vector width)."""
    low = sum(lo for lo, _ in ranges)
    high = sum(hi for _, hi in ranges) + (samples - 1) * stride + width - 1
    if stride < 0 or low < 0 or high >= arr.size:
        raise IndexError("vector_gemm: %s is addressed at [%d, %d] but holds %d entries"
                         % (name, min(low, 0), high, arr.size))


def gemm(a, a_rows, a_k, b, b_k, b_cols, c, c_rows, c_cols, samples=1, strides=(0, 0, 0), accumulate=False,
         lanes=16):
    """See the module's docstring. Raises before touching memory when a table reaches outside its array."""
    if not AVAILABLE:
        raise RuntimeError("vector_gemm: needs numba's llvmlite (numba absent or ONEFLOW_COMPAT_JIT=0)")
    for name, arr in (("a", a), ("b", b), ("c", c)):
        _operand(name, arr)
    if np.may_share_memory(c, a) or np.may_share_memory(c, b):
        raise ValueError("vector_gemm: c overlaps an operand")
    m, k, nv = a_rows.shape[0], a_k.shape[0], b_cols.shape[0]
    ranges = {"a_rows": _table("a_rows", a_rows), "a_k": _table("a_k", a_k), "b_k": _table("b_k", b_k, k),
              "b_cols": _table("b_cols", b_cols), "c_rows": _table("c_rows", c_rows, m),
              "c_cols": _table("c_cols", c_cols, nv)}
    if samples < 0 or k < 1 and m * nv * samples:
        raise ValueError("vector_gemm: %d samples, %d products per entry" % (samples, k))
    if not (samples and m and nv):
        return c
    a_ss, b_ss, c_ss = (int(s) for s in strides)
    _reach("a", a, a_ss, samples, (ranges["a_rows"], ranges["a_k"]), 1)
    _reach("b", b, b_ss, samples, (ranges["b_k"], ranges["b_cols"]), lanes)
    _reach("c", c, c_ss, samples, (ranges["c_rows"], ranges["c_cols"]), lanes)
    _function(lanes)(a.ctypes.data, a_ss, a_rows.ctypes.data, a_k.ctypes.data, b.ctypes.data, b_ss,
                     b_k.ctypes.data, b_cols.ctypes.data, c.ctypes.data, c_ss, c_rows.ctypes.data,
                     c_cols.ctypes.data, samples, m, k, nv, 1 if accumulate else 0)
    return c
