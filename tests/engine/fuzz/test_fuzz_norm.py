"""Fuzz of the batch-normalization wrappers (``_engine/_norm.pyx``)."""

import numpy as np
from hypothesis import strategies as st

from _fuzz import Spec, alias_test, dim, f32, family_test, maybe_out
from mantissa_embed import engine


def _x(draw, training):
    nd = draw(st.sampled_from((2, 3, 4)))
    shape = (dim(draw, lo=2 if training else 0, hi=9), dim(draw, large=70)) + tuple(
        dim(draw, lo=1, hi=5) for _ in range(nd - 2)
    )
    return f32(draw, shape)


def _forward(draw):
    training = draw(st.booleans())
    x = _x(draw, training)
    C = x.shape[1]
    return {
        "x": x,
        "gamma": f32(draw, (C,)),
        "beta": f32(draw, (C,)),
        "running_mean": f32(draw, (C,)),
        "running_var": f32(draw, (C,), positive=True),
        "training": training,
        "momentum": draw(st.sampled_from((0.1, 0.0, 1.0))),
        "eps": draw(st.sampled_from((1e-5, 1e-30, 1.0))),
        "out": maybe_out(draw, x.shape),
        "save_mean": maybe_out(draw, (C,)),
        "save_invstd": maybe_out(draw, (C,)),
        "act": draw(st.sampled_from((None, "relu"))),
    }


def _backward(draw):
    training = draw(st.booleans())
    x = _x(draw, training)
    C = x.shape[1]
    act = draw(st.sampled_from((None, "relu")))
    gamma = f32(draw, (C,))
    y, sm, si = engine.batchnorm_forward(
        x, gamma, f32(draw, (C,)), np.zeros(C, np.float32), np.ones(C, np.float32), training, act=act
    )
    acc = draw(st.booleans())
    return {
        "dy": f32(draw, x.shape),
        "x": x,
        "gamma": gamma,
        "save_mean": sm,
        "save_invstd": si,
        "training": training,
        "act": act,
        "y": y if act else None,
        "dx": maybe_out(draw, x.shape),
        "dgamma": np.zeros(C, np.float32) if acc else maybe_out(draw, (C,)),
        "dbeta": np.zeros(C, np.float32) if acc else maybe_out(draw, (C,)),
        "need_dx": draw(st.booleans()),
        "accumulate": acc,
    }


def _fold(draw):
    F = dim(draw, lo=1, large=70)
    w = f32(draw, (F,) + tuple(dim(draw, hi=5) for _ in range(draw(st.integers(0, 3)))))
    return {
        "w": w,
        "b": f32(draw, (F,)) if draw(st.booleans()) else None,
        "gamma": f32(draw, (F,)),
        "beta": f32(draw, (F,)),
        "running_mean": f32(draw, (F,)),
        "running_var": f32(draw, (F,), positive=True),
        "eps": 1e-5,
        "w_out": maybe_out(draw, w.shape),
        "b_out": maybe_out(draw, (F,)),
    }


SPECS = {
    "batchnorm_forward": Spec(
        _forward,
        outs=("out", "save_mean", "save_invstd"),
        inplace=("running_mean", "running_var"),
        floats=("momentum", "eps"),
        flags=("training",),
        strs=("act",),
    ),
    "batchnorm_backward": Spec(
        _backward, outs=("dx", "dgamma", "dbeta"), flags=("training", "need_dx", "accumulate"), strs=("act",)
    ),
    "batchnorm_fold": Spec(_fold, outs=("w_out", "b_out"), floats=("eps",)),
}

test_fuzz = family_test(SPECS)
test_fuzz_alias = alias_test(SPECS)
