"""Fuzz of the per-row pair-weighting wrappers (``_engine/_pair_weighting.pyx``)."""

import numpy as np
from hypothesis import strategies as st

from _fuzz import Spec, alias_test, dim, f32, family_test, labels, maybe_out

_PARAMS = {
    "multi_similarity": (2.0, 50.0, 0.5),
    "circle": (0.25, 80.0),
    "generalized_lifted": (0.0, 1.0),
    "neg_lse": (1.0,),
}


def _forward(draw):
    N = dim(draw, large=200)
    square = draw(st.booleans())
    M = N if square else dim(draw, large=300)
    kind = draw(st.sampled_from(sorted(_PARAMS)))
    kw = {
        "kind": kind,
        "mat": f32(draw, (N, M)),
        "params": _PARAMS[kind],
        "inverted": draw(st.booleans()),
        "losses": maybe_out(draw, (N,)),
        "dmat": maybe_out(draw, (N, M)),
    }
    if draw(st.booleans()):
        pos = np.random.default_rng(N).random((N, M)) < 0.3
        kw.update(pos_mask=pos, neg_mask=~pos & (np.random.default_rng(M).random((N, M)) < 0.5))
    else:
        lab = labels(draw, N)
        kw.update(
            labels=lab,
            ref_labels=lab.copy() if square else labels(draw, M),
            exclude_self=square and draw(st.booleans()),
        )
    return kw


def _backward(draw):
    N, M = dim(draw, large=200), dim(draw)
    return {"dlosses": f32(draw, (N,)), "dmat": f32(draw, (N, M))}


SPECS = {
    "pairw_rows_forward": Spec(
        _forward, outs=("losses", "dmat"), flags=("exclude_self", "inverted"), strs=("kind",)
    ),
    "pairw_rows_backward": Spec(_backward, inplace=("dmat",)),
}

test_fuzz = family_test(SPECS)
test_fuzz_alias = alias_test(SPECS)
