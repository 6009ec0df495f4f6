"""Fuzz of the miner wrappers (``_engine/_mining.pyx``)."""

from hypothesis import strategies as st

from _fuzz import Spec, dim, f32, family_test, labels


def _square(draw):
    N = dim(draw, large=60)
    square = draw(st.booleans())
    M = N if square else dim(draw)
    lab = labels(draw, N)
    return N, M, lab, lab.copy() if square else labels(draw, M), square


def _triplet(draw):
    N, M, lab, rlab, sq = _square(draw)
    return {
        "mat": f32(draw, (N, M)),
        "labels": lab,
        "ref_labels": rlab,
        "exclude_self": sq and draw(st.booleans()),
        "type_of_triplets": draw(st.sampled_from(("every", "all", "hard", "semihard", "easy"))),
        "margin": draw(st.sampled_from((0.1, 0.0, -0.5))),
        "is_inverted": draw(st.booleans()),
    }


def _angular(draw):
    N, M, lab, rlab, sq = _square(draw)
    D = dim(draw, lo=1)
    return {
        "x": f32(draw, (N, D)),
        "r": f32(draw, (M, D)),
        "labels": lab,
        "ref_labels": rlab,
        "exclude_self": sq and draw(st.booleans()),
        "angle": draw(st.sampled_from((20.0, 0.0, 90.0))),
    }


SPECS = {
    "triplet_margin_mine": Spec(
        _triplet, flags=("exclude_self", "is_inverted"), floats=("margin",), strs=("type_of_triplets",)
    ),
    "angular_mine": Spec(_angular, flags=("exclude_self",), floats=("angle",)),
}

test_fuzz = family_test(SPECS)
