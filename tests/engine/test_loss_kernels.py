"""The distance / pair-loss kernels of the C engine equal their numpy twins (hypothesis)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed import _reference as R, engine as E

SETTINGS = settings(max_examples=60, deadline=None)


def _emb(seed, n, d, dups=False, zero_row=False):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    if dups and n >= 2:
        x[n - 1] = x[0]
    if zero_row and n >= 1:
        x[n // 2] = 0
    return x


def _dist(seed, n, m, d, dups=False):
    x = E.l2_normalize_forward(_emb(seed, n, d, dups))[0]
    r = x if m is None else E.l2_normalize_forward(_emb(seed + 1, m, d))[0]
    return E.euclidean_forward(x, r)


def _close(a, b, atol=2e-6, rtol=1e-5):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def _same_stats(sa, sb):
    assert sa.keys() == sb.keys()
    for k in sa:
        if k.startswith("num_"):
            assert sa[k] == sb[k], (k, sa, sb)
        else:
            assert sa[k] == pytest.approx(sb[k], rel=1e-5, abs=1e-6)


@SETTINGS
@given(seed=st.integers(0, 2**31), n=st.integers(0, 20), d=st.integers(1, 9), zero_row=st.booleans())
def test_l2_normalize(seed, n, d, zero_row):
    x = _emb(seed, n, d, zero_row=zero_row)
    y1, n1 = E.l2_normalize_forward(x)
    y2, n2 = R.l2_normalize_forward(x)
    _close(y1, y2)
    _close(n1, n2)
    dy = _emb(seed + 7, n, d)
    _close(E.l2_normalize_backward(dy, y1, n1), R.l2_normalize_backward(dy, y1, n1), atol=1e-4)


@SETTINGS
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 20),
    m=st.one_of(st.none(), st.integers(0, 20)),
    d=st.integers(1, 40),
    squared=st.booleans(),
    dups=st.booleans(),
)
def test_euclidean(seed, n, m, d, squared, dups):
    x = _emb(seed, n, d, dups)
    r = x if m is None else _emb(seed + 1, m, d)
    a = E.euclidean_forward(x, r, squared=squared)
    b = R.euclidean_forward(x, r, squared=squared)
    _close(a, b, atol=1e-4)
    if m is None and n:
        assert np.all(np.diag(a) == 0)
    g = _emb(seed + 2, n, r.shape[0], False) if n and r.shape[0] else np.zeros((n, r.shape[0]), np.float32)
    dxa, dra = E.euclidean_backward(x, r, b, g, squared=squared)
    dxb, drb = R.euclidean_backward(x, r, b, g, squared=squared)
    _close(dxa, dxb, atol=1e-3, rtol=1e-4)
    _close(dra, drb, atol=1e-3, rtol=1e-4)


@SETTINGS
@given(seed=st.integers(0, 2**31), n=st.integers(0, 20), m=st.integers(0, 20), d=st.integers(1, 40))
def test_dot_similarity(seed, n, m, d):
    x, r = _emb(seed, n, d), _emb(seed + 1, m, d)
    _close(E.dot_similarity_forward(x, r), R.dot_similarity_forward(x, r), atol=1e-4)
    g = _emb(seed + 2, n, m) if n and m else np.zeros((n, m), np.float32)
    for u, v in zip(E.dot_similarity_backward(x, r, g), R.dot_similarity_backward(x, r, g)):
        _close(u, v, atol=1e-4)


flags = st.fixed_dictionaries({"inverted": st.booleans(), "nonzero_only": st.booleans()})


@SETTINGS
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 24),
    m=st.one_of(st.none(), st.integers(0, 24)),
    k=st.integers(1, 5),
    pm=st.floats(-0.5, 1.0),
    nm=st.floats(0.0, 2.0),
    f=flags,
)
def test_contrastive_all(seed, n, m, k, pm, nm, f):
    rng = np.random.default_rng(seed)
    dist = _dist(seed, n, m, 6, dups=True)
    if f["inverted"]:
        dist = 1 - dist  # a similarity-like matrix
    mm = dist.shape[1]
    lab = rng.integers(0, k, n)
    rlab = lab if m is None else rng.integers(0, k, mm)
    ex = m is None
    a = E.contrastive_loss_all(dist, lab, rlab, pm, nm, exclude_self=ex, **f)
    b = R.contrastive_loss_all(dist, lab, rlab, pm, nm, exclude_self=ex, **f)
    assert a[0] == pytest.approx(b[0], rel=1e-5, abs=1e-6)
    _close(a[1], b[1])
    _same_stats(a[2], b[2])


@SETTINGS
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 16),
    m=st.integers(1, 16),
    k1=st.integers(0, 40),
    k2=st.integers(0, 40),
    f=flags,
)
def test_contrastive_pairs(seed, n, m, k1, k2, f):
    rng = np.random.default_rng(seed)
    dist = _dist(seed, n, m, 5)
    a1, p = rng.integers(0, n, k1), rng.integers(0, m, k1)
    a2, nn = rng.integers(0, n, k2), rng.integers(0, m, k2)
    a = E.contrastive_loss_pairs(dist, a1, p, a2, nn, 0.3, 0.9, **f)
    b = R.contrastive_loss_pairs(dist, a1, p, a2, nn, 0.3, 0.9, **f)
    assert a[0] == pytest.approx(b[0], rel=1e-5, abs=1e-6)
    _close(a[1], b[1])
    _same_stats(a[2], b[2])


@SETTINGS
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(0, 24),
    m=st.one_of(st.none(), st.integers(0, 24)),
    k=st.integers(1, 5),
    margin=st.floats(-0.2, 1.0),
    swap=st.booleans(),
    smooth=st.booleans(),
    f=flags,
)
def test_triplet_all(seed, n, m, k, margin, swap, smooth, f):
    rng = np.random.default_rng(seed)
    dist = _dist(seed, n, m, 6, dups=True)
    if f["inverted"]:
        dist = 1 - dist
    mm = dist.shape[1]
    lab = rng.integers(0, k, n)
    rlab = lab if m is None else rng.integers(0, k, mm)
    swap = swap and m is None
    kw = dict(exclude_self=m is None, swap=swap, smooth=smooth, **f)
    a = E.triplet_loss_all(dist, lab, rlab, margin, **kw)
    b = R.triplet_loss_all(dist, lab, rlab, margin, **kw)
    assert a[0] == pytest.approx(b[0], rel=1e-5, abs=1e-6)
    _close(a[1], b[1])
    _same_stats(a[2], b[2])


def test_triplet_all_large_blocks():
    """More than one block of negatives (the C kernel tiles them by 512)."""
    rng = np.random.default_rng(3)
    dist = _dist(3, 40, 1100, 4)
    lab, rlab = rng.integers(0, 3, 40), rng.integers(0, 3, 1100)
    a = E.triplet_loss_all(dist, lab, rlab, 0.1)
    b = R.triplet_loss_all(dist, lab, rlab, 0.1)
    assert a[0] == pytest.approx(b[0], rel=1e-5)
    _close(a[1], b[1])
    _same_stats(a[2], b[2])


@pytest.mark.parametrize("m", [1, 15, 16, 17, 511, 513, 1100])
@pytest.mark.parametrize("inverted", [False, True])
def test_triplet_all_every_simd_variant(kernel, m, inverted):
    """The generic / AVX2 / AVX-512 builds of the negatives block (picked like the SGEMM kernel)
    equal the twin on every tail length, and give the same bits as one another."""
    rng = np.random.default_rng(m)
    dist = _dist(m, 37, m, 4)
    if inverted:
        dist = 1 - dist
    dist[5, : m // 2] = np.inf if not inverted else -np.inf  # never violates
    lab, rlab = rng.integers(0, 3, 37), rng.integers(0, 3, m)
    a = E.triplet_loss_all(dist, lab, rlab, 0.3, inverted=inverted)
    b = R.triplet_loss_all(dist, lab, rlab, 0.3, inverted=inverted)
    assert a[0] == pytest.approx(b[0], rel=1e-5)
    _close(a[1], b[1])
    _same_stats(a[2], b[2])
    prev = E._set_gemm_kernel("generic")
    try:
        g = E.triplet_loss_all(dist, lab, rlab, 0.3, inverted=inverted)
    finally:
        E._set_gemm_kernel(prev)
    assert a[0] == g[0] and np.array_equal(a[1], g[1])


@SETTINGS
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 16),
    k=st.integers(0, 60),
    margin=st.floats(-0.2, 1.0),
    swap=st.booleans(),
    smooth=st.booleans(),
    f=flags,
)
def test_triplet_triplets(seed, n, k, margin, swap, smooth, f):
    rng = np.random.default_rng(seed)
    dist = _dist(seed, n, None, 5, dups=True)
    a, p, nn = (rng.integers(0, n, k) for _ in range(3))
    ra = E.triplet_loss_triplets(dist, a, p, nn, margin, swap=swap, smooth=smooth, **f)
    rb = R.triplet_loss_triplets(dist, a, p, nn, margin, swap=swap, smooth=smooth, **f)
    assert ra[0] == pytest.approx(rb[0], rel=1e-5, abs=1e-6)
    _close(ra[1], rb[1])
    _same_stats(ra[2], rb[2])


def test_swap_tie_splits_gradient():
    """d_an == d_pn: half of the negative gradient to each (as torch.min)."""
    dist = np.array([[0, 1, 2], [1, 0, 2], [2, 2, 0]], np.float32)
    for mod in (E, R):
        loss, g, _ = mod.triplet_loss_triplets(dist, [0], [1], [2], 1.5, swap=True)
        assert loss == pytest.approx(0.5)
        assert g[0, 1] == 1 and g[0, 2] == -0.5 and g[1, 2] == -0.5


@pytest.mark.parametrize("fn", ["triplet_loss_all", "contrastive_loss_all"])
def test_bitwise_identical_across_thread_counts(fn):
    rng = np.random.default_rng(0)
    dist = _dist(0, 300, None, 8)
    lab = rng.integers(0, 6, 300)
    old = E.get_num_threads()
    try:
        out = []
        for t in (1, 2, 3):
            E.set_num_threads(t)
            out.append(getattr(E, fn)(dist, lab, lab, exclude_self=True))
    finally:
        E.set_num_threads(old)
    for o in out[1:]:
        assert o[0] == out[0][0]
        assert np.array_equal(o[1], out[0][1])


@pytest.mark.parametrize("mod", [E, R], ids=["engine", "numpy"])
def test_bad_arguments_raise(mod):
    dist = np.zeros((3, 3), np.float32)
    lab = np.array([0, 1, 0])
    with pytest.raises(TypeError, match="labels"):
        mod.contrastive_loss_all(dist, lab.astype(float), lab)
    with pytest.raises(ValueError, match="ref_labels"):
        mod.triplet_loss_all(dist, lab, lab[:2])
    with pytest.raises(ValueError, match="exclude_self"):
        mod.triplet_loss_all(dist[:, :2], lab, lab[:2], exclude_self=True)
    with pytest.raises(ValueError, match="swap"):
        mod.triplet_loss_all(dist, lab, np.array([1, 1, 0]), swap=True)
    with pytest.raises(ValueError, match=r"p must hold indices in \[0, 3\)"):
        mod.triplet_loss_triplets(dist, [0], [3], [1])
    with pytest.raises(ValueError, match="a1"):
        mod.contrastive_loss_pairs(dist, [-1], [0], [], [])
    with pytest.raises(TypeError, match="a2"):
        mod.contrastive_loss_pairs(dist, [0], [0], [0.5], [1])
    with pytest.raises(ValueError, match="p must have length"):
        mod.triplet_loss_triplets(dist, [0, 1], [1], [2, 2])
    with pytest.raises(TypeError, match="ddist"):
        mod.triplet_loss_all(dist, lab, lab, ddist=np.zeros((3, 3)))
    with pytest.raises(ValueError, match="ddist"):
        mod.triplet_loss_all(dist, lab, lab, ddist=np.zeros((3, 2), np.float32))
    with pytest.raises(ValueError, match="margin"):
        mod.triplet_loss_all(dist, lab, lab, margin=float("nan"))
    with pytest.raises(ValueError, match="columns"):
        mod.euclidean_forward(np.zeros((2, 3), np.float32), np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match="x must be 2-D"):
        mod.euclidean_forward(np.zeros(3, np.float32), np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="workspace"):
        mod.euclidean_forward(
            np.zeros((4, 3), np.float32), np.zeros((4, 3), np.float32), workspace=np.zeros(2, np.float32)
        )
    with pytest.raises(ValueError, match="eps"):
        mod.l2_normalize_forward(np.zeros((2, 3), np.float32), eps=0.0)


@pytest.mark.parametrize("mod", [E, R], ids=["engine", "numpy"])
def test_empty_inputs(mod):
    z = np.zeros((0, 4), np.float32)
    assert mod.euclidean_forward(z, z).shape == (0, 0)
    assert mod.l2_normalize_forward(z)[0].shape == (0, 4)
    d = np.zeros((0, 0), np.float32)
    e = np.zeros(0, np.int64)
    assert mod.triplet_loss_all(d, e, e, exclude_self=True)[0] == 0.0
    assert mod.contrastive_loss_all(d, e, e)[0] == 0.0
    d = np.ones((2, 2), np.float32)
    loss, g, s = mod.triplet_loss_triplets(d, e, e, e)
    assert loss == 0.0 and not g.any() and s["num_triplets"] == 0
    loss, g, s = mod.contrastive_loss_pairs(d, e, e, e, e)
    assert loss == 0.0 and not g.any()


# ------------------------------------------------------- adversarial inputs (regressions)


def _readonly(a):
    a = np.array(a, dtype=np.float32)
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("mod", [E, R], ids=["engine", "numpy"])
def test_read_only_inputs_are_accepted(mod):
    # not "buffer source array is read-only" from Cython (which names no argument)
    rng = np.random.default_rng(0)
    x = _readonly(rng.standard_normal((5, 3)))
    y, norms = mod.l2_normalize_forward(x)
    mod.l2_normalize_backward(_readonly(y), _readonly(y), _readonly(norms))
    dist = mod.euclidean_forward(x, x)
    mod.euclidean_backward(x, x, _readonly(dist), _readonly(np.ones((5, 5))))
    mod.dot_similarity_forward(x, x)
    mod.dot_similarity_backward(x, x, _readonly(np.ones((5, 5))))
    labels = np.array([0, 0, 1, 1, 2])
    d = _readonly(dist)
    assert np.isfinite(mod.contrastive_loss_all(d, labels, labels)[0])
    assert np.isfinite(mod.triplet_loss_all(d, labels, labels)[0])
    assert np.isfinite(mod.contrastive_loss_pairs(d, [0], [1], [0], [2])[0])
    assert np.isfinite(mod.triplet_loss_triplets(d, [0], [1], [2])[0])


@pytest.mark.parametrize("mod", [E, R], ids=["engine", "numpy"])
def test_eps_outside_float32_range_is_rejected(mod):
    x = np.zeros((2, 3), np.float32)  # eps=1e-50 became 0 in float32: 0/0 = NaN
    for eps in (1e-50, 1e50):
        with pytest.raises(ValueError, match=r"eps must be a normal float32"):
            mod.l2_normalize_forward(x, eps=eps)
        with pytest.raises(ValueError, match=r"eps must be a normal float32"):
            mod.l2_normalize_backward(x, x, np.zeros(2, np.float32), eps=eps)


@pytest.mark.parametrize("mod", [E, R], ids=["engine", "numpy"])
def test_outputs_overlapping_inputs_are_rejected(mod):
    rng = np.random.default_rng(1)
    d = rng.random((50, 50)).astype(np.float32)
    lab = rng.integers(0, 4, 50)
    a = np.arange(40)
    calls = [
        lambda dd: mod.triplet_loss_all(dd, lab, lab, ddist=dd),  # aliased, the values would be wrong
        lambda dd: mod.contrastive_loss_all(dd, lab, lab, ddist=dd),
        lambda dd: mod.triplet_loss_triplets(dd, a, (a + 1) % 50, (a + 7) % 50, ddist=dd),
        lambda dd: mod.contrastive_loss_pairs(dd, a, (a + 1) % 50, a, (a + 7) % 50, ddist=dd),
    ]
    for call in calls:
        with pytest.raises(ValueError, match=r"ddist must not share memory with dist"):
            call(d.copy())
    buf = np.arange(1, 13, dtype=np.float32)
    with pytest.raises(ValueError, match=r"y must not share memory with x"):
        mod.l2_normalize_forward(buf[:9].reshape(3, 3), y=buf[3:].reshape(3, 3))
    x = rng.random((4, 4)).astype(np.float32)
    with pytest.raises(ValueError, match=r"out must not share memory with x"):
        mod.euclidean_forward(x, x.copy(), out=x)
    with pytest.raises(ValueError, match=r"dx must not share memory with x"):
        mod.dot_similarity_backward(x, x.copy(), np.ones((4, 4), np.float32), dx=x)
    # documented in-place forms keep working
    z = rng.random((3, 4)).astype(np.float32)
    y, _ = mod.l2_normalize_forward(z, y=z)
    assert y is z


@pytest.mark.parametrize("mod", [E, R], ids=["engine", "numpy"])
def test_euclidean_workspace_size_validates(mod):
    with pytest.raises(ValueError, match=r"N must be >= 0"):
        mod.euclidean_workspace_size(-5, 3)
    with pytest.raises(TypeError, match=r"N must be an int"):
        mod.euclidean_workspace_size("5", 3)
