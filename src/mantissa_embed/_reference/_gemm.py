"""numpy twin of SGEMM (``mantissa_embed._engine._gemm``).

Same name, signature, argument checks and error messages as the engine; ``sgemm`` accumulates in
float64 and rounds once.
"""

from __future__ import annotations

import numpy as np

from .._checks.gemm import check_sgemm_operand, check_sgemm_out, check_sgemm_scalar, check_sgemm_shapes

__all__ = ["sgemm"]


def sgemm(
    A, B, C=None, *, trans_a: bool = False, trans_b: bool = False, alpha: float = 1.0, beta: float = 0.0
):
    """``C = alpha * op(A) @ op(B) + beta * C`` (float32 in and out, float64 inside).

    Shapes, dtypes, checks, errors and the in-place contract are those of
    ``mantissa_embed.engine.sgemm``; ``beta == 0`` ignores the content of ``C``.
    """
    check_sgemm_operand(A, "A")
    check_sgemm_operand(B, "B")
    falpha = check_sgemm_scalar(alpha, "alpha")
    fbeta = check_sgemm_scalar(beta, "beta")
    M, N, K = check_sgemm_shapes(A.shape, B.shape, trans_a, trans_b)
    if C is None:
        C = np.zeros((M, N), dtype=np.float32)
    else:
        check_sgemm_operand(C, "C")
        check_sgemm_out(C, M, N)
        if np.may_share_memory(C, A) or np.may_share_memory(C, B):
            raise ValueError("C must not share memory with A or B")
    if M == 0 or N == 0:
        return C
    a = (A.T if trans_a else A).astype(np.float64)
    b = (B.T if trans_b else B).astype(np.float64)
    out = falpha * (a @ b) if (K > 0 and falpha != 0.0) else np.zeros((M, N))
    if fbeta != 0.0:
        out = out + fbeta * C.astype(np.float64)
    C[...] = out
    return C
