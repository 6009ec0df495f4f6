"""The pair-weighting row kernels (src/engine_c/pair_weighting.c) equal their numpy twins
(mantissa_embed._reference._pair_weighting) on random shapes, labels and masks, and check their inputs
the same way."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed import _reference as R, engine as E

KINDS = {
    "multi_similarity": (2.0, 50.0, 0.5),
    "circle": (0.4, 80.0),
    "generalized_lifted": (0.0, 1.0),
    "neg_lse": (1.0,),
}


def _inputs(seed, n, m, k, inverted):
    rng = np.random.default_rng(seed)
    mat = (rng.uniform(-1, 1, (n, m)) if inverted else rng.uniform(0, 2, (n, m))).astype(np.float32)
    return mat, rng.integers(0, k, n), rng.integers(0, k, m), rng


def _close(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype == np.float32
    fin = np.isfinite(b)
    assert np.array_equal(fin, np.isfinite(a))  # -inf rows of neg_lse agree
    np.testing.assert_allclose(a[fin], b[fin], rtol=2e-5, atol=2e-6 * max(1.0, np.abs(b[fin]).max(initial=0)))


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 40),
    m=st.one_of(st.none(), st.integers(0, 40)),
    k=st.integers(1, 6),
    kind=st.sampled_from(sorted(KINDS)),
    inverted=st.booleans(),
)
def test_labels_path(seed, n, m, k, kind, inverted):
    same = m is None
    mat, y, ry, _ = _inputs(seed, n, n if same else m, k, inverted)
    if same:
        ry = y
    kw = dict(params=KINDS[kind], exclude_self=same, inverted=inverted)
    la, da = E.pairw_rows_forward(kind, mat, y, ry, **kw)
    lb, db = R.pairw_rows_forward(kind, mat, y, ry, **kw)
    _close(la, lb)
    _close(da, db)
    dl = np.random.default_rng(seed + 1).standard_normal(n).astype(np.float32)
    if n:
        dl[0] = 0
    _close(E.pairw_rows_backward(dl, da.copy()), R.pairw_rows_backward(dl, db.copy()))


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 30),
    m=st.integers(0, 30),
    kind=st.sampled_from(sorted(KINDS)),
    inverted=st.booleans(),
    density=st.floats(0, 1),
)
def test_mask_path(seed, n, m, kind, inverted, density):
    mat, _, _, rng = _inputs(seed, n, m, 2, inverted)
    u = rng.random((n, m))
    pos, neg = u < density / 2, (u >= density / 2) & (u < density)
    kw = dict(params=KINDS[kind], inverted=inverted)
    la, da = E.pairw_rows_forward(kind, mat, pos_mask=pos, neg_mask=neg, **kw)
    lb, db = R.pairw_rows_forward(
        kind, mat, pos_mask=pos.astype(np.uint8), neg_mask=neg.astype(np.uint8), **kw
    )
    _close(la, lb)
    _close(da, db)
    assert not da[~(pos | neg)].any()


def test_outputs_in_place_and_thread_reproducible():
    mat, y, _, _ = _inputs(0, 300, 300, 7, True)
    losses, dmat = np.empty(300, np.float32), np.empty((300, 300), np.float32)
    l1, d1 = E.pairw_rows_forward(
        "multi_similarity",
        mat,
        y,
        y,
        params=(2, 50, 0.5),
        exclude_self=True,
        inverted=True,
        losses=losses,
        dmat=dmat,
    )
    assert l1 is losses and d1 is dmat
    n0 = E.get_num_threads()
    try:
        E.set_num_threads(1)
        l2, d2 = E.pairw_rows_forward(
            "multi_similarity", mat, y, y, params=(2, 50, 0.5), exclude_self=True, inverted=True
        )
    finally:
        E.set_num_threads(n0)
    assert np.array_equal(l1, l2) and np.array_equal(d1, d2)


@pytest.mark.parametrize("mod", [E, R], ids=["engine", "numpy"])
def test_bad_input(mod):
    mat = np.zeros((3, 4), np.float32)
    y, ry = np.arange(3), np.arange(4)
    f = mod.pairw_rows_forward
    with pytest.raises(ValueError, match="kind"):
        f("nope", mat, y, ry, params=())
    with pytest.raises(ValueError, match="params"):
        f("circle", mat, y, ry, params=(1.0,))
    with pytest.raises(ValueError, match="alpha"):
        f("multi_similarity", mat, y, ry, params=(0.0, 1.0, 0.5))
    with pytest.raises(ValueError, match="ref_labels"):
        f("circle", mat, y, y, params=(0.4, 80))
    with pytest.raises(ValueError, match="exclude_self"):
        f("circle", mat, y, ry, params=(0.4, 80), exclude_self=True)
    with pytest.raises(TypeError, match="labels"):
        f("circle", mat, y.astype(float), ry, params=(0.4, 80))
    with pytest.raises(ValueError, match="pos_mask and neg_mask"):
        f("circle", mat, pos_mask=np.zeros((3, 4), bool), params=(0.4, 80))
    with pytest.raises(ValueError, match="overlap"):
        f("circle", mat, pos_mask=np.ones((3, 4), bool), neg_mask=np.ones((3, 4), bool), params=(0.4, 80))
    with pytest.raises(TypeError, match="pos_mask"):
        f("circle", mat, pos_mask=np.ones((3, 4), np.int32), neg_mask=np.ones((3, 4), bool), params=(0.4, 80))
    with pytest.raises(ValueError, match="neg_mask"):
        f("circle", mat, pos_mask=np.ones((3, 4), bool), neg_mask=np.zeros((4, 3), bool), params=(0.4, 80))
    with pytest.raises(ValueError, match="mat"):
        f("circle", np.zeros(3, np.float32), y, ry, params=(0.4, 80))
    with pytest.raises(ValueError, match="dmat"):
        f("circle", mat, y, ry, params=(0.4, 80), dmat=mat)
    with pytest.raises(ValueError, match="dmat"):
        f("circle", mat, y, ry, params=(0.4, 80), dmat=np.zeros((4, 3), np.float32))
    with pytest.raises(ValueError, match="dlosses"):
        mod.pairw_rows_backward(np.zeros(2, np.float32), np.zeros((3, 4), np.float32))
    with pytest.raises(TypeError, match="dmat"):
        mod.pairw_rows_backward(np.zeros(3, np.float32), np.zeros((3, 4), np.float64))


@pytest.mark.parametrize("kernel", ["generic", "avx2", "avx512"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_simd_variant_and_long_rows(kernel, kind):
    """The generic / AVX2 / AVX-512 copies of the row kernel (chosen like the SGEMM micro-kernel)
    agree with the twin, also on rows longer than one membership block (4096 columns)."""
    try:
        old = E._set_gemm_kernel(kernel)
    except ValueError:
        pytest.skip(f"{kernel} not available on this CPU")
    try:
        for n, m in ((5, 9000), (40, 33)):
            mat, y, ry, rng = _inputs(n * m, n, m, 3, kind != "generalized_lifted")
            kw = dict(params=KINDS[kind], inverted=kind != "generalized_lifted")
            _close(
                E.pairw_rows_forward(kind, mat, y, ry, **kw)[1],
                R.pairw_rows_forward(kind, mat, y, ry, **kw)[1],
            )
            pos = rng.random((n, m)) < 0.3
            neg = ~pos & (rng.random((n, m)) < 0.5)
            a = E.pairw_rows_forward(kind, mat, pos_mask=pos, neg_mask=neg, **kw)
            b = R.pairw_rows_forward(kind, mat, pos_mask=pos, neg_mask=neg, **kw)
            _close(a[0], b[0])
            _close(a[1], b[1])
    finally:
        E._set_gemm_kernel(old)
