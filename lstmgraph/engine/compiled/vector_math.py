"""``tanh`` for the compiled kernels, in arithmetic LLVM can vectorise.

Every squashing of the papers' nets is written with tanh (`lstmgraph.operations`), and libm's
``tanh`` is a call LLVM cannot vectorise: in the kernels' loops over trials side by side it ran
once per lane, 13 ns a call, about a third of a CERG step (docs/performance.md). This ``tanh``
is straight-line arithmetic, inlined where it is called, so a loop over lanes runs it in SIMD
registers. It is accurate to a few units in the last place (tests/engine/compiled/test_vector_math.py
measures it against libm over the whole range), which keeps the compiled executor within
1e-12 of the numpy reference; both compiled kernels call it, so they stay bit-identical.

The method is Cephes' (S. L. Moshier, tanh.c and exp.c): for |x| < 0.625 a rational function of
x^2; above, 1 - 2 / (exp(2|x|) + 1), with exp by Cody-Waite range reduction
(2|x| = k ln 2 + r, |r| <= ln 2 / 2), a degree-13 Taylor polynomial of exp(r) (truncation
error below 5e-18 relative) and 2^k built in the exponent bits.
"""

from __future__ import annotations

import numba
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from ... import numba_cache  # noqa: F401  (numba caches this module's functions in the kernel cache)

# tanh(x) = x + x z P(z) / Q(z), z = x^2, for |x| < 0.625 (Cephes tanh.c).
_P0, _P1, _P2 = -9.64399179425052238628e-1, -9.92877231001918586564e1, -1.61468768441708447952e3
_Q0, _Q1, _Q2 = 1.12811678491632931402e2, 2.23548839060100448583e3, 4.84406305325125486048e3
_LOG2E = 1.4426950408889634074
_LN2_HI, _LN2_LO = 6.93145751953125e-1, 1.42860682030941723212e-6  # Cephes exp.c: C1 + C2 = ln 2
_SHIFTER = 6755399441055744.0  # 1.5 * 2^52: adding it rounds to an integer held in the low bits
_LARGEST = 22.0  # tanh(x) rounds to 1 from here on


@intrinsic
def _bits(typingctx, value):
    """The bits of a float64 as an int64."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


@intrinsic
def _divide(typingctx, numerator, denominator):
    """numerator / denominator as IEEE division: numba's ``/`` checks the divisor for zero (to
    raise ZeroDivisionError), a branch that keeps LLVM from vectorising the loop around it."""
    def codegen(context, builder, signature, args):
        return builder.fdiv(args[0], args[1])
    return types.float64(types.float64, types.float64), codegen


@intrinsic
def _float(typingctx, bits):
    """The float64 whose bits an int64 holds."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@numba.njit(cache=True, nogil=True, inline="always")
def tanh(x: float) -> float:
    """tanh(x), NaN for NaN, +-1 for +-inf."""
    a = -x if x < 0.0 else x
    # Near 0: the rational function.
    z = a * a
    small = a + a * z * _divide((_P0 * z + _P1) * z + _P2, ((z + _Q0) * z + _Q1) * z + _Q2)
    # Elsewhere: exp(2a) = 2^k exp(r).
    t = 2.0 * (_LARGEST if a > _LARGEST else a)
    shifted = t * _LOG2E + _SHIFTER
    k = shifted - _SHIFTER
    r = (t - k * _LN2_HI) - k * _LN2_LO
    p = 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    scale = _float((_bits(shifted) + 1023) << 52)
    large = 1.0 - _divide(2.0, p * scale + 1.0)
    y = small if a < 0.625 else large
    return -y if x < 0.0 else y
