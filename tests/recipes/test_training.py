"""docs/recipes/training.py: the miner's and losses' stated settings (float64 checks), decreasing
objectives, parameter ownership, untouched modes/dtypes, and two-stream pairing."""

import sys
from pathlib import Path

import numpy as np
import pytest

from mantissa_embed.layers import Dense, Sequential

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
recipe = pytest.importorskip("docs.recipes.training")


def _unit(x):
    x = np.asarray(x, np.float64)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _dist(a, b):
    return np.linalg.norm(_unit(a)[:, None] - _unit(b)[None], axis=2)


def _avg_nonzero(v):
    return v[v > 0].mean() if (v > 0).any() else 0.0


def _snap(*models):
    return [[p.data.copy() for p in m.parameters()] for m in models]


def _all_changed(model, snap):
    return all(not np.array_equal(p.data, s) for p, s in zip(model.parameters(), snap))


def _none_changed(model, snap):
    return all(np.array_equal(p.data, s) for p, s in zip(model.parameters(), snap))


@pytest.fixture(scope="module")
def data():
    return recipe.make_data(0)


def _built(seed, X):
    return recipe.make_model(seed).build(X.shape[1:])


def test_miner_and_contrastive_settings_against_float64(data):
    X, y = data
    model = _built(0, X)
    E = model(X)
    from mantissa_embed.losses import ContrastiveLoss
    from mantissa_embed.miners import PairMarginMiner

    terms = recipe.metric_objective(
        model, X, y, PairMarginMiner(pos_margin=0.0, neg_margin=1.4), ContrastiveLoss()
    )
    d = _dist(E, E)
    same = y[:, None] == y[None]
    np.fill_diagonal(same, False)
    diff = y[:, None] != y[None]
    pos = same & (d > 0)
    neg = diff & (d < 1.4)
    assert terms["pos_pairs"] == pos.sum() and terms["neg_pairs"] == neg.sum()
    want = _avg_nonzero(d[pos] - 0.0) + _avg_nonzero(np.maximum(1.0 - d[neg], 0))
    assert terms["contrastive"] == pytest.approx(want, rel=1e-4)
    assert (recipe.POS_MARGIN, recipe.NEG_MARGIN) == (0.0, 1.4)


def test_classifier_cross_entropy_has_weight_one(data):
    X, y = data
    model = _built(0, X)
    clf = Sequential([Dense(4)], seed=1).build((4,))
    from mantissa_embed.losses import ContrastiveLoss, CrossEntropyLoss
    from mantissa_embed.miners import PairMarginMiner

    E = model(X).astype(np.float64)
    W, b = (p.data.astype(np.float64) for p in clf.parameters())
    z = E @ W.T + b
    ce = np.mean(np.log(np.exp(z - z.max(1, keepdims=True)).sum(1)) + z.max(1) - z[np.arange(len(y)), y])
    t = recipe.metric_objective(
        model, X, y, PairMarginMiner(0.0, 1.4), ContrastiveLoss(), clf, CrossEntropyLoss()
    )
    assert t["cross_entropy"] == pytest.approx(ce, rel=1e-5)
    assert t["total"] == pytest.approx(t["contrastive"] + ce, rel=1e-5)


def test_metric_training_decreases_and_updates_model_only(data):
    X, y = data
    model, spectator = _built(0, X), _built(5, X)
    before = _snap(model, spectator)
    model.eval()
    r = recipe.train_metric(model, X, y)
    assert r["final"] < r["initial"]
    assert _all_changed(model, before[0]) and _none_changed(spectator, before[1])
    assert not model.training  # mode untouched
    assert all(p.data.dtype == np.float32 for p in model.parameters())


def test_classifier_assisted_training_updates_model_and_classifier(data):
    X, y = data
    model = _built(0, X)
    clf = Sequential([Dense(4)], seed=1).build((4,))
    before = _snap(model, clf)
    r = recipe.train_metric(model, X, y, classifier=clf)
    assert r["final"] < r["initial"]
    assert _all_changed(model, before[0]) and _all_changed(clf, before[1])
    assert model.training and clf.training


def test_classifier_needs_labels_0_to_c_minus_1(data):
    X, y = data
    with pytest.raises(ValueError, match="class indices 0..3"):
        recipe.train_metric(_built(0, X), X, y + 1, classifier=Sequential([Dense(4)]), steps=1)


def test_proxy_training_temperature_and_ownership(data):
    X, y = data
    model = _built(0, X)
    from mantissa_embed.losses import NormalizedSoftmaxLoss

    loss = NormalizedSoftmaxLoss(4, 4, temperature=recipe.PROXY_TEMPERATURE, seed=3)
    assert loss.temperature == 0.1
    E = _unit(model(X))  # DotProductSimilarity() normalizes the embeddings (PML's default)
    W = loss.W.data.astype(np.float64)
    logits = E @ (W / np.linalg.norm(W, axis=0, keepdims=True)) / 0.1
    m = logits.max(1, keepdims=True)
    want = np.mean(np.log(np.exp(logits - m).sum(1)) + m[:, 0] - logits[np.arange(len(y)), y])
    before, W0 = _snap(model), loss.W.data.copy()
    model.eval()
    r = recipe.train_proxy(model, X, y, loss_func=loss)
    assert r["initial"] == pytest.approx(want, rel=1e-4)
    assert r["final"] < r["initial"]
    assert _all_changed(model, before[0]) and not np.array_equal(loss.W.data, W0)
    assert not model.training


def test_proxies_left_out_of_the_optimizer_stay_fixed(data):
    X, y = data
    model = _built(0, X)
    before = _snap(model)
    r = recipe.train_proxy(model, X, y, optimize_proxies=False, seed=3)
    W0 = recipe.NormalizedSoftmaxLoss(4, 4, temperature=0.1, seed=3).W.data
    np.testing.assert_array_equal(r["loss_func"].W.data, W0)
    assert _all_changed(model, before[0]) and r["final"] < r["initial"]


def test_two_stream_different_lengths_both_models_learn(data):
    X, y = data
    Xr, yr = recipe.make_data(1, per_class=6)
    q, rm = _built(0, X), _built(2, Xr)
    before = _snap(q, rm)
    r = recipe.train_two_stream(q, rm, X, y, Xr, yr)
    assert len(Xr) != len(X) and r["final"] < r["initial"]
    assert _all_changed(q, before[0]) and _all_changed(rm, before[1])


def test_equal_positions_are_not_self_matches(data):
    X, y = data
    q, rm = _built(0, X), _built(2, X)
    from mantissa_embed.losses import ContrastiveLoss

    value = recipe.two_stream_objective(
        q, rm, X, y, X, y, ContrastiveLoss()
    )  # same length, same labels object
    d = _dist(q(X), rm(X))
    same = y[:, None] == y[None]  # diagonal included: (i, i) is a genuine query/reference pair
    want = _avg_nonzero(d[same]) + _avg_nonzero(np.maximum(1 - d[~same], 0))
    assert value == pytest.approx(want, rel=1e-4)
    off = same & ~np.eye(len(y), dtype=bool)
    assert abs(want - (_avg_nonzero(d[off]) + _avg_nonzero(np.maximum(1 - d[~same], 0)))) > 1e-3
    assert any(p.grad.any() for p in q.parameters()) and any(p.grad.any() for p in rm.parameters())


def test_shared_model_enters_the_optimizer_once(data):
    X, y = data
    Xr, yr = recipe.make_data(1, per_class=6)
    m = _built(0, X)
    before = _snap(m)
    r = recipe.train_two_stream(m, m, X, y, Xr, yr)
    assert r["final"] < r["initial"] and _all_changed(m, before[0])


def test_inputs_must_already_be_float32(data):
    X, y = data
    with pytest.raises(TypeError, match="float32"):
        recipe.train_metric(_built(0, X), X.astype(np.float64), y, steps=1)
    with pytest.raises(TypeError, match="Xr"):
        recipe.train_two_stream(_built(0, X), _built(1, X), X, y, X.tolist(), y, steps=1)


def test_command_reports_four_decreasing_integrations(capsys):
    results = recipe.main(seed=0)
    assert list(results) == ["metric", "metric+classifier", "proxy", "two_stream"]
    for r in results.values():
        assert np.isfinite(r["initial"]) and r["final"] < r["initial"]
    out = capsys.readouterr().out
    assert out.count("initial objective") == 4
