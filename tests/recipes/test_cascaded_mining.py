"""docs/recipes/cascaded_mining.py: three slices, HDC fractions (1, 0.5, 0.5), nested pair sets,
counts 24 / 12 / 6, the summed contrastive loss and its gradient (float64 + finite differences)."""

import sys
from pathlib import Path

import numpy as np
import pytest

from mantissa_embed.losses import ContrastiveLoss
from mantissa_embed.miners import HDCMiner

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
recipe = pytest.importorskip("docs.recipes.cascaded_mining")


def _contrastive64(E, pairs, pm=0.0, nm=1.0):
    En = E / np.linalg.norm(E, axis=1, keepdims=True)
    a1, p, a2, n = pairs
    dp = np.linalg.norm(En[a1] - En[p], axis=1)
    dn = np.linalg.norm(En[a2] - En[n], axis=1)
    lp, ln = np.maximum(dp - pm, 0), np.maximum(nm - dn, 0)
    return (lp[lp > 0].mean() if (lp > 0).any() else 0.0) + (ln[ln > 0].mean() if (ln > 0).any() else 0.0)


def _total64(E, stages):
    b = np.cumsum([0] + list(recipe.SLICE_SIZES))
    return sum(_contrastive64(E[:, lo:hi], s["pairs"]) for lo, hi, s in zip(b[:-1], b[1:], stages))


@pytest.fixture(scope="module")
def result():
    return recipe.main(seed=0, verbose=False)


def test_counts_24_12_6_and_finite_loss(result, capsys):
    assert result["positive_counts"] == [24, 12, 6]
    assert np.isfinite(result["loss"])
    recipe.main(seed=0)
    assert "[24, 12, 6]" in capsys.readouterr().out
    E, _ = recipe.make_embeddings(0)
    assert sum(recipe.SLICE_SIZES) == E.shape[1] and len(recipe.SLICE_SIZES) == 3
    assert recipe.FRACTIONS == (1.0, 0.5, 0.5)


def test_each_stage_only_filters_the_previous_stage(result):
    prev = None
    for s in result["stages"]:
        a1, p, a2, n = s["pairs"]
        pos, neg = set(zip(a1.tolist(), p.tolist())), set(zip(a2.tolist(), n.tolist()))
        assert len(pos) == len(a1) and len(neg) == len(a2)  # no duplicates
        if prev is not None:
            assert pos <= prev[0] and neg <= prev[1]
        prev = (pos, neg)


def test_loss_and_gradient_against_float64(result):
    E, y = recipe.make_embeddings(0)
    E64 = E.astype(np.float64)
    assert result["loss"] == pytest.approx(_total64(E64, result["stages"]), rel=1e-5)
    eps, g = 1e-6, np.zeros_like(E64)
    for idx in np.ndindex(*E.shape):
        ep, em = E64.copy(), E64.copy()
        ep[idx] += eps
        em[idx] -= eps
        g[idx] = (_total64(ep, result["stages"]) - _total64(em, result["stages"])) / (2 * eps)
    np.testing.assert_allclose(result["grad"], g, rtol=1e-3, atol=1e-4)


def test_mismatches_raise():
    E, y = recipe.make_embeddings(0)
    mk = lambda k: ([HDCMiner() for _ in range(k)], [ContrastiveLoss() for _ in range(k)])  # noqa: E731
    with pytest.raises(ValueError, match="sum to the embedding dimension"):
        recipe.cascaded_loss(E, y, (4, 4, 4), *mk(3))
    with pytest.raises(ValueError, match="one miner and one loss per slice"):
        recipe.cascaded_loss(E, y, (8, 8), *mk(3))
    miners, losses = mk(3)
    with pytest.raises(ValueError, match="one miner and one loss per slice"):
        recipe.cascaded_loss(E, y, (4, 4, 8), miners[:2], losses)
