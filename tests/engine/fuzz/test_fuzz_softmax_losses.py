"""Fuzz of the softmax-over-pairs wrappers (``_engine/_softmax_losses.pyx``)."""

import numpy as np
from hypothesis import strategies as st

from _fuzz import Spec, dim, f32, family_test, labels
from mantissa_embed import engine


def _sim(draw):
    N = dim(draw, large=200)
    square = draw(st.booleans())
    M = N if square else dim(draw, large=300)
    lab = labels(draw, N)
    rlab = lab.copy() if square else labels(draw, M)
    return f32(draw, (N, M)), lab, rlab, square


def _pair_softmax(draw, default):
    sim, lab, rlab, sq = _sim(draw)
    red = draw(st.sampled_from(("mean", "avg_non_zero", "weights")))
    return {
        "sim": sim,
        "labels": lab,
        "ref_labels": rlab,
        "temperature": draw(st.sampled_from((0.07, 1.0, 1e-6))),
        "exclude_self": sq and draw(st.booleans()),
        "inverted": draw(st.booleans()),
        "reduction": red,
        "weights": None,
        "losses": draw(st.booleans()),
        "grad": draw(st.booleans()),
    }


def _ntxent(draw):
    kw = _pair_softmax(draw, "mean")
    if kw["reduction"] == "weights":
        kw["weights"] = f32(draw, kw["sim"].shape, positive=True)
    return kw


def _supcon(draw):
    kw = _pair_softmax(draw, "avg_non_zero")
    if kw["reduction"] == "weights":
        kw["weights"] = f32(draw, kw["sim"].shape[:1], positive=True)
    return kw


def _nll_forward(draw):
    sim, lab, rlab, sq = _sim(draw)
    return {
        "sim": sim,
        "labels": lab,
        "ref_labels": rlab,
        "scale": draw(st.sampled_from((1.0, 64.0, 1e-3))),
        "exclude_self": sq and draw(st.booleans()),
        "inverted": draw(st.booleans()),
        "max_loss": draw(st.sampled_from((np.inf, 10.0))),
    }


def _nll_backward(draw, fast):
    kw = _nll_forward(draw)
    max_loss = kw.pop("max_loss")
    fwd = engine.softmax_nll_fast_forward if fast else engine.softmax_nll_forward
    _, lse, _ = fwd(**kw, max_loss=max_loss)
    kw["lse"] = lse
    kw["weights"] = f32(draw, kw["sim"].shape[:1])
    return kw


def _xent_forward(draw):
    N, M = dim(draw, large=200), dim(draw, lo=1, large=300)
    return {
        "sim": f32(draw, (N, M)),
        "target": np.random.default_rng(N).integers(0, M, N),
        "scale": draw(st.sampled_from((1.0, 30.0))),
    }


def _xent_backward(draw):
    kw = _xent_forward(draw)
    kw["lse"] = engine.softmax_xent_rows_forward(**kw)[1]
    kw["weights"] = f32(draw, kw["sim"].shape[:1])
    return kw


_F = dict(flags=("exclude_self", "inverted"), floats=("scale",))
SPECS = {
    "ntxent_all": Spec(
        _ntxent,
        floats=("temperature",),
        flags=("exclude_self", "inverted", "losses", "grad"),
        strs=("reduction",),
    ),
    "supcon_all": Spec(
        _supcon,
        floats=("temperature",),
        flags=("exclude_self", "inverted", "losses", "grad"),
        strs=("reduction",),
    ),
    "softmax_nll_forward": Spec(
        _nll_forward, flags=("exclude_self", "inverted"), floats=("scale", "max_loss")
    ),
    "softmax_nll_fast_forward": Spec(
        _nll_forward, flags=("exclude_self", "inverted"), floats=("scale", "max_loss")
    ),
    "softmax_nll_backward": Spec(lambda draw: _nll_backward(draw, False), **_F),
    "softmax_nll_fast_backward": Spec(lambda draw: _nll_backward(draw, True), **_F),
    "softmax_xent_rows_forward": Spec(_xent_forward, floats=("scale",)),
    "softmax_xent_rows_backward": Spec(_xent_backward, floats=("scale",)),
}

test_fuzz = family_test(SPECS)
