"""The subscripts of `einsum` that name no plain contraction, turned into ones that do (OneFlow 0.9's einsum,
python/oneflow/framework/docstr/einsum.py; its functor oneflow/core/functional/impl/linalg_functor.cpp EinSumFunctor):

* an ellipsis '...' stands for the dims of an operand its letters do not name, right-aligned across the operands
  and broadcast (a dim of size 1 against n); the output holds them first where the equation has no '->', where the
  '->' part has no '...' they are summed;
* a subscript repeated within one operand ('ii', 'bii') takes that operand's diagonal over those dims.

`expand(equation, operands)` returns (terms, output, operands): every term of distinct subscripts that fit its
operand's dims, and the operands with their diagonals taken and broadcast dims expanded.

Written on `functional` and the registered ops alone (tensor_functions imports this module)."""
from oneflow_compat._global import functional as F
from oneflow_compat._global.dispatch import apply_op

_ELLIPSIS_BASE = 0x2460  # the ellipsis' dims get subscripts no equation can hold (circled digits and on)


def _split(equation):
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->")
    else:
        lhs, out = eq, None
    return lhs.split(","), out


def _check_term(term, equation):
    body = term.replace("...", "")
    if "." in body:
        raise RuntimeError("einsum(): found '.' for operand that is not part of any ellipsis in %r" % equation)
    for c in body:
        if not c.isalpha():
            raise RuntimeError("einsum(): invalid subscript given at index of %r: %r (subscripts must be letters)"
                               % (equation, c))
    if term.count("...") > 1:
        raise RuntimeError("einsum(): found more than one ellipsis ('...') in %r" % term)


def _diagonal(x, p, q):
    """The main diagonal over dims p < q of equal size, as the last dim: those two dims moved last and flattened,
    then every (n + 1)-th entry (reshape and slice: their gradients and SBP signatures)."""
    rest = [d for d in range(x.ndim) if d not in (p, q)]
    n = x.shape[p]
    y = F.reshape(F.permute(x, rest + [p, q]), tuple(x.shape[d] for d in rest) + (n * n,))
    return F.index(y, (Ellipsis, slice(0, n * n, n + 1)))


def expand(equation, operands):
    terms, out = _split(equation)
    if len(terms) != len(operands):
        raise ValueError("einsum(): equation %r names %d operands, %d given" % (equation, len(terms), len(operands)))
    for term in terms:
        _check_term(term, equation)
    if out is not None:
        _check_term(out, equation)
    # the ellipsis' dims: as many as the operand has beyond its letters, right-aligned
    n_ell = 0
    for term, x in zip(terms, operands):
        named = len(term.replace("...", ""))
        if "..." in term:
            if x.ndim < named:
                raise ValueError("einsum(): subscripts %r do not fit an operand of %d dims" % (term, x.ndim))
            n_ell = max(n_ell, x.ndim - named)
        elif named != x.ndim:
            raise ValueError("einsum(): subscripts %r do not fit an operand of %d dims" % (term, x.ndim))
    ell = "".join(chr(_ELLIPSIS_BASE + i) for i in range(n_ell))
    full = []
    for term, x in zip(terms, operands):
        if "..." in term:
            k = x.ndim - len(term.replace("...", ""))
            term = term.replace("...", ell[n_ell - k:])
        full.append(term)
    letters = "".join(full)  # (the implicit output counts a repeated subscript as repeated: 'ii' is the trace)
    # diagonals: a subscript repeated within one operand
    ops = []
    for i, (term, x) in enumerate(zip(full, operands)):
        while len(set(term)) != len(term):
            c = next(ch for ch in term if term.count(ch) > 1)
            p = term.index(c)
            q = term.index(c, p + 1)
            if x.shape[p] != x.shape[q]:
                raise RuntimeError("einsum(): subscript %s is repeated for operand %d but the sizes don't match, "
                                   "%d != %d" % (c, i, x.shape[p], x.shape[q]))
            x = _diagonal(x, p, q)
            term = term[:p] + term[p + 1:q] + term[q + 1:] + c
        full[i] = term
        ops.append(x)
    # sizes: a broadcast dim (size 1) takes the others' size
    size = {}
    for term, x in zip(full, ops):
        for c, n in zip(term, x.shape):
            if size.get(c, 1) == 1:
                size[c] = n
            elif n != 1 and n != size[c]:
                raise RuntimeError("einsum(): operands do not broadcast with remapped shapes: subscript %s has sizes "
                                   "%d and %d" % (c if c not in ell else "...", size[c], n))
    for i, (term, x) in enumerate(zip(full, ops)):
        target = tuple(size[c] for c in term)
        if tuple(x.shape) != target:
            ops[i] = apply_op("expand", [x], {"shape": target})
    if out is None:
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell))
    else:
        out = out.replace("...", ell) if "..." in out else out
        for c in out:
            if c not in letters:
                raise RuntimeError("einsum(): output subscript %s does not appear in the equation for any input "
                                   "operand" % c)
        if len(set(out)) != len(out):
            raise RuntimeError("einsum(): output subscript %s appears more than once in the output" %
                               next(c for c in out if out.count(c) > 1))
    return full, out, tuple(ops)
