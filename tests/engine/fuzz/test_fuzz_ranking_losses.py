"""Fuzz of the PNP rank and DynamicSoftMargin wrappers (``_engine/_ranking_losses.pyx``)."""

import numpy as np
from hypothesis import strategies as st

from _fuzz import Spec, dim, f32, family_test, labels


def _pnp(draw):
    N = dim(draw, large=70)
    return {"sim": f32(draw, (N, N)), "labels": labels(draw, N), "anneal": draw(st.sampled_from((0.01, 1.0)))}


def _pnp_backward(draw):
    kw = _pnp(draw)
    kw["drk"] = f32(draw, kw["sim"].shape).astype(np.float64)
    return kw


def _dsm(draw):
    N = dim(draw, large=40)
    square = draw(st.booleans())
    M = N if square else dim(draw)
    lab = labels(draw, N)
    return {
        "mat": f32(draw, (N, M)),
        "labels": lab,
        "ref_labels": lab.copy() if square else labels(draw, M),
        "exclude_self": square and draw(st.booleans()),
        "min_val": -2.0,
        "delta": draw(st.sampled_from((0.1, 0.01, 4.0))),
    }


def _hist(draw):
    return {**_dsm(draw), "num_bins": draw(st.sampled_from((1, 10, 1000))), "momentum": 0.01}


def _cdf(draw):
    nb = draw(st.sampled_from((1, 10, 400)))
    return np.linspace(0, 1, nb)


def _loss(draw):
    return {**_dsm(draw), "cdf": _cdf(draw)}


def _backward(draw):
    cdf = _cdf(draw)
    return {
        **_dsm(draw),
        "cdf": cdf,
        "g_u": f32(draw, cdf.shape).astype(np.float64),
        "scale": 1.0,
        "momentum": 0.01,
    }


_D = dict(flags=("exclude_self",), floats=("min_val", "delta"))
SPECS = {
    "pnp_rank_forward": Spec(_pnp, floats=("anneal",)),
    "pnp_rank_backward": Spec(_pnp_backward, floats=("anneal",)),
    "dsm_triplet_hist": Spec(
        _hist, ints=("num_bins",), flags=("exclude_self",), floats=("min_val", "delta", "momentum")
    ),
    "dsm_triplet_loss": Spec(_loss, **_D),
    "dsm_triplet_backward": Spec(
        _backward, flags=("exclude_self",), floats=("min_val", "delta", "scale", "momentum")
    ),
}

test_fuzz = family_test(SPECS)
