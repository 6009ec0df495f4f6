"""evaluation.verification: ROC AUC, EER, TAR@FAR and the best threshold vs brute force over thresholds."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mantissa_embed.evaluation.verification import verification_metrics


def brute(d, same):
    """Every operating point of the rule ``d <= t`` for t in {-inf} + the distinct distances,
    computed by counting; AUC by comparing every (same, different) pair (ties 1/2)."""
    d = np.asarray(d, dtype=np.float64)
    same = np.asarray(same, dtype=bool)
    P, N = same.sum(), (~same).sum()
    ts = np.concatenate([[-np.inf], np.unique(d)])
    tar = np.array([(same & (d <= t)).sum() / P for t in ts])
    far = np.array([(~same & (d <= t)).sum() / N for t in ts])
    acc = np.array([((d <= t) == same).mean() for t in ts])
    dp, dn = d[same], d[~same]
    auc = ((dp[:, None] < dn[None]).sum() + 0.5 * (dp[:, None] == dn[None]).sum()) / (P * N)
    # EER: on the segment (k, k+1) where FAR - FRR goes from < 0 to >= 0, solve for the
    # fraction a at which the linearly interpolated FAR equals the interpolated FRR.
    frr = 1.0 - tar
    eer = eer_t = None
    for k in range(len(ts)):
        if far[k] == frr[k]:
            eer, eer_t = far[k], ts[k]
            break
        if k + 1 < len(ts) and far[k] < frr[k] and far[k + 1] > frr[k + 1]:
            a = (frr[k] - far[k]) / ((far[k + 1] - far[k]) - (frr[k + 1] - frr[k]))
            eer = far[k] + a * (far[k + 1] - far[k])
            t0 = ts[k] if k > 0 else ts[1]
            eer_t = t0 + a * (ts[k + 1] - t0)
            break
    tar_at = {f: max(tar[i] for i in range(len(ts)) if far[i] <= f) for f in (1e-3, 1e-2)}
    best = acc.max()
    return dict(ts=ts, tar=tar, far=far, acc=acc, auc=auc, eer=eer, eer_t=eer_t, tar_at=tar_at, best=best)


pairs = st.integers(4, 60).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 8), min_size=n, max_size=n),  # small ints -> many ties
        st.lists(st.booleans(), min_size=n, max_size=n),
        st.floats(0.05, 3.0),
    )
)


@settings(max_examples=150, deadline=None)
@given(pairs)
def test_matches_brute_force(data):
    vals, same, scale = data
    same = np.array(same)
    if same.all() or not same.any():
        same[0] = not same[0]
    d = np.array(vals, dtype=np.float64) * scale
    b = brute(d, same)
    m = verification_metrics(d, same)
    np.testing.assert_array_equal(m["thresholds"], b["ts"])
    np.testing.assert_allclose(m["tpr"], b["tar"], atol=1e-12)
    np.testing.assert_allclose(m["fpr"], b["far"], atol=1e-12)
    assert m["roc_auc"] == pytest.approx(b["auc"], abs=1e-12)
    assert m["eer"] == pytest.approx(b["eer"], abs=1e-12)
    assert m["eer_threshold"] == pytest.approx(b["eer_t"], abs=1e-9)
    assert m["tar_at_far_1e-3"] == pytest.approx(b["tar_at"][1e-3], abs=1e-12)
    assert m["tar_at_far_1e-2"] == pytest.approx(b["tar_at"][1e-2], abs=1e-12)
    assert m["best_accuracy"] == pytest.approx(b["best"], abs=1e-12)
    # the reported threshold really achieves the best accuracy with the rule d <= t
    assert ((d <= m["best_threshold"]) == same).mean() == pytest.approx(b["best"], abs=1e-12)
    for k in ("roc_auc", "eer", "tar_at_far_1e-3", "tar_at_far_1e-2", "best_accuracy"):
        assert 0.0 <= m[k] <= 1.0


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_continuous_distances(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(10, 300))
    same = rng.random(n) < 0.3
    same[:2] = [True, False]
    d = rng.normal(size=n) + 1.0 * ~same
    m = verification_metrics(d.astype(np.float32), same)  # float32 input is widened exactly
    d32 = d.astype(np.float32).astype(np.float64)
    b = brute(d32, same)
    assert m["roc_auc"] == pytest.approx(b["auc"], abs=1e-12)
    assert m["eer"] == pytest.approx(b["eer"], abs=1e-12)
    assert m["best_accuracy"] == pytest.approx(b["best"], abs=1e-12)


def test_perfect_separation():
    d = np.array([0.1, 0.3, 0.2, 0.8, 0.9, 1.5])
    same = np.array([1, 1, 1, 0, 0, 0])
    m = verification_metrics(d, same)
    assert m["roc_auc"] == 1.0 and m["eer"] == 0.0
    assert m["tar_at_far_1e-3"] == 1.0 and m["tar_at_far_1e-2"] == 1.0
    assert m["best_accuracy"] == 1.0
    assert m["best_threshold"] == 0.3 and m["eer_threshold"] == 0.3


def test_fully_inverted():
    m = verification_metrics([0.9, 0.8, 0.1, 0.2], [True, True, False, False])
    assert m["roc_auc"] == 0.0 and m["eer"] == 1.0
    assert m["tar_at_far_1e-2"] == 0.0
    assert m["best_accuracy"] == 0.5  # reject all (-inf) ties with accept all; the finite one is kept
    assert np.isfinite(m["best_threshold"])


def test_all_tied():
    m = verification_metrics([0.5] * 6, [1, 0, 1, 0, 0, 1])
    assert m["roc_auc"] == 0.5 and m["eer"] == 0.5 and m["eer_threshold"] == 0.5
    assert m["tar_at_far_1e-2"] == 0.0
    assert m["best_threshold"] == 0.5 and m["best_accuracy"] == 0.5


def test_reject_all_strictly_best_gives_minus_inf():
    m = verification_metrics([0.1, 0.2, 0.3, 0.4, 0.5], [0, 0, 1, 0, 0])
    assert m["best_threshold"] == -np.inf and m["best_accuracy"] == 0.8


def test_tar_at_far_uses_floor_of_false_accepts():
    # 1000 different pairs, 10 same pairs; FAR 1e-3 allows exactly 1 false accept
    rng = np.random.default_rng(0)
    dn = np.sort(rng.uniform(1.0, 2.0, 1000))
    dp = np.array([0.5, 0.6, 0.7, dn[0] + 1e-6, dn[1] + 1e-6, 3, 3, 3, 3, 3])
    d = np.concatenate([dp, dn])
    same = np.r_[np.ones(10, bool), np.zeros(1000, bool)]
    m = verification_metrics(d, same)
    assert m["tar_at_far_1e-3"] == pytest.approx(0.4)  # threshold dn[0]+eps: 1 false accept
    assert m["tar_at_far_1e-2"] == pytest.approx(0.5)


def test_roc_arrays():
    rng = np.random.default_rng(1)
    d = rng.random(50)
    same = rng.random(50) < 0.5
    m = verification_metrics(d, same)
    assert m["fpr"][0] == 0 and m["tpr"][0] == 0 and m["fpr"][-1] == 1 and m["tpr"][-1] == 1
    assert np.all(np.diff(m["fpr"]) >= 0) and np.all(np.diff(m["tpr"]) >= 0)
    assert m["thresholds"][0] == -np.inf and np.all(np.diff(m["thresholds"][1:]) > 0)
    assert m["fpr"].dtype == m["tpr"].dtype == m["thresholds"].dtype == np.float64


def test_best_threshold_feeds_verify():
    from mantissa_embed import Embedder, models

    rng = np.random.default_rng(0)
    X = rng.random((40, 1, 8, 8)).astype(np.float32)
    y = np.repeat(np.arange(4), 10)
    emb = Embedder(
        models.mlp_embedder(embed_dim=4), seed=0, loss="triplet", miner="batch_hard", optimizer="sgd"
    )
    emb.fit(X, y, epochs=1, batch_size=20, lr=0.05, augment=None, schedule=None)
    i, j = np.triu_indices(40, 1)
    d = emb.verify(X[i], X[j])
    m = verification_metrics(d, y[i] == y[j])
    decided = emb.verify(X[i], X[j], threshold=m["best_threshold"])
    assert (decided == (y[i] == y[j])).mean() == pytest.approx(m["best_accuracy"])


@pytest.mark.parametrize(
    "distances, same, exc, word",
    [
        ([0.1, np.nan, 0.3], [1, 0, 1], ValueError, "distances"),
        ([0.1, np.inf, 0.3], [1, 0, 1], ValueError, "distances"),
        ([[0.1, 0.2]], [[1, 0]], ValueError, "distances"),
        ([0.1], [1], ValueError, "distances"),
        (["a", "b"], [1, 0], TypeError, "distances"),
        ([0.1 + 1j, 0.2], [1, 0], TypeError, "distances"),
        (None, [1, 0], TypeError, "distances"),
        ([0.1, 0.2, 0.3], [1, 0], ValueError, "same"),
        ([0.1, 0.2], [[1, 0]], ValueError, "same"),
        ([0.1, 0.2], [1, 2], ValueError, "same"),
        ([0.1, 0.2], [0.0, 1.0], TypeError, "same"),
        ([0.1, 0.2], [1, 1], ValueError, "same"),
        ([0.1, 0.2], [False, False], ValueError, "same"),
        ([0.1, 0.2], None, TypeError, "same"),
    ],
)
def test_bad_input(distances, same, exc, word):
    with pytest.raises(exc, match=word):
        verification_metrics(distances, same)
