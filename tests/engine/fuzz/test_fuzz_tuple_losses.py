"""Fuzz of the AngularLoss wrappers (``_engine/_tuple_losses.pyx``)."""

from _fuzz import Spec, dim, f32, family_test, index, labels
from mantissa_embed import engine


def _forward(draw):
    N, M, P = dim(draw, large=100), dim(draw), dim(draw, large=300)
    if N == 0 or M == 0:
        P = 0
    return {
        "A": f32(draw, (N, M)),
        "B": f32(draw, (M, M)),
        "c": f32(draw, (P,)),
        "a": index(draw, P, N),
        "p": index(draw, P, M),
        "labels": labels(draw, N),
        "ref_labels": labels(draw, M),
    }


def _backward(draw):
    kw = _forward(draw)
    kw["losses"] = engine.angular_loss_forward(**kw)
    kw["dlosses"] = f32(draw, kw["c"].shape)
    return kw


SPECS = {
    "angular_loss_forward": Spec(_forward),
    "angular_loss_backward": Spec(_backward),
}

test_fuzz = family_test(SPECS)
