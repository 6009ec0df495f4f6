"""Fuzz of the contrastive and triplet margin wrappers (``_engine/_pair_losses.pyx``)."""

from hypothesis import strategies as st

from _fuzz import Spec, alias_test, dim, f32, family_test, index, labels, maybe_out
from mantissa_embed import engine


def _dist_labels(draw, square=None):
    N = dim(draw, large=200)
    square = draw(st.booleans()) if square is None else square
    M = N if square else dim(draw)
    lab = labels(draw, N)
    rlab = lab.copy() if square else labels(draw, M)
    return f32(draw, (N, M), positive=True), lab, rlab, square


def _terms(draw, kw, shape):
    kw["ddist"] = maybe_out(draw, kw["dist"].shape)
    kw["weights"] = f32(draw, shape) if draw(st.booleans()) else None
    kw["grad"] = draw(st.booleans())
    kw["return_losses"] = draw(st.booleans())
    kw["inverted"] = draw(st.booleans())
    kw["nonzero_only"] = draw(st.booleans())
    return kw


def _contrastive_all(draw):
    dist, lab, rlab, sq = _dist_labels(draw)
    kw = {
        "dist": dist,
        "labels": lab,
        "ref_labels": rlab,
        "pos_margin": 0.0,
        "neg_margin": 1.0,
        "exclude_self": sq and draw(st.booleans()),
    }
    return _terms(draw, kw, dist.shape)


def _contrastive_pairs(draw):
    N, M = dim(draw, large=200), dim(draw)
    k1, k2 = dim(draw, large=500), dim(draw)
    if N == 0 or M == 0:
        k1 = k2 = 0
    kw = {
        "dist": f32(draw, (N, M), positive=True),
        "a1": index(draw, k1, N),
        "p": index(draw, k1, M),
        "a2": index(draw, k2, N),
        "n": index(draw, k2, M),
        "pos_margin": 0.1,
        "neg_margin": 0.9,
    }
    return _terms(draw, kw, (k1 + k2,))


def _count(draw):
    lab = labels(draw, dim(draw, large=300))
    sq = draw(st.booleans())
    return {
        "labels": lab,
        "ref_labels": lab.copy() if sq else labels(draw, dim(draw)),
        "exclude_self": sq and draw(st.booleans()),
    }


def _triplet_all(draw):
    dist, lab, rlab, sq = _dist_labels(draw)
    excl = sq and draw(st.booleans())
    kw = {
        "dist": dist,
        "labels": lab,
        "ref_labels": rlab,
        "margin": draw(st.sampled_from((0.05, 0.0, -1.0))),
        "exclude_self": excl,
        "swap": sq and draw(st.booleans()),
        "smooth": draw(st.booleans()),
    }
    return _terms(draw, kw, (engine.triplet_all_count(lab, rlab, excl),))


def _triplet_triplets(draw):
    N, M, K = dim(draw, large=200), dim(draw), dim(draw, large=500)
    swap = draw(st.booleans())
    if N == 0 or M == 0:
        K = 0
    kw = {
        "dist": f32(draw, (N, M), positive=True),
        "a": index(draw, K, N),
        "p": index(draw, K, min(N, M) if swap else M),
        "n": index(draw, K, M),
        "margin": 0.05,
        "swap": swap,
        "smooth": draw(st.booleans()),
    }
    return _terms(draw, kw, (K,))


_T = dict(outs=("ddist",), flags=("inverted", "nonzero_only", "grad", "return_losses"))
SPECS = {
    "contrastive_loss_all": Spec(
        _contrastive_all,
        floats=("pos_margin", "neg_margin"),
        **{**_T, "flags": _T["flags"] + ("exclude_self",)},
    ),
    "contrastive_loss_pairs": Spec(_contrastive_pairs, floats=("pos_margin", "neg_margin"), **_T),
    "triplet_all_count": Spec(_count, flags=("exclude_self",)),
    "triplet_loss_all": Spec(
        _triplet_all, floats=("margin",), **{**_T, "flags": _T["flags"] + ("exclude_self", "swap", "smooth")}
    ),
    "triplet_loss_triplets": Spec(
        _triplet_triplets, floats=("margin",), **{**_T, "flags": _T["flags"] + ("swap", "smooth")}
    ),
}

test_fuzz = family_test(SPECS)
test_fuzz_alias = alias_test(SPECS)
