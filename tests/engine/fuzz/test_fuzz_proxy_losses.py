"""Fuzz of the P2SGrad and classifier cross-entropy wrappers (``_engine/_proxy_losses.pyx``)."""

from hypothesis import strategies as st

from _fuzz import Spec, alias_test, dim, f32, family_test, index, maybe_out


def _p2sgrad(draw):
    N, C, D = dim(draw, large=200), dim(draw, lo=1), dim(draw, large=67)
    return {
        "x": f32(draw, (N, D)),
        "w": f32(draw, (C, D)),
        "labels": index(draw, N, C),
        "dx": maybe_out(draw, (N, D)),
        "dw": maybe_out(draw, (C, D)),
    }


def _xent(draw):
    N, C = dim(draw, large=200), dim(draw, lo=1, large=300)
    return {
        "logits": f32(draw, (N, C)),
        "labels": index(draw, N, C),
        "scale": draw(st.sampled_from((1.0, 30.0))),
        "grad_scale": draw(st.sampled_from((1.0, 0.5))),
        "dlogits": maybe_out(draw, (N, C)),
    }


SPECS = {
    "p2sgrad_forward_backward": Spec(_p2sgrad, outs=("dx", "dw")),
    "softmax_xent_forward_backward": Spec(_xent, outs=("dlogits",), floats=("scale", "grad_scale")),
}

test_fuzz = family_test(SPECS)
test_fuzz_alias = alias_test(SPECS)
