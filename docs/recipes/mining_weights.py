"""Recipe: sample a dataset by how often a miner picks each row (``python -m docs.recipes.mining_weights``).

1. Draw a subset of unique dataset rows and embed it in caller code (any model; here a
   small ``Sequential``).
2. Mine the subset's embeddings (``PairMarginMiner``): the index tuple refers to *subset*
   positions.
3. Turn the tuple into per-row weights with ``utils.convert_to_weights`` (occurrences / the
   largest count), then scatter them to the full dataset: subset position ``k`` is dataset
   row ``subset_indices[k]``; every row outside the subset gets weight 0. ``convert_to_weights``
   is not used for an empty tuple (it has nothing to count): ``None`` is passed instead, which
   gives weight 1 to every subset row, i.e. uniform sampling within the subset.
4. Draw batches with replacement from those weights (``samplers.WeightedSampler``, the numpy
   counterpart of ``torch.utils.data.WeightedRandomSampler``) with a local seeded generator.
   A zero-weight row is never drawn; nothing guarantees that every positive-weight row is.

``samplers.TuplesToWeightsSampler`` packages steps 1-4; this recipe spells them out so the
caller controls the model call and the mapping.
"""

from __future__ import annotations

import numpy as np

from mantissa_embed import utils
from mantissa_embed.layers import Dense, Sequential
from mantissa_embed.miners import PairMarginMiner
from mantissa_embed.samplers import WeightedSampler

N_CLASSES, PER_CLASS, N_FEATURES = 4, 10, 6
SUBSET_SIZE = 16
NUM_BATCHES, BATCH_SIZE = 4, 8


def make_data(seed=0):
    """(X (40, 6) float32, y (40,) int64)."""
    rng = np.random.default_rng(seed)
    protos = rng.standard_normal((N_CLASSES, N_FEATURES))
    y = np.repeat(np.arange(N_CLASSES), PER_CLASS)
    X = protos[y] + 0.8 * rng.standard_normal((len(y), N_FEATURES))
    return X.astype(np.float32), y.astype(np.int64)


def dataset_weights(indices_tuple, subset_indices, subset_labels, dataset_size):
    """Full-dataset sampling weights (dataset_size,) float32 from a tuple mined on a subset.

    ``indices_tuple`` indexes the subset (``None`` or an empty tuple: uniform over the subset);
    ``subset_indices`` are the subset's unique dataset rows, aligned with ``subset_labels`` and
    with the mined embeddings. Rows outside the subset get 0.

    Raises ValueError for duplicate or out-of-range subset indices, misaligned labels, or a
    tuple index outside the subset.
    """
    sub = np.asarray(subset_indices)
    if sub.dtype.kind not in "iu" or sub.ndim != 1:
        raise ValueError("subset_indices must be a 1-D integer array")
    lab = np.asarray(subset_labels)
    if lab.shape != sub.shape:
        raise ValueError(f"subset_labels must align with subset_indices: shapes {lab.shape} and {sub.shape}")
    if len(np.unique(sub)) != len(sub):
        raise ValueError("subset_indices must be unique dataset indices")
    if len(sub) and (sub.min() < 0 or sub.max() >= dataset_size):
        raise ValueError(f"subset_indices must be in [0, {dataset_size})")
    empty = indices_tuple is None or all(len(t) == 0 for t in indices_tuple)
    if not empty:
        indices_tuple = utils.check_indices_tuple(indices_tuple, len(sub))
    w_sub = utils.convert_to_weights(None if empty else indices_tuple, lab)
    weights = np.zeros(dataset_size, dtype=np.float32)
    weights[sub] = w_sub
    return weights


def sample_batches(weights, seed=0, num_batches=NUM_BATCHES, batch_size=BATCH_SIZE):
    """``num_batches`` int64 index batches drawn with replacement from ``weights``."""
    sampler = WeightedSampler(
        weights,
        num_batches * batch_size,
        replacement=True,
        generator=np.random.default_rng(seed),
        batch_size=batch_size,
    )
    return list(sampler)


def run(seed=0):
    X, y = make_data(seed)
    rng = np.random.default_rng(seed)
    subset = rng.choice(len(X), size=SUBSET_SIZE, replace=False)
    model = Sequential([Dense(16, act="relu"), Dense(4)], seed=seed)
    emb = model(X[subset])  # caller code: any model, any mode
    tup = PairMarginMiner(pos_margin=0.2, neg_margin=0.8)(emb, y[subset])
    weights = dataset_weights(tup, subset, y[subset], len(X))
    batches = sample_batches(weights, seed=seed)
    return dict(
        subset=subset, tuple=tup, weights=weights, batches=batches, batch_labels=[y[b] for b in batches]
    )


def main(seed=0, verbose=True):
    r = run(seed)
    if verbose:
        print(
            f"subset of {SUBSET_SIZE} rows, mined {len(r['tuple'][0])} positive and "
            f"{len(r['tuple'][2])} negative pairs; {(r['weights'] > 0).sum()} rows with weight > 0"
        )
        for i, lab in enumerate(r["batch_labels"]):
            print(f"batch {i}: labels {lab.tolist()}")
    return r


if __name__ == "__main__":
    main()
