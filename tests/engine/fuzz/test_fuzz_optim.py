"""Fuzz of the SGD and Adam / AdamW step wrappers (``_engine/_optim.pyx``): in place, no output
buffer, so no aliasing sweep."""

from hypothesis import strategies as st

from _fuzz import Spec, any_shape, f32, family_test


def _sgd(draw):
    s = any_shape(draw)
    mom = draw(st.sampled_from((0.0, 0.9)))
    return {
        "p": f32(draw, s),
        "g": f32(draw, s),
        "v": f32(draw, s) if mom or draw(st.booleans()) else None,
        "lr": 0.1,
        "momentum": mom,
        "dampening": draw(st.sampled_from((0.0, 0.5))),
        "weight_decay": draw(st.sampled_from((0.0, 1e-4))),
        "nesterov": draw(st.booleans()),
        "first": draw(st.booleans()),
    }


def _adam(draw):
    s = any_shape(draw)
    return {
        "p": f32(draw, s),
        "g": f32(draw, s),
        "m": f32(draw, s),
        "v": f32(draw, s, positive=True),
        "t": draw(st.sampled_from((1, 2, 1000, 2**40))),
        "lr": 1e-3,
        "beta1": 0.9,
        "beta2": 0.999,
        "eps": 1e-8,
        "weight_decay": draw(st.sampled_from((0.0, 0.01))),
        "decoupled": draw(st.booleans()),
    }


SPECS = {
    "sgd_step": Spec(
        _sgd,
        inplace=("p", "v"),
        floats=("lr", "momentum", "dampening", "weight_decay"),
        flags=("nesterov", "first"),
    ),
    "adam_step": Spec(
        _adam,
        inplace=("p", "m", "v"),
        ints=("t",),
        floats=("lr", "beta1", "beta2", "eps", "weight_decay"),
        flags=("decoupled",),
    ),
}

test_fuzz = family_test(SPECS)
