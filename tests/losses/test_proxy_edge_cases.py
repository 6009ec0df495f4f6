"""Adversarial inputs for the losses that own class weights: bad dtypes/shapes/values
raise a ValueError/TypeError naming the argument; NaN/Inf or reshaped weights (e.g. after a
diverged optimizer step) are rejected; float32 overflow is reported, not returned as inf/NaN;
valid edge cases give finite values equal to an independent float64 numpy computation."""

import math
import warnings

import numpy as np
import pytest

from mantissa_embed import losses as L

C, D = 4, 3

FACTORIES = {
    "P2SGradLoss": lambda **k: L.P2SGradLoss(C, D, seed=0, **k),
    "NormalizedSoftmaxLoss": lambda **k: L.NormalizedSoftmaxLoss(C, D, seed=0, **k),
    "ProxyNCALoss": lambda **k: L.ProxyNCALoss(C, D, seed=0, **k),
    "ProxyAnchorLoss": lambda **k: L.ProxyAnchorLoss(C, D, seed=0, **k),
    "SoftTripleLoss": lambda **k: L.SoftTripleLoss(C, D, seed=0, centers_per_class=2, **k),
    "LargeMarginSoftmaxLoss": lambda **k: L.LargeMarginSoftmaxLoss(C, D, seed=0, **k),
    "ArcFaceLoss": lambda **k: L.ArcFaceLoss(C, D, seed=0, **k),
    "SubCenterArcFaceLoss": lambda **k: L.SubCenterArcFaceLoss(C, D, seed=0, **k),
    "CosFaceLoss": lambda **k: L.CosFaceLoss(C, D, seed=0, **k),
    "SphereFaceLoss": lambda **k: L.SphereFaceLoss(C, D, seed=0, **k),
}
NAMES = sorted(FACTORIES)


def _batch(n=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, D)).astype(np.float32), np.arange(n) % C


def _finite(lf, out):
    return (
        np.isfinite(out.loss)
        and np.isfinite(out.grad).all()
        and all(np.isfinite(p.grad).all() and np.isfinite(p.data).all() for p in lf.parameters())
    )


X, Y = _batch()
BAD = {
    "float labels": (X, Y.astype(float), TypeError, "labels"),
    "bool labels": (X, Y.astype(bool), TypeError, "labels"),
    "2-D labels": (X, Y[:, None], ValueError, "labels"),
    "labels length": (X, Y[:4], ValueError, "labels"),
    "labels too large": (X, np.array([0, 1, 2, C, 0]), ValueError, "labels"),
    "negative labels": (X, np.array([0, 1, -1, 3, 0]), ValueError, "labels"),
    "labels None": (X, None, ValueError, "labels"),
    "object embeddings": (X.astype(object), Y, TypeError, "embeddings"),
    "string embeddings": ("abc", Y, TypeError, "embeddings"),
    "1-D embeddings": (X[0], Y[:1], ValueError, "embeddings"),
    "3-D embeddings": (X[None], Y, ValueError, "embeddings"),
    "0 columns": (np.zeros((5, 0), np.float32), Y, ValueError, "embeddings"),
    "embedding_size mismatch": (np.zeros((5, D + 1), np.float32), Y, ValueError, "embedding_size"),
    "NaN embeddings": (np.where(np.eye(5, D, dtype=bool), np.nan, X), Y, ValueError, "embeddings"),
    "Inf embeddings": (np.where(np.eye(5, D, dtype=bool), -np.inf, X), Y, ValueError, "embeddings"),
}


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("name", NAMES)
def test_bad_input_raises_naming_the_argument(name, case):
    emb, lab, exc, word = BAD[case]
    lf = FACTORIES[name]()
    w0 = lf.parameters()[0].data.copy()
    with pytest.raises(exc, match=word):
        lf(emb, lab)
    assert not lf.parameters()[0].grad.any()
    np.testing.assert_array_equal(lf.parameters()[0].data, w0)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("name", NAMES)
def test_nonfinite_weights_raise_naming_the_parameter(name, bad):
    lf = FACTORIES[name]()
    p = lf.parameters()[0]
    p.data = p.data.copy()  # float32, C-contiguous: the fast path of place_parameter
    p.data.flat[1] = bad
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=f"parameter {p.name}.*NaN or Inf"):
            lf(X, Y)
    assert not p.grad.any()


@pytest.mark.parametrize("name", [n for n in NAMES if hasattr(FACTORIES[n](), "get_logits")])
def test_nonfinite_weights_rejected_by_get_logits(name):
    lf = FACTORIES[name]()
    p = lf.parameters()[0]
    p.data[0, 0] = np.nan
    with pytest.raises(ValueError, match=f"parameter {p.name}"):
        lf.get_logits(X)


@pytest.mark.parametrize("name", NAMES)
def test_reshaped_weights_raise_naming_the_parameter(name):
    lf = FACTORIES[name]()
    p = lf.parameters()[0]
    shape = p.data.shape
    p.data = np.zeros((2, 2), np.float32)
    with pytest.raises(ValueError, match=rf"parameter {p.name} must have shape \({shape[0]}, {shape[1]}\)"):
        lf(X, Y)


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("ProxyAnchorLoss", {"alpha": 1e300}),
        ("SoftTripleLoss", {"la": 1e300}),
        ("LargeMarginSoftmaxLoss", {"scale": 1e300}),
        ("ArcFaceLoss", {"scale": 1e300}),
        ("CosFaceLoss", {"scale": 1e300}),
        ("SphereFaceLoss", {"scale": 1e300}),
        ("CosFaceLoss", {"margin": 1e300}),
    ],
)
def test_float32_overflow_is_an_error_not_inf(name, kwargs):
    lf = FACTORIES[name](**kwargs)
    key = next(iter(kwargs))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=f"overflow.*{key}="):
            lf(X, Y)
    assert not lf.parameters()[0].grad.any()  # nothing accumulated


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("ProxyAnchorLoss", {"alpha": 1e4}),
        ("SoftTripleLoss", {"la": 1e4}),
        ("LargeMarginSoftmaxLoss", {"scale": 1e4}),
        ("ArcFaceLoss", {"scale": 1e4}),
        ("CosFaceLoss", {"scale": 1e4}),
        ("NormalizedSoftmaxLoss", {"temperature": 1e-4}),
        ("ProxyNCALoss", {"softmax_scale": 1e4}),
    ],
)
def test_large_but_representable_scales_stay_finite(name, kwargs):
    lf = FACTORIES[name](**kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = lf(X, Y)
    assert _finite(lf, out)


def _lms_psi64(c, m):
    """Independent psi(theta) = (-1)^k cos(m theta) - 2k with cos(m theta) from the angle."""
    theta = np.arccos(np.clip(c, -1, 1))
    k = np.floor(theta / (math.pi / m))
    return np.where(k % 2 == 0, 1.0, -1.0) * np.cos(m * theta) - 2 * k


@pytest.mark.parametrize("m", [1, 2, 3, 4, 7, 60, 100, 1000])
def test_large_margin_psi_is_exact_for_large_margins(m):
    # the binomial (Eq. 7) expansion lost every digit to cancellation for m >~ 60
    lf = L.LargeMarginSoftmaxLoss(C, D, margin=m, seed=0)
    c = np.linspace(-0.999, 0.999, 41)
    psi, dpsi = lf._modify64(c)
    np.testing.assert_allclose(psi, _lms_psi64(c, m), atol=1e-9 * m)
    h = 1e-7
    fd = (_lms_psi64(c + h, m) - _lms_psi64(c - h, m)) / (2 * h)
    same_k = np.floor(np.arccos(c + h) / (math.pi / m)) == np.floor(np.arccos(c - h) / (math.pi / m))
    np.testing.assert_allclose(dpsi[same_k], fd[same_k], rtol=1e-4, atol=1e-4 * m * m)


@pytest.mark.parametrize("cls", [L.LargeMarginSoftmaxLoss, L.SphereFaceLoss])
@pytest.mark.parametrize("margin", [0, -1, 1001, 1e300])
def test_large_margin_out_of_range_raises(cls, margin):
    with pytest.raises(ValueError, match="margin"):
        cls(C, D, margin=margin, seed=0)


@pytest.mark.parametrize("name", NAMES)
def test_num_classes_zero_and_bad_types_raise(name):
    cls = type(FACTORIES[name]())
    with pytest.raises(ValueError, match="num_classes"):
        cls(0, D)
    with pytest.raises(TypeError, match="num_classes"):
        cls(True, D)
    with pytest.raises(TypeError, match="num_classes"):
        cls(2.0, D)
    with pytest.raises(ValueError, match="embedding_size"):
        cls(C, 0)


def test_weight_init_func_returning_garbage_raises():
    with pytest.raises(ValueError, match="weight_init_func"):
        L.NormalizedSoftmaxLoss(C, D, weight_init_func=lambda s, r: np.full(s, np.nan))
    with pytest.raises(TypeError, match="weight_init_func"):
        L.NormalizedSoftmaxLoss(C, D, weight_init_func=lambda s, r: np.full(s, "a"))


@pytest.mark.parametrize(
    "emb_kind", ["empty", "one", "identical", "zero", "float64", "int", "list", "tiny", "huge"]
)
@pytest.mark.parametrize("name", NAMES)
def test_valid_edge_cases_are_finite(name, emb_kind):
    x, y = _batch()
    emb = {
        "empty": x[:0],
        "one": x[:1],
        "identical": np.ones_like(x),
        "zero": np.zeros_like(x),
        "float64": x.astype(np.float64),
        "int": (3 * x).astype(np.int64),
        "list": x.tolist(),
        "tiny": x * np.float32(1e-30),
        "huge": x * np.float32(1e30),
    }[emb_kind]
    lab = y[: len(emb)]
    lf = FACTORIES[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = lf(emb, lab)
    assert _finite(lf, out)
    assert out.grad.shape == (len(emb), D) and out.grad.dtype == np.float32
    if emb_kind == "empty":
        assert out.loss == 0.0 and not lf.parameters()[0].grad.any()


@pytest.mark.parametrize("name", NAMES)
def test_single_class(name):
    lf = (
        type(FACTORIES[name]())(1, D, seed=0)
        if name != "SoftTripleLoss"
        else L.SoftTripleLoss(1, D, centers_per_class=2, seed=0)
    )
    out = lf(X, np.zeros(5, np.int64))
    assert _finite(lf, out)


def _p2sgrad_independent(x, W, y):
    """float64 value of 1/(NC) sum (cos - onehot)^2 and its gradients by central differences."""

    def f(x, W):
        xn = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
        cos = np.clip(xn @ W.T, -1, 1)
        t = np.zeros_like(cos)
        t[np.arange(len(y)), y] = 1
        return np.mean((cos - t) ** 2)

    gx = np.zeros_like(x)
    h = 1e-6
    for idx in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[idx] = h
        gx[idx] = (f(x + e, W) - f(x - e, W)) / (2 * h)
    return f(x, W), gx


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@pytest.mark.parametrize("kind", ["random", "one", "identical", "zero_row", "single_class"])
def test_p2sgrad_edge_values_match_float64(kind, backend):
    rng = np.random.default_rng(3)
    nc = 1 if kind == "single_class" else C
    x = rng.standard_normal((6, D))
    y = rng.integers(0, nc, 6)
    if kind == "one":
        x, y = x[:1], y[:1]
    elif kind == "identical":
        x[:] = x[0]
    elif kind == "zero_row":
        x[2] = 0.0
    lf = L.P2SGradLoss(nc, D, seed=1, backend=backend)
    out = lf(x.astype(np.float32), y)
    W = lf.weight.data.astype(np.float64)  # renormalized in place by the call
    np.testing.assert_allclose(np.linalg.norm(W, axis=1), 1.0, rtol=1e-6)
    v, gx = _p2sgrad_independent(x.astype(np.float32).astype(np.float64), W, y)
    assert out.loss == pytest.approx(v, rel=1e-5, abs=1e-7)
    if kind != "zero_row":  # the gradient of a zero row is a convention (0 / eps)
        np.testing.assert_allclose(out.grad, gx, rtol=1e-3, atol=1e-5)
    assert np.isfinite(out.grad).all() and np.isfinite(lf.weight.grad).all()


def test_p2sgrad_renormalizes_a_zero_weight_row_without_nan():
    lf = L.P2SGradLoss(C, D, seed=0)
    lf.weight.data[1] = 0.0
    out = lf(X, Y)
    assert _finite(lf, out)
    assert not lf.weight.data[1].any()


def test_p2sgrad_rejects_float64_and_noncontiguous_weight_by_converting():
    lf = L.P2SGradLoss(C, D, seed=0)
    lf.weight.data = np.asfortranarray(lf.weight.data.astype(np.float64))
    out = lf(X, Y)
    assert lf.weight.data.dtype == np.float32 and lf.weight.data.flags.c_contiguous
    assert _finite(lf, out)
