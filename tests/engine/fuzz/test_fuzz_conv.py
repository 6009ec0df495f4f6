"""Fuzz of the convolution wrappers (``_engine/_conv.pyx``): every SGEMM kernel's paths, the
Winograd and chain shapes included (3x3 stride 1, C >= 3, F > 8)."""

import numpy as np
from hypothesis import strategies as st

from _fuzz import Spec, alias_test, dim, f32, family_test, maybe_out
from mantissa_embed import engine


def geometry(draw, min_out=1, wino=None):
    """(N, C, H, W, F, KH, KW, stride, pad) of a valid convolution with an output of at least
    min_out x min_out; ``wino``: 3x3 stride 1 (the Winograd shapes) when drawn."""
    if wino is None:
        wino = draw(st.booleans())
    KH, KW = (3, 3) if wino else (draw(st.integers(1, 5)), draw(st.integers(1, 5)))
    stride = 1 if wino else draw(st.sampled_from((1, 1, 2, 3)))
    pad = draw(st.sampled_from((0, 1, 1, 2)))
    N = dim(draw, hi=3, large=9)
    C = draw(st.sampled_from((0, 1, 1, 2, 3, 4, 8))) if not wino else draw(st.sampled_from((1, 3, 8)))
    F = draw(st.sampled_from((0, 1, 2, 8, 9, 16)))

    def side(K):
        lo = max(K - 2 * pad + (min_out - 1) * stride, 0)
        return draw(st.sampled_from(sorted({lo, lo + 1, lo + 2, lo + 5, max(lo, 33)})))

    H, W = side(KH), side(KW)
    return N, C, H, W, F, KH, KW, stride, pad


def _out(H, K, s, p):
    return (H + 2 * p - K) // s + 1


def _workspace(draw, x_shape, w_shape, stride, pad):
    if draw(st.booleans()):
        return None
    return np.full(
        engine.conv2d_workspace_size(x_shape, w_shape, stride, pad) + draw(st.sampled_from((0, 3))),
        np.nan,
        np.float32,
    )


def _act(draw):
    return draw(st.sampled_from((None, "identity", "relu", "leaky_relu")))


def _ws_size(draw):
    N, C, H, W, F, KH, KW, s, p = geometry(draw)
    return {"x_shape": (N, C, H, W), "w_shape": (F, C, KH, KW), "stride": s, "pad": p}


def _forward(draw, pool=False):
    N, C, H, W, F, KH, KW, s, p = geometry(draw, min_out=2 if pool else 1)
    HO, WO = _out(H, KH, s, p), _out(W, KW, s, p)
    oshape = (N, F, HO // 2, WO // 2) if pool else (N, F, HO, WO)
    return {
        "x": f32(draw, (N, C, H, W)),
        "w": f32(draw, (F, C, KH, KW)),
        "b": f32(draw, (F,)) if draw(st.booleans()) else None,
        "stride": s,
        "pad": p,
        "out": maybe_out(draw, oshape),
        "workspace": _workspace(draw, (N, C, H, W), (F, C, KH, KW), s, p),
        "act": _act(draw),
        "negative_slope": draw(st.sampled_from((0.01, 0.0, 2.0))),
    }


def _chain_geometry(draw):
    N, C, H, W, F1, KH1, KW1, s1, p1 = geometry(draw, min_out=2)
    H2, W2 = _out(H, KH1, s1, p1) // 2, _out(W, KW1, s1, p1) // 2
    wino = draw(st.booleans())
    KH2, KW2 = (3, 3) if wino else (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    s2 = 1 if wino else draw(st.sampled_from((1, 2)))
    p2 = draw(st.sampled_from((0, 1, 2)))
    # the second stage needs a 2x2 output: widen the input when it is too small
    need = max(KH2, KW2) - 2 * p2 + s2
    if H2 < need or W2 < need:
        grow = 2 * (max(need - H2, need - W2, 0) + 1) * s1
        H, W = H + grow, W + grow
    F2 = draw(st.sampled_from((1, 2, 9, 16)))
    return N, C, H, W, F1, KH1, KW1, s1, p1, F2, KH2, KW2, s2, p2


def _chain_ws_size(draw):
    N, C, H, W, F1, KH1, KW1, s1, p1, F2, KH2, KW2, s2, p2 = _chain_geometry(draw)
    return {
        "x_shape": (N, C, H, W),
        "w1_shape": (F1, C, KH1, KW1),
        "stride1": s1,
        "pad1": p1,
        "w2_shape": (F2, F1, KH2, KW2),
        "stride2": s2,
        "pad2": p2,
    }


def _chain(draw):
    N, C, H, W, F1, KH1, KW1, s1, p1, F2, KH2, KW2, s2, p2 = _chain_geometry(draw)
    H2, W2 = _out(H, KH1, s1, p1) // 2, _out(W, KW1, s1, p1) // 2
    HO2, WO2 = _out(H2, KH2, s2, p2), _out(W2, KW2, s2, p2)
    ws = None
    if draw(st.booleans()):
        ws = np.empty(
            engine.conv2d_pool2_chain_workspace_size(
                (N, C, H, W), (F1, C, KH1, KW1), s1, p1, (F2, F1, KH2, KW2), s2, p2
            ),
            np.float32,
        )
    return {
        "x": f32(draw, (N, C, H, W)),
        "w1": f32(draw, (F1, C, KH1, KW1)),
        "b1": f32(draw, (F1,)) if draw(st.booleans()) else None,
        "stride1": s1,
        "pad1": p1,
        "w2": f32(draw, (F2, F1, KH2, KW2)),
        "b2": f32(draw, (F2,)) if draw(st.booleans()) else None,
        "stride2": s2,
        "pad2": p2,
        "act1": _act(draw),
        "act2": _act(draw),
        "out": maybe_out(draw, (N, F2, HO2 // 2, WO2 // 2)),
        "workspace": ws,
        "negative_slope1": 0.01,
        "negative_slope2": 0.1,
    }


def _backward(draw):
    N, C, H, W, F, KH, KW, s, p = geometry(draw)
    HO, WO = _out(H, KH, s, p), _out(W, KW, s, p)
    acc = draw(st.booleans())
    return {
        "x": f32(draw, (N, C, H, W)),
        "w": f32(draw, (F, C, KH, KW)),
        "dy": f32(draw, (N, F, HO, WO)),
        "stride": s,
        "pad": p,
        "dx": maybe_out(draw, (N, C, H, W)),
        "dw": np.zeros((F, C, KH, KW), np.float32) if acc else maybe_out(draw, (F, C, KH, KW)),
        "db": np.zeros(F, np.float32) if acc else maybe_out(draw, (F,)),
        "need_dx": draw(st.booleans()),
        "accumulate": acc,
        "workspace": _workspace(draw, (N, C, H, W), (F, C, KH, KW), s, p),
        "need_db": draw(st.booleans()),
    }


_FWD = dict(outs=("out", "workspace"), ints=("stride", "pad"), floats=("negative_slope",), strs=("act",))
SPECS = {
    "conv2d_workspace_size": Spec(_ws_size, ints=("stride", "pad"), shapes=("x_shape", "w_shape")),
    "conv2d_forward": Spec(_forward, **_FWD),
    "conv2d_pool2_forward": Spec(lambda draw: _forward(draw, pool=True), **_FWD),
    "conv2d_pool2_chain_workspace_size": Spec(
        _chain_ws_size,
        ints=("stride1", "pad1", "stride2", "pad2"),
        shapes=("x_shape", "w1_shape", "w2_shape"),
    ),
    "conv2d_pool2_chain_forward": Spec(
        _chain,
        outs=("out", "workspace"),
        ints=("stride1", "pad1", "stride2", "pad2"),
        floats=("negative_slope1", "negative_slope2"),
        strs=("act1", "act2"),
    ),
    "conv2d_backward": Spec(
        _backward,
        outs=("dx", "dw", "db", "workspace"),
        ints=("stride", "pad"),
        flags=("need_dx", "accumulate", "need_db"),
    ),
}

test_fuzz = family_test(SPECS)
test_fuzz_alias = alias_test(SPECS)
