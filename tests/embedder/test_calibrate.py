"""Embedder.calibrate: the pair draw, the three threshold rules against brute force over every
candidate threshold, verify's calibrated default, and the threshold saved with the model."""

import numpy as np
import pytest

from mantissa_embed import Embedder, models
from mantissa_embed.embedder import _calibration


# ----------------------------------------------------------------------------- the pair draw
def test_sampled_pairs_are_of_their_kind_and_uniform():
    sizes = (2, 30, 100, 400, 1468)  # 2,000 items, very unequal classes: drawn, not enumerated
    y = np.repeat(np.arange(5), sizes)
    rng = np.random.default_rng(0)
    pi, pj, ni, nj, p_tot, n_tot = _calibration.sample_pairs(y, 60_000, rng)
    assert p_tot == sum(c * (c - 1) for c in sizes)
    assert n_tot == 2000 * 1999 - p_tot
    assert pi.size == ni.size == 60_000
    assert (y[pi] == y[pj]).all() and (pi != pj).all()
    assert (y[ni] != y[nj]).all()
    # positives: each class in proportion to its ordered pairs (independent count)
    share = np.bincount(y[pi], minlength=5) / pi.size
    want = np.array([c * (c - 1) for c in sizes]) / p_tot
    np.testing.assert_allclose(share, want, atol=0.01)
    # negatives: the anchor's class in proportion to n_c (n - n_c)
    share = np.bincount(y[ni], minlength=5) / ni.size
    want = np.array([c * (2000 - c) for c in sizes]) / n_tot
    np.testing.assert_allclose(share, want, atol=0.01)


def test_few_items_use_every_pair():
    y = np.array([0, 0, 1, 1, 1, 2])
    pi, pj, ni, nj, p_tot, n_tot = _calibration.sample_pairs(y, 1000, np.random.default_rng(0))
    assert pi.size == p_tot == 2 + 6 and ni.size == n_tot == 30 - 8
    assert len(set(zip(pi.tolist(), pj.tolist()))) == pi.size


# ----------------------------------------------------------------------------- the rules
def _brute(pos, neg, wp=1.0, wn=1.0):
    cand = np.unique(np.concatenate([pos, neg, [0.0]]))
    tar = np.array([(pos <= t).mean() for t in cand])
    far = np.array([(neg <= t).mean() for t in cand])
    tp, fp = tar * pos.size * wp, far * neg.size * wn
    prec = np.where(tp + fp > 0, tp / np.maximum(tp + fp, 1e-300), 0.0)
    return cand, tar, far, prec


@pytest.mark.parametrize("seed", range(6))
def test_rules_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    pos = np.round(rng.gamma(2.0, 0.2, 300), 2)  # ties on purpose
    neg = np.round(rng.gamma(6.0, 0.2, 900), 2)
    cand, tar, far, prec = _brute(pos, neg, 2.0, 0.5)
    for target in (0.0, 1e-3, 0.01, 0.2, 1.0):
        t, st = _calibration.choose_threshold(pos, neg, target_far=target)
        assert st["far"] <= target + 1e-12 and st["far"] == (neg <= t).mean()
        # t is the largest such threshold: the next float up accepts too many negatives
        assert t >= neg.max() or (neg <= np.nextafter(t, np.inf)).mean() > target
        assert st["tar"] == (pos <= t).mean()
    for target in (0.3, 0.6, 0.9):
        t, st = _calibration.choose_threshold(
            pos, neg, target_precision=target, pos_weight=2.0, neg_weight=0.5
        )
        ok = cand[(prec >= target) & (tar > 0)]
        assert t == (ok.max() if ok.size else 0.0)
    t, st = _calibration.choose_threshold(pos, neg, max_accuracy=True)
    bal = (tar + 1 - far) / 2
    assert st["balanced_accuracy"] == pytest.approx(bal.max())
    assert t == cand[np.argmax(bal)]


# ----------------------------------------------------------------------------- the Embedder
@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    centers = rng.standard_normal((6, 1, 12, 12)).astype(np.float32)
    y = np.repeat(np.arange(6), 30)
    X = (centers[y] + 0.3 * rng.standard_normal((180, 1, 12, 12))).astype(np.float32)
    emb = Embedder(models.small_cnn_embedder(8), loss="triplet", seed=0)
    emb.fit(X, y, epochs=3, batch_size=60)
    return emb, X, y


def test_calibrate_measures_what_it_reports(fitted):
    emb, X, y = fitted
    cal = emb.calibrate(X, y, target_far=0.05)
    Z = emb.embed(X).astype(np.float64)
    D = np.linalg.norm(Z[:, None] - Z[None], axis=2)
    off = ~np.eye(len(y), dtype=bool)
    same = (y[:, None] == y[None]) & off
    diff = y[:, None] != y[None]
    t = emb.threshold_
    assert cal["threshold"] == t and emb.calibration_["rule"] == "target_far"
    assert cal["n_positive_pairs"] == same.sum() and cal["n_negative_pairs"] == diff.sum()  # all pairs
    assert cal["far"] == pytest.approx((D[diff] <= t).mean(), abs=1e-6) and cal["far"] <= 0.05
    assert cal["tar"] == pytest.approx((D[same] <= t).mean(), abs=1e-6)
    # verify's default answers with it; None still gives the distances
    got = emb.verify(X[:40], X[40:80])
    d = emb.verify(X[:40], X[40:80], threshold=None)
    np.testing.assert_array_equal(got, d <= t)


def test_default_rule_and_sampling_are_seeded(fitted):
    emb, X, y = fitted
    a = emb.calibrate(X, y, n_pairs=300, seed=4)
    b = emb.calibrate(X, y, n_pairs=300, seed=4)
    assert a == b and a["rule"] == "target_far" and a["target"] == 1e-3
    assert a["n_positive_pairs"] == a["n_negative_pairs"] == 300


def test_threshold_is_saved_with_the_model(fitted, tmp_path):
    emb, X, y = fitted
    cal = emb.calibrate(X, y, max_accuracy=True)
    emb.save(tmp_path / "m.npz")
    back = Embedder.load(tmp_path / "m.npz")
    assert back.threshold_ == cal["threshold"] and back.calibration_ == cal
    np.testing.assert_array_equal(back.verify(X[:20], X[20:40]), emb.verify(X[:20], X[20:40]))


def test_uncalibrated_verify_returns_distances(fitted):
    emb, X, _ = fitted
    fresh = Embedder(emb.net, loss="triplet")
    fresh.fitted_, fresh.input_shape_, fresh.embed_dim_ = True, emb.input_shape_, emb.embed_dim_
    assert isinstance(fresh.verify(X[0], X[1]), float)


@pytest.mark.parametrize(
    "kw, exc, match",
    [
        ({"target_far": 0.1, "max_accuracy": True}, ValueError, "one of"),
        ({"target_far": 1.5}, ValueError, "target_far"),
        ({"target_far": -0.1}, ValueError, "target_far"),
        ({"target_precision": 0.0}, ValueError, "target_precision"),
        ({"target_precision": "high"}, TypeError, "target_precision"),
        ({"max_accuracy": "yes"}, TypeError, "max_accuracy"),
        ({"n_pairs": 0}, ValueError, "n_pairs"),
    ],
)
def test_bad_arguments(fitted, kw, exc, match):
    emb, X, y = fitted
    with pytest.raises(exc, match=match):
        emb.calibrate(X, y, **kw)


def test_labels_without_a_kind_of_pair(fitted):
    emb, X, y = fitted
    with pytest.raises(ValueError, match="positive pair"):
        emb.calibrate(X[:6], np.arange(6))
    with pytest.raises(ValueError, match="two classes"):
        emb.calibrate(X[:6], np.zeros(6, np.int64))
    with pytest.raises(ValueError, match="same length"):
        emb.calibrate(X[:6], y[:5])
    with pytest.raises(TypeError, match="threshold must be a number"):
        emb.verify(X[0], X[1], threshold="best")
