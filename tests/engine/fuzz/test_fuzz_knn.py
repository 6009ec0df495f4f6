"""Fuzz of the exact k-NN searches, over float32 rows and over stored codes (``_engine/_knn.pyx``)."""

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


def _codes(draw):
    n, M, D = dim(draw), dim(draw, lo=1, large=300), dim(draw, lo=1)
    dtype = draw(st.sampled_from(("float32", "float16", "bfloat16", "int8")))
    x = f32(draw, (M, D))
    scales = None
    if dtype == "float16":
        codes = np.clip(x, -65504, 65504).astype(np.float16).view(np.uint16)
    elif dtype == "bfloat16":
        codes = (x.view(np.uint32) >> 16).astype(np.uint16)
    elif dtype == "int8":
        codes = np.clip(np.nan_to_num(x), -127, 127).astype(np.int8)
        scales = np.abs(f32(draw, (M,), extreme=False)) / 127
    else:
        codes = x
    k = draw(st.integers(1, M))
    return {
        "query": f32(draw, (n, D)),
        "codes": codes,
        "scales": scales,
        "k": k,
        "dtype": dtype,
        "metric": draw(st.sampled_from(("sqeuclidean", "euclidean", "inner_product", "cosine"))),
        "tile_r": draw(st.sampled_from((0, 1, 17, 4096))),
        "indices": maybe_out(draw, (n, k), np.int64),
        "distances": maybe_out(draw, (n, k)),
    }


SPECS = {
    "knn_codes_search": Spec(
        _codes, outs=("indices", "distances"), ints=("k", "tile_r"), strs=("dtype", "metric")
    ),
    "knn_codes_mode": Spec(
        lambda draw: {"dtype": draw(st.sampled_from(("float32", "int8"))), "D": draw(st.integers(1, 9000))},
        strs=("dtype",),
    ),
    "knn_search": Spec(
        _knn,
        outs=("indices", "distances"),
        ints=("k", "tile_q", "tile_r"),
        flags=("exclude_self",),
        strs=("metric",),
    ),
}

test_fuzz = family_test(SPECS)
test_fuzz_alias = alias_test(SPECS)
