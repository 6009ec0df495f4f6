"""docs/recipes/mining_weights.py: exact subset -> dataset weight mapping, uniform fallback for
an empty tuple, sampling with replacement that never draws a zero-weight row."""

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
recipe = pytest.importorskip("docs.recipes.mining_weights")


def test_exact_mapping_by_hand():
    subset = np.array([7, 2, 9, 4])
    labels = np.array([0, 0, 1, 1])
    tup = (np.array([0, 0, 1]), np.array([1, 2, 2]), np.array([3]), np.array([0]))
    # occurrences of subset positions: 0 -> 3, 1 -> 2, 2 -> 2, 3 -> 1; divided by 3
    w = recipe.dataset_weights(tup, subset, labels, 12)
    want = np.zeros(12)
    want[[7, 2, 9, 4]] = [1, 2 / 3, 2 / 3, 1 / 3]
    np.testing.assert_allclose(w, want, rtol=1e-6)
    assert w.dtype == np.float32


@pytest.mark.parametrize("tup", [None, (np.zeros(0, np.int64),) * 4, (np.zeros(0, np.int64),) * 3])
def test_empty_tuple_is_uniform_within_the_subset(tup):
    subset = np.array([5, 0, 3])
    w = recipe.dataset_weights(tup, subset, np.array([1, 1, 2]), 8)
    want = np.zeros(8)
    want[subset] = 1
    np.testing.assert_array_equal(w, want)


def test_recipe_weights_match_an_independent_count():
    r = recipe.run(seed=0)
    counts = np.bincount(np.concatenate(r["tuple"]), minlength=recipe.SUBSET_SIZE)
    want = np.zeros(len(r["weights"]))
    want[r["subset"]] = counts / counts.max()
    np.testing.assert_allclose(r["weights"], want, rtol=1e-6)
    outside = np.setdiff1d(np.arange(len(want)), r["subset"])
    assert (r["weights"][outside] == 0).all()
    flat = np.concatenate(r["batches"])
    assert (r["weights"][flat] > 0).all()


def test_four_batches_of_eight_labels_reproducible(capsys):
    a = recipe.main(seed=0)
    out = capsys.readouterr().out
    assert len(a["batch_labels"]) == 4 and all(len(b) == 8 for b in a["batch_labels"])
    assert out.count("batch ") == 4
    b = recipe.run(seed=0)
    assert all((x == y).all() for x, y in zip(a["batches"], b["batches"]))
    X, y = recipe.make_data(0)
    assert all((y[i] == lab).all() for i, lab in zip(a["batches"], a["batch_labels"]))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(2, 30), k=st.integers(1, 10), t=st.integers(0, 6))
def test_zero_weight_rows_are_never_drawn(seed, n, k, t):
    rng = np.random.default_rng(seed)
    k = min(k, n)
    subset = rng.choice(n, size=k, replace=False)
    labels = rng.integers(0, 3, k)
    tup = (rng.integers(0, k, t), rng.integers(0, k, t), rng.integers(0, k, t))
    w = recipe.dataset_weights(tup, subset, labels, n)
    for b in recipe.sample_batches(w, seed=seed):
        assert b.shape == (8,) and (w[b] > 0).all()
        assert set(b.tolist()) <= set(subset.tolist())


def test_bad_subsets_raise():
    tup = (np.array([0]), np.array([1]), np.array([0]), np.array([1]))
    with pytest.raises(ValueError, match="unique"):
        recipe.dataset_weights(tup, np.array([1, 1]), np.array([0, 0]), 4)
    with pytest.raises(ValueError, match="align"):
        recipe.dataset_weights(tup, np.array([1, 2]), np.array([0]), 4)
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        recipe.dataset_weights(tup, np.array([1, 9]), np.array([0, 0]), 4)
    with pytest.raises(ValueError):
        recipe.dataset_weights(
            (np.array([0]), np.array([5]), np.array([0]), np.array([1])),
            np.array([1, 2]),
            np.array([0, 0]),
            4,
        )
