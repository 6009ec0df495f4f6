"""docs/recipes/adversarial_metric_learning.py: the three generator objectives and the two metric
objectives against float64 numpy, dJ/ds against finite differences, and optimizer ownership
over repeated alternations."""

import sys
from pathlib import Path

import numpy as np
import pytest

from mantissa_embed.optim import Adam

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
recipe = pytest.importorskip("docs.recipes.adversarial_metric_learning")


def _unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _embed64(embedder, x):
    W, b = (p.data.astype(np.float64) for p in embedder.parameters())
    return _unit(x @ W.T + b)


def _generator_terms64(embedder, a, p, n, s):
    ea, ep, es = (_embed64(embedder, z) for z in (a, p, s))
    v = np.linalg.norm(ea - es, axis=1) - np.linalg.norm(ea - ep, axis=1) - 0.2
    act = np.maximum(v, 0)
    adv = act[act > 0].mean() if (act > 0).any() else 0.0
    hard = np.mean((_unit(s) - _unit(a)) ** 2)
    reg = np.mean((_unit(s) - _unit(n)) ** 2)
    return adv, hard, reg


def _triplet64(E, a, p, n, margin=0.2):
    v = np.linalg.norm(E[a] - E[p], axis=1) - np.linalg.norm(E[a] - E[n], axis=1) + margin
    act = np.maximum(v, 0)
    return act[act > 0].mean() if (act > 0).any() else 0.0


def _fixture(seed=0):
    X, y = recipe.make_data(seed)
    trunk, embedder, generator = recipe.make_models(seed)
    sampler = recipe.MPerClassSampler(y, 4, batch_size=12, seed=seed)
    idx, trip = recipe.batch_triplets(sampler, y, np.random.default_rng(seed))
    return X[idx], trip, trunk, embedder, generator


def _features(trunk, generator, Xb, trip):
    feats = trunk(Xb)
    a, p, n = (feats[t] for t in trip)
    return a, p, n, generator(np.concatenate([a, p, n], axis=1))


def test_generator_objectives_and_gradient():
    Xb, trip, trunk, embedder, generator = _fixture(0)
    assert len(trip[0]) > 0
    a, p, n, s = _features(trunk, generator, Xb, trip)
    terms, ds = recipe.generator_objective(embedder, a, p, n, s)
    A, P, N, S = (z.astype(np.float64) for z in (a, p, n, s))
    adv, hard, reg = _generator_terms64(embedder, A, P, N, S)
    assert adv > 0  # the fixture has active violations
    assert terms["adversarial"] == pytest.approx(adv, rel=1e-4)
    assert terms["hardness"] == pytest.approx(hard, rel=1e-6)
    assert terms["regularization"] == pytest.approx(reg, rel=1e-6)
    assert terms["total"] == pytest.approx(adv + hard + reg, rel=1e-4)  # equal weights
    eps, g = 1e-6, np.zeros_like(S)
    for idx in np.ndindex(*S.shape):
        sp, sm = S.copy(), S.copy()
        sp[idx] += eps
        sm[idx] -= eps
        g[idx] = (
            sum(_generator_terms64(embedder, A, P, N, sp)) - sum(_generator_terms64(embedder, A, P, N, sm))
        ) / (2 * eps)
    np.testing.assert_allclose(ds, g, rtol=2e-3, atol=2e-4 * np.abs(g).max())


def test_no_active_violation_gives_zero_adversarial_term():
    Xb, trip, trunk, embedder, generator = _fixture(1)
    a, p, n, _ = _features(trunk, generator, Xb, trip)
    terms, ds = recipe.generator_objective(embedder, a, p, n, a.copy())  # s = a: d(a, s) = 0
    assert terms["adversarial"] == 0.0 and terms["hardness"] == pytest.approx(0.0, abs=1e-12)
    # the gradient is then the regularization term's alone
    u, nn = _unit(a.astype(np.float64)), np.linalg.norm(a.astype(np.float64), axis=1, keepdims=True)
    du = 2 * (u - _unit(n.astype(np.float64))) / u.size
    want = (du - u * np.sum(du * u, axis=1, keepdims=True)) / nn
    np.testing.assert_allclose(ds, want, rtol=1e-4, atol=1e-7)


def test_embedder_is_frozen_in_the_generator_step_but_passes_gradients():
    Xb, trip, trunk, embedder, generator = _fixture(2)
    for prm in embedder.parameters():
        prm.grad[...] = 0.5  # whatever was there stays exactly there
    a, p, n, s = _features(trunk, generator, Xb, trip)
    _, ds = recipe.generator_objective(embedder, a, p, n, s)
    assert all((prm.grad == 0.5).all() for prm in embedder.parameters())
    assert np.abs(ds).max() > 0


def test_metric_objectives_against_float64():
    Xb, trip, trunk, embedder, generator = _fixture(3)
    a_, p_, n_, s = _features(trunk, generator, Xb, trip)
    feats = trunk(Xb).astype(np.float64)
    E = _embed64(embedder, np.concatenate([feats, s.astype(np.float64)]))
    B, T = len(feats), len(s)
    a, p, n = trip
    terms = recipe.metric_objective(trunk, embedder, generator, Xb, trip)
    assert terms["authentic"] == pytest.approx(_triplet64(E, a, p, n), rel=1e-4, abs=1e-7)
    assert terms["synthetic"] == pytest.approx(_triplet64(E, a, p, B + np.arange(T)), rel=1e-4, abs=1e-7)
    assert terms["total"] == pytest.approx(terms["authentic"] + terms["synthetic"])
    assert all(not prm.grad.any() for prm in generator.parameters())  # s was detached
    assert any(prm.grad.any() for prm in trunk.parameters())
    assert any(prm.grad.any() for prm in embedder.parameters())


def _snap(model):
    return [prm.data.copy() for prm in model.parameters()]


def _changed(model, snap):
    return [not np.array_equal(prm.data, s) for prm, s in zip(model.parameters(), snap)]


def test_each_optimizer_changes_only_its_parameters_across_alternations():
    X, y = recipe.make_data(4)
    trunk, embedder, generator = recipe.make_models(4)
    gen_opt = Adam(generator.parameters(), lr=1e-2)
    metric_opt = Adam(trunk.parameters() + embedder.parameters(), lr=1e-2)
    sampler = recipe.MPerClassSampler(y, 4, batch_size=12, seed=4)
    rng = np.random.default_rng(4)
    for _ in range(3):
        idx, trip = recipe.batch_triplets(sampler, y, rng)
        before = {m: _snap(m) for m in (trunk, embedder, generator)}
        recipe.generator_step(trunk, embedder, generator, gen_opt, X[idx], trip)
        assert all(_changed(generator, before[generator]))
        assert not any(_changed(trunk, before[trunk])) and not any(_changed(embedder, before[embedder]))
        before = {m: _snap(m) for m in (trunk, embedder, generator)}
        recipe.metric_step(trunk, embedder, generator, metric_opt, X[idx], trip)
        assert not any(_changed(generator, before[generator]))
        assert all(_changed(trunk, before[trunk])) and all(_changed(embedder, before[embedder]))


def test_ten_alternations_finite(capsys):
    out = recipe.main(seed=0)
    assert len(out["history"]) == recipe.STEPS == 10
    for h in out["history"]:
        assert h["num_triplets"] > 0
        assert all(np.isfinite(v) for v in h["generator"].values())
        assert all(np.isfinite(v) for v in h["metric"].values())
    assert "final objectives" in capsys.readouterr().out
