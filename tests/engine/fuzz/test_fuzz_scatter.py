"""Fuzz of the scatter-add and its gather (``_engine/_scatter.pyx``)."""

from hypothesis import strategies as st

from _fuzz import Spec, alias_test, dim, f32, family_test, index, maybe_out


def _rows(draw):
    N, K, D = dim(draw), dim(draw, large=1000), dim(draw)
    two = draw(st.booleans())
    return N, K, D, (lambda n: (n, D) if two else (n,))


def _forward(draw):
    N, K, D, shp = _rows(draw)
    return {"src": f32(draw, shp(K)), "index": index(draw, K, N), "out": f32(draw, shp(N))}


def _backward(draw):
    N, K, D, shp = _rows(draw)
    return {"dout": f32(draw, shp(N)), "index": index(draw, K, N), "dsrc": maybe_out(draw, shp(K))}


SPECS = {
    "scatter_add_forward": Spec(_forward, outs=("out",)),
    "scatter_add_backward": Spec(_backward, outs=("dsrc",)),
}

test_fuzz = family_test(SPECS)
test_fuzz_alias = alias_test(SPECS)
