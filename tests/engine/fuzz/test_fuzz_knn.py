"""Fuzz of the exact k-NN search (``_engine/_knn.pyx``)."""

import numpy as np
from hypothesis import strategies as st

from _fuzz import Spec, alias_test, dim, f32, family_test, maybe_out


def _knn(draw):
    n, M, D = dim(draw), dim(draw, lo=1, large=300), dim(draw, lo=1)
    excl = draw(st.booleans()) and n <= M
    if excl:
        n = min(n, M)
    k = draw(st.integers(1, max(M - int(excl), 1)))
    return {
        "query": f32(draw, (n, D)),
        "reference": f32(draw, (M, D)),
        "k": k,
        "metric": draw(st.sampled_from(("sqeuclidean", "euclidean", "inner_product"))),
        "exclude_self": excl,
        "tile_q": draw(st.sampled_from((1, 3, 256))),
        "tile_r": draw(st.sampled_from((1, 5, 2048))),
        "indices": maybe_out(draw, (n, k), np.int64),
        "distances": maybe_out(draw, (n, k)),
    }


SPECS = {
    "knn_search": Spec(
        _knn,
        outs=("indices", "distances"),
        ints=("k", "tile_q", "tile_r"),
        flags=("exclude_self",),
        strs=("metric",),
    )
}

test_fuzz = family_test(SPECS)
test_fuzz_alias = alias_test(SPECS)
