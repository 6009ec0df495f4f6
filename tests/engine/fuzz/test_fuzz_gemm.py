"""Fuzz of SGEMM (``_engine/_gemm.pyx``)."""

from hypothesis import strategies as st

from _fuzz import Spec, alias_test, dim, f32, family_test, maybe_out


def _sgemm(draw):
    M, N, K = dim(draw, large=257), dim(draw), dim(draw, large=385)
    ta, tb = draw(st.booleans()), draw(st.booleans())
    return {
        "A": f32(draw, (K, M) if ta else (M, K)),
        "B": f32(draw, (N, K) if tb else (K, N)),
        "C": maybe_out(draw, (M, N)),
        "trans_a": ta,
        "trans_b": tb,
        "alpha": draw(st.sampled_from((1.0, 0.0, -2.5, 1e-30))),
        "beta": draw(st.sampled_from((0.0, 1.0, 0.5))),
    }


SPECS = {"sgemm": Spec(_sgemm, outs=("C",), floats=("alpha", "beta"), flags=("trans_a", "trans_b"))}

test_fuzz = family_test(SPECS)
test_fuzz_alias = alias_test(SPECS)
