"""Adversarial inputs for mantissa_embed.samplers: bad labels/weights/sizes raise a
ValueError/TypeError naming the argument; extreme but valid weights sample correctly; bad model
or miner outputs in TuplesToWeightsSampler are reported, never an IndexError or silent misuse."""

import warnings

import numpy as np
import pytest

from mantissa_embed import miners
from mantissa_embed.samplers import (
    FixedSetOfTriplets,
    HierarchicalSampler,
    MPerClassSampler,
    TuplesToWeightsSampler,
    WeightedSampler,
)

Y = np.repeat(np.arange(4), 3)


@pytest.mark.parametrize("labels", [[], np.zeros(0, np.int64), np.zeros(0)])
def test_empty_labels_are_a_value_error(labels):
    with pytest.raises(ValueError, match="labels must not be empty"):
        MPerClassSampler(labels, 2)
    with pytest.raises(ValueError, match="labels"):
        FixedSetOfTriplets(labels, 3)
    with pytest.raises(ValueError, match="labels|super-classes"):
        HierarchicalSampler(np.zeros((0, 2), np.int64), 4, 2)


@pytest.mark.parametrize(
    "kwargs,exc,word",
    [
        ({"labels": Y.astype(float)}, TypeError, "labels"),
        ({"labels": Y.astype(bool)}, TypeError, "labels"),
        ({"labels": Y[:, None]}, ValueError, "labels"),
        ({"m": 0}, ValueError, "m"),
        ({"m": 2.0}, TypeError, "m"),
        ({"batch_size": 5}, ValueError, "batch_size"),
        ({"batch_size": 0}, ValueError, "batch_size"),
        ({"batch_size": 10}, ValueError, "batch_size"),  # 2 * 4 classes < 10
        ({"length_before_new_iter": 0}, ValueError, "length_before_new_iter"),
        ({"batch_size": 4, "length_before_new_iter": 2}, ValueError, "length_before_new_iter"),
        ({"seed": -1}, ValueError, "seed"),
        ({"seed": "a"}, TypeError, "seed"),
    ],
)
def test_mperclass_bad_arguments(kwargs, exc, word):
    args = {"labels": Y, "m": 2, **kwargs}
    with pytest.raises(exc, match=word):
        MPerClassSampler(**args)


def test_mperclass_m_larger_than_class_draws_with_replacement():
    s = MPerClassSampler(Y, 5, batch_size=10, length_before_new_iter=40, seed=0)
    for b in s:
        assert len(b) == 10
        labs = Y[b].reshape(2, 5)
        assert (labs == labs[:, :1]).all() and labs[0, 0] != labs[1, 0]
        assert ((b >= 0) & (b < len(Y))).all()


@pytest.mark.parametrize(
    "weights,exc,word",
    [
        ([], ValueError, "weights"),
        ([0, 0], ValueError, "weights"),
        ([1, -1], ValueError, "weights"),
        ([1, np.nan], ValueError, "weights"),
        ([1, np.inf], ValueError, "weights"),
        ([True, False], TypeError, "weights"),
        ([[1, 1]], ValueError, "weights"),
        (np.array([1, 1], object), TypeError, "weights"),
        ("ab", TypeError, "weights"),
    ],
)
def test_weighted_bad_weights(weights, exc, word):
    with pytest.raises(exc, match=word):
        WeightedSampler(weights, 3)


@pytest.mark.parametrize(
    "kwargs,exc,word",
    [
        ({"num_samples": 0}, ValueError, "num_samples"),
        ({"num_samples": 2.0}, TypeError, "num_samples"),
        ({"replacement": 1}, TypeError, "replacement"),
        ({"generator": "x"}, TypeError, "generator"),
        ({"batch_size": 0}, ValueError, "batch_size"),
        ({"num_samples": 3, "replacement": False}, ValueError, "num_samples"),
    ],
)
def test_weighted_bad_arguments(kwargs, exc, word):
    args = {"weights": [1.0, 0.0, 1.0], "num_samples": 2, **kwargs}
    with pytest.raises(exc, match=word):
        WeightedSampler(**args)


@pytest.mark.parametrize("scale", [1e308, 1e300, 1e-300, 5e-324])
def test_weighted_extreme_weight_scales_sample_the_right_distribution(scale):
    # [1e308, 1e308] must not overflow the normalizing sum (inf) into NaN probabilities
    w = np.array([1.0, 0.0, 1.0, 1.5]) * scale
    if scale == 5e-324:
        w = np.array([1, 0, 1, 1]) * scale
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = WeightedSampler(w, 4000, generator=0)
        idx = s.indices()
    assert not (idx == 1).any()
    freq = np.bincount(idx, minlength=4) / len(idx)
    want = w / w.max()
    want = want / want.sum()
    np.testing.assert_allclose(freq, want, atol=0.03)


def test_fixed_set_of_triplets_edge_cases():
    with pytest.raises(ValueError, match="2 distinct classes"):
        FixedSetOfTriplets([0, 0, 0], 3)
    with pytest.raises(ValueError, match="num_triplets"):
        FixedSetOfTriplets(Y, 0)
    with pytest.raises(TypeError, match="labels"):
        FixedSetOfTriplets(Y.astype(float), 2)
    t = FixedSetOfTriplets([0, 1], 5, seed=0).fixed_set_of_triplets  # singleton classes: a == p
    assert (t[:, 0] == t[:, 1]).all() and (t[:, 0] != t[:, 2]).all()


Y2 = np.stack([np.arange(12) // 2, np.arange(12) // 6], 1)


@pytest.mark.parametrize(
    "args,kwargs,exc,word",
    [
        ((np.arange(5), 4, 2), {}, ValueError, "labels"),
        ((Y2.astype(float), 4, 2), {}, TypeError, "labels"),
        ((Y2, 4, 3), {}, ValueError, "samples_per_class"),
        ((Y2, 4, "some"), {}, TypeError, "samples_per_class"),
        ((Y2, 4, 2), {"outer_label": 2}, ValueError, "outer_label"),
        ((Y2, 5, 1), {}, ValueError, "batch_size"),
        ((Y2, 4, 2), {"super_classes_per_batch": 3}, ValueError, "super"),
    ],
)
def test_hierarchical_bad_arguments(args, kwargs, exc, word):
    with pytest.raises(exc, match=word):
        HierarchicalSampler(*args, **kwargs)


X = np.random.default_rng(0).standard_normal((12, 3)).astype(np.float32)


@pytest.mark.parametrize(
    "model,miner,exc,word",
    [
        (lambda a: a * np.nan, miners.MultiSimilarityMiner(), ValueError, "model"),
        (lambda a: a[:, 0], miners.MultiSimilarityMiner(), ValueError, "model"),
        (lambda a: "x", miners.MultiSimilarityMiner(), TypeError, "model"),
        (
            lambda a: a,
            lambda e, lab: (np.array([99]), np.array([0]), np.array([1])),
            ValueError,
            "miner output",
        ),
        (
            lambda a: a,
            lambda e, lab: (np.array([1.0]), np.array([0.0]), np.array([2.0])),
            TypeError,
            "miner output",
        ),
        (lambda a: a, lambda e, lab: (np.array([1]), np.array([0])), ValueError, "miner output"),
    ],
)
def test_tuples_to_weights_bad_model_or_miner_output(model, miner, exc, word):
    s = TuplesToWeightsSampler(model, miner, (X, Y), 6)
    with pytest.raises(exc, match=word):
        list(s)


def test_tuples_to_weights_valid_edges():
    # a miner returning nothing: uniform over the subset, zero outside
    s = TuplesToWeightsSampler(
        lambda a: a, lambda e, lab: tuple(np.zeros(0, np.int64) for _ in range(3)), (X, Y), 6, seed=1
    )
    batch = np.concatenate(list(s))
    assert set(batch) <= set(s.subset_indices.tolist())
    assert (s.weights[s.subset_indices] == 1).all() and s.weights.sum() == 6
    for bad, exc in (
        ({"subset_size": 0}, ValueError),
        ({"subset_size": 13}, ValueError),
        ({"batch_size": 0}, ValueError),
        ({"embed_batch_size": 0}, ValueError),
    ):
        with pytest.raises(exc, match=next(iter(bad))):
            TuplesToWeightsSampler(lambda a: a, miners.MultiSimilarityMiner(), (X, Y), **bad)
