"""Fuzz of the distance, similarity, normalization and symmetric-matrix wrappers
(``_engine/_distance.pyx``)."""

import numpy as np
from hypothesis import strategies as st

from _fuzz import Spec, alias_test, dim, f32, family_test, maybe_out
from mantissa_embed import engine


def _pair(draw):
    N, M, D = dim(draw, large=300), dim(draw), dim(draw, large=67)
    x = f32(draw, (N, D))
    r = x if draw(st.integers(0, 3)) == 0 else f32(draw, (M, D))  # documented: r may be x
    return x, r


def _ws(draw, N, M, backward):
    if draw(st.booleans()):
        return None
    return np.empty(engine.euclidean_workspace_size(N, M, backward), np.float32)


def _l2_forward(draw):
    x = f32(draw, (dim(draw, large=300), dim(draw, large=67)))
    return {
        "x": x,
        "eps": draw(st.sampled_from((1e-12, 1.0, 1.2e-38))),
        "y": maybe_out(draw, x.shape),
        "norms": maybe_out(draw, x.shape[:1]),
    }


def _l2_backward(draw):
    x = f32(draw, (dim(draw), dim(draw)))
    y, norms = engine.l2_normalize_forward(x)
    return {"dy": f32(draw, x.shape), "y": y, "norms": norms, "eps": 1e-12, "dx": maybe_out(draw, x.shape)}


def _euclid_forward(draw):
    x, r = _pair(draw)
    return {
        "x": x,
        "r": r,
        "squared": draw(st.booleans()),
        "out": maybe_out(draw, (len(x), len(r))),
        "workspace": _ws(draw, len(x), len(r), False),
    }


def _euclid_backward(draw):
    x, r = _pair(draw)
    sq = draw(st.booleans())
    dist = engine.euclidean_forward(x, r, squared=sq)
    return {
        "x": x,
        "r": r,
        "dist": dist,
        "ddist": f32(draw, dist.shape),
        "squared": sq,
        "dx": maybe_out(draw, x.shape),
        "dr": maybe_out(draw, r.shape),
        "workspace": _ws(draw, len(x), len(r), True),
    }


def _dot_forward(draw):
    x, r = _pair(draw)
    return {"x": x, "r": r, "out": maybe_out(draw, (len(x), len(r)))}


def _dot_backward(draw):
    x, r = _pair(draw)
    return {
        "x": x,
        "r": r,
        "dsim": f32(draw, (len(x), len(r))),
        "dx": maybe_out(draw, x.shape),
        "dr": maybe_out(draw, r.shape),
    }


def _add_transpose(draw):
    n = dim(draw, large=129)
    return {"a": f32(draw, (n, n)), "out": maybe_out(draw, (n, n))}


def _gram(draw):
    x = f32(draw, (dim(draw, large=300), dim(draw)))
    return {"x": x, "out": maybe_out(draw, (len(x), len(x)))}


SPECS = {
    "l2_normalize_forward": Spec(_l2_forward, outs=("y", "norms"), floats=("eps",)),
    "l2_normalize_backward": Spec(_l2_backward, outs=("dx",), floats=("eps",)),
    "euclidean_workspace_size": Spec(
        lambda draw: {"N": dim(draw), "M": dim(draw), "backward": draw(st.booleans())},
        ints=("N", "M"),
        flags=("backward",),
    ),
    "euclidean_forward": Spec(_euclid_forward, outs=("out", "workspace"), flags=("squared",)),
    "euclidean_backward": Spec(_euclid_backward, outs=("dx", "dr", "workspace"), flags=("squared",)),
    "dot_similarity_forward": Spec(_dot_forward, outs=("out",)),
    "dot_similarity_backward": Spec(_dot_backward, outs=("dx", "dr")),
    "add_transpose_forward": Spec(_add_transpose, outs=("out",)),
    "gram_forward": Spec(_gram, outs=("out",)),
}

test_fuzz = family_test(SPECS)
test_fuzz_alias = alias_test(SPECS)
