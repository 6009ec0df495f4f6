"""Fuzz of the activations, dropout, finiteness check, dense layer and optimizer steps
(``_engine/_dense.pyx``)."""
import numpy as np
from hypothesis import strategies as st

from _fuzz import Spec, alias_test, dim, f32, family_test, maybe_out


def any_shape(draw):
    """0-D to 4-D, at most one large (1031: the vector loops' tails) dimension."""
    nd = draw(st.integers(0, 4))
    big = draw(st.integers(-1, 3))
    return tuple(dim(draw, large=1031) if i == big else dim(draw, hi=9) for i in range(nd))



def _unary(draw, slope=False):
    x = f32(draw, any_shape(draw))
    kw = {"x": x, "out": maybe_out(draw, x.shape)}
    if slope:
        kw["negative_slope"] = draw(st.sampled_from((0.01, 0.0, 1.0, 3.0)))
    return kw


def _unary_backward(draw, slope=False):
    s = any_shape(draw)
    kw = {"dy": f32(draw, s), "y": f32(draw, s), "dx": maybe_out(draw, s)}
    if slope:
        kw["negative_slope"] = draw(st.sampled_from((0.01, 0.0, 1.0)))
    return kw


def _dropout(draw, back=False):
    s = any_shape(draw)
    mask = np.asarray(np.random.default_rng(0).random(s) < 0.5, dtype=np.float32) * np.float32(2)
    mask = np.asarray(mask, dtype=np.float32)
    x = f32(draw, s)
    return {"dy": x, "mask": mask, "dx": maybe_out(draw, s)} if back else \
        {"x": x, "mask": mask, "out": maybe_out(draw, s)}


def _dense_forward(draw):
    N, I, O = dim(draw, large=129), dim(draw), dim(draw)
    return {"x": f32(draw, (N, I)), "w": f32(draw, (O, I)), "b": f32(draw, (O,)) if draw(st.booleans()) else None,
            "out": maybe_out(draw, (N, O)), "act": draw(st.sampled_from((None, "relu", "leaky_relu"))),
            "negative_slope": 0.01}


def _dense_backward(draw):
    N, I, O = dim(draw, large=129), dim(draw), dim(draw)
    acc = draw(st.booleans())
    return {"x": f32(draw, (N, I)), "w": f32(draw, (O, I)), "dy": f32(draw, (N, O)), "dx": maybe_out(draw, (N, I)),
            "dw": np.zeros((O, I), np.float32) if acc else maybe_out(draw, (O, I)),
            "db": np.zeros(O, np.float32) if acc else maybe_out(draw, (O,)),
            "need_dx": draw(st.booleans()), "accumulate": acc}


def _sgd(draw):
    s = any_shape(draw)
    mom = draw(st.sampled_from((0.0, 0.9)))
    return {"p": f32(draw, s), "g": f32(draw, s), "v": f32(draw, s) if mom or draw(st.booleans()) else None,
            "lr": 0.1, "momentum": mom, "dampening": draw(st.sampled_from((0.0, 0.5))),
            "weight_decay": draw(st.sampled_from((0.0, 1e-4))), "nesterov": draw(st.booleans()),
            "first": draw(st.booleans())}


def _adam(draw):
    s = any_shape(draw)
    return {"p": f32(draw, s), "g": f32(draw, s), "m": f32(draw, s), "v": f32(draw, s, positive=True),
            "t": draw(st.sampled_from((1, 2, 1000, 2 ** 40))), "lr": 1e-3, "beta1": 0.9, "beta2": 0.999,
            "eps": 1e-8, "weight_decay": draw(st.sampled_from((0.0, 0.01))), "decoupled": draw(st.booleans())}


SPECS = {
    "relu_forward": Spec(_unary, outs=("out",)),
    "relu_backward": Spec(_unary_backward, outs=("dx",)),
    "leaky_relu_forward": Spec(lambda draw: _unary(draw, True), outs=("out",), floats=("negative_slope",)),
    "leaky_relu_backward": Spec(lambda draw: _unary_backward(draw, True), outs=("dx",), floats=("negative_slope",)),
    "all_finite": Spec(lambda draw: {"x": f32(draw, any_shape(draw))}),
    "dropout_forward": Spec(_dropout, outs=("out",)),
    "dropout_backward": Spec(lambda draw: _dropout(draw, True), outs=("dx",)),
    "dense_forward": Spec(_dense_forward, outs=("out",), strs=("act",), floats=("negative_slope",)),
    "dense_backward": Spec(_dense_backward, outs=("dx", "dw", "db"), flags=("need_dx", "accumulate")),
    "sgd_step": Spec(_sgd, inplace=("p", "v"), floats=("lr", "momentum", "dampening", "weight_decay"),
                     flags=("nesterov", "first")),
    "adam_step": Spec(_adam, inplace=("p", "m", "v"), ints=("t",),
                      floats=("lr", "beta1", "beta2", "eps", "weight_decay"), flags=("decoupled",)),
}

test_fuzz = family_test(SPECS)
test_fuzz_alias = alias_test(SPECS)
