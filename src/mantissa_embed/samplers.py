"""Batch samplers for metric learning (pytorch-metric-learning's ``samplers``, numpy-seeded).

The library has no ``torch.utils.data.DataLoader``, so every sampler here is an iterable of
*index batches*: iterating yields 1-D int64 arrays of dataset indices, one per batch, drawn
from a ``numpy.random.Generator`` (``seed`` / ``generator``: an int, a Generator, or None for
fresh entropy). Nothing touches numpy's global RNG. ``len(sampler)`` is the number of batches
one iteration yields.

- :class:`MPerClassSampler`: ``m`` samples of each of ``batch_size // m`` classes per batch.
- :class:`WeightedSampler`: indices drawn with probabilities proportional to ``weights``
  (the numpy counterpart of ``torch.utils.data.WeightedRandomSampler``).
- :class:`TuplesToWeightsSampler`: embeds a (sub)set of the data with a model, mines it, and
  samples proportionally to how often each row appears in the mined tuples.
- :class:`FixedSetOfTriplets`: a fixed set of random ``(anchor, positive, negative)`` triplets.
- :class:`HierarchicalSampler`: batches made of classes from pairs (tuples) of super-classes.
"""
from __future__ import annotations

import itertools
import math
import numbers

import numpy as np

from ._validation import as_generator, check_array, check_int, check_labels

__all__ = ["MPerClassSampler", "WeightedSampler", "TuplesToWeightsSampler", "FixedSetOfTriplets",
           "HierarchicalSampler"]


def _safe_random_choice(rng, values, size):
    """``size`` draws from ``values``: without replacement when there are enough, else with
    replacement (PML's ``safe_random_choice``)."""
    return rng.choice(values, size=size, replace=len(values) < size)


def _split_batches(indices, batch_size):
    if batch_size is None:
        return [indices]
    return [indices[i:i + batch_size] for i in range(0, len(indices), batch_size)]


class MPerClassSampler:
    """Class-balanced batches: ``m`` samples from each of ``batch_size // m`` classes.

    pytorch-metric-learning's ``samplers.MPerClassSampler`` with the same constructor
    arguments, defaults, validation and sampling semantics. Each batch picks a fresh random
    set of ``batch_size // m`` distinct classes (PML shuffles its list of classes in place and
    takes the first ``batch_size // m``) and draws ``m`` indices from each class: without
    replacement when the class has at least ``m`` samples, with replacement otherwise
    (PML's ``safe_random_choice``). Every batch therefore contains positives (when ``m >= 2``)
    and, with at least two classes per batch, negatives.

    Differences from PML, all due to the absence of a DataLoader:

    * iterating yields int64 index arrays of length ``batch_size`` (one per batch) instead of
      single indices; ``len(sampler)`` is the number of batches per iteration, and
      ``sampler.list_size`` is PML's ``len()`` (the number of indices per iteration);
    * randomness comes from a ``numpy.random.Generator`` (``seed``), never from a global RNG;
      successive iterations continue the same stream, so they differ (as PML's epochs do).

    Parameters
    ----------
    labels : array_like of int, shape (N,)
        The class of every sample; indices into this array are what the batches contain.
    m : int
        Samples per class in each batch (``m >= 1``).
    batch_size : int or None, default None
        Batch length. ``None``: every batch contains ``m`` samples of *every* class (one
        "single pass", ``m * num_classes`` indices), as in PML.
    length_before_new_iter : int, default 100000
        Indices per iteration (PML's ``length_before_new_iter``); rounded down to a multiple
        of the batch length, as in PML.
    seed : int, numpy.random.Generator or None, default 0
        Randomness source.

    Raises
    ------
    TypeError
        ``labels`` not integer; ``m``, ``batch_size`` or ``length_before_new_iter`` not int.
    ValueError
        ``labels`` empty or not 1-D; ``m < 1``; ``batch_size`` not a multiple of ``m``
        (PML: "m_per_class must divide batch_size without any remainder");
        ``m * num_classes < batch_size`` (PML: "m * (number of unique labels) must be >=
        batch_size"); ``length_before_new_iter < batch_size``.

    Source
    ------
    pytorch-metric-learning ``samplers/m_per_class_sampler.py`` (Musgrave et al., 2020).
    """

    def __init__(self, labels, m, batch_size=None, length_before_new_iter=100000, seed=0):
        if labels is not None and np.size(labels) == 0:
            raise ValueError("labels must not be empty")
        labels = check_labels(labels, "labels")
        if labels.shape[0] == 0:
            raise ValueError("labels must not be empty")
        self.m_per_class = check_int(m, "m", minimum=1)
        self.batch_size = None if batch_size is None else check_int(batch_size, "batch_size", minimum=1)
        self.rng = as_generator(seed)
        # labels -> indices, classes in order of first appearance (as PML's defaultdict)
        uniq, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        sort_idx = np.argsort(inverse, kind="stable")
        counts = np.bincount(inverse, minlength=uniq.shape[0])
        groups = np.split(sort_idx.astype(np.int64), np.cumsum(counts)[:-1])
        self.labels = [int(uniq[c]) for c in order]
        self.labels_to_indices = {int(uniq[c]): groups[c] for c in order}
        self.length_of_single_pass = self.m_per_class * len(self.labels)
        list_size = check_int(length_before_new_iter, "length_before_new_iter", minimum=1)
        if self.batch_size is None:
            if self.length_of_single_pass < list_size:
                list_size -= list_size % self.length_of_single_pass
        else:
            if list_size < self.batch_size:
                raise ValueError(
                    f"length_before_new_iter ({list_size}) must be >= batch_size ({self.batch_size})")
            if self.length_of_single_pass < self.batch_size:
                raise ValueError(
                    f"m * (number of unique labels) must be >= batch_size: m={self.m_per_class}, "
                    f"{len(self.labels)} classes, batch_size={self.batch_size}")
            if self.batch_size % self.m_per_class != 0:
                raise ValueError(
                    f"m_per_class must divide batch_size without any remainder: "
                    f"m={self.m_per_class}, batch_size={self.batch_size}")
            list_size -= list_size % self.batch_size
        self.list_size = list_size

    @property
    def _batch_len(self):
        return self.length_of_single_pass if self.batch_size is None else self.batch_size

    def calculate_num_iters(self):
        """Number of batches per iteration (PML's ``calculate_num_iters``)."""
        divisor = self._batch_len
        return self.list_size // divisor if divisor < self.list_size else 1

    def __len__(self):
        return self.calculate_num_iters()

    def _draw(self, label):
        idx = self.labels_to_indices[label]
        replace = idx.shape[0] < self.m_per_class
        return self.rng.choice(idx, size=self.m_per_class, replace=replace)

    def next_batch(self):
        """Draw one batch: an int64 array of ``batch_size`` (or ``m * num_classes``) indices."""
        labels = self.labels
        # in-place shuffle of the persistent class list, as PML does
        perm = self.rng.permutation(len(labels))
        self.labels = labels = [labels[i] for i in perm]
        chosen = labels if self.batch_size is None else labels[: self.batch_size // self.m_per_class]
        return np.concatenate([self._draw(c) for c in chosen]).astype(np.int64, copy=False)

    def __iter__(self):
        for _ in range(self.calculate_num_iters()):
            yield self.next_batch()

    def indices(self):
        """One iteration flattened: PML's index list (int64, length ``list_size`` or less)."""
        batches = list(self)
        return np.concatenate(batches) if batches else np.empty(0, np.int64)

    def __repr__(self):
        return (f"MPerClassSampler(m={self.m_per_class}, batch_size={self.batch_size}, "
                f"length_before_new_iter={self.list_size}, num_classes={len(self.labels)})")


class WeightedSampler:
    """Indices drawn with probability proportional to ``weights``.

    ``WeightedSampler(weights, num_samples, replacement=True, generator=None, *, batch_size=None)``:
    the numpy counterpart of ``torch.utils.data.WeightedRandomSampler`` (same arguments and
    meaning; ``generator`` is a ``numpy.random.Generator`` or an int seed). Each iteration draws
    ``num_samples`` indices in ``[0, len(weights))``: independently with replacement, or (with
    ``replacement=False``) one after another without replacement, each proportionally to the
    weights of the indices not drawn yet (torch's ``multinomial``). An index whose weight is 0
    is never drawn. The draw is yielded as int64 batches of ``batch_size`` indices (the last
    one may be shorter), or as a single batch of ``num_samples`` indices when ``batch_size`` is
    None. Successive iterations continue the generator's stream.

    Sampling with replacement gives no coverage guarantee: some rows may never be drawn in an
    iteration and others several times.

    Parameters
    ----------
    weights : (N,) array_like of float
        Non-negative, finite, not all zero (need not sum to 1).
    num_samples : int >= 1
        Indices per iteration.
    replacement : bool, default True
    generator : numpy.random.Generator, int or None, default None
        None: fresh entropy (torch's default draws from its global RNG; we never do).
    batch_size : int >= 1 or None, keyword-only, default None

    Raises
    ------
    TypeError
        Non-numeric weights; ``num_samples`` / ``batch_size`` not an int; ``replacement`` not a bool.
    ValueError
        ``weights`` not 1-D, empty, negative, NaN/Inf or all zero; ``num_samples < 1``;
        ``replacement=False`` with more samples than positive weights.

    Source: ``torch.utils.data.WeightedRandomSampler`` (PyTorch).
    """

    def __init__(self, weights, num_samples, replacement=True, generator=None, *, batch_size=None):
        w = check_array(weights, "weights", ndim=1, dtype=np.float64)
        if w.shape[0] == 0:
            raise ValueError("weights must not be empty")
        if (w < 0).any():
            raise ValueError("weights must be non-negative")
        if not isinstance(replacement, (bool, np.bool_)):
            raise TypeError(f"replacement must be a bool, got {type(replacement).__name__}")
        self.num_samples = check_int(num_samples, "num_samples", minimum=1)
        self.batch_size = None if batch_size is None else check_int(batch_size, "batch_size", minimum=1)
        self.replacement = bool(replacement)
        self.weights = w
        self.support = np.flatnonzero(w > 0).astype(np.int64)
        if self.support.shape[0] == 0:
            raise ValueError("weights must have at least one positive entry")
        if not self.replacement and self.num_samples > self.support.shape[0]:
            raise ValueError(f"num_samples ({self.num_samples}) must be <= the number of positive weights "
                             f"({self.support.shape[0]}) when replacement=False")
        p = w[self.support]
        p = p / p.max()  # first bring the weights to (0, 1]: their sum cannot overflow
        self._p = p / p.sum()
        self.generator = as_generator(generator, "generator")

    def __len__(self):
        return 1 if self.batch_size is None else math.ceil(self.num_samples / self.batch_size)

    def indices(self):
        """One draw of ``num_samples`` indices (int64), not split into batches."""
        k = self._draw()
        return self.support[k]

    def _draw(self):
        return self.generator.choice(self.support.shape[0], size=self.num_samples,
                                     replace=self.replacement, p=self._p)

    def __iter__(self):
        yield from _split_batches(self.indices(), self.batch_size)

    def __repr__(self):
        return (f"WeightedSampler(num_samples={self.num_samples}, replacement={self.replacement}, "
                f"batch_size={self.batch_size}, n={self.weights.shape[0]})")


class TuplesToWeightsSampler:
    """Sample the rows that a miner finds hard, proportionally to how often it picks them.

    ``TuplesToWeightsSampler(model, miner, dataset, subset_size=None, *, batch_size=None, seed=0,
    embed_batch_size=256)`` (pytorch-metric-learning's sampler; PML's ``tester_kwargs`` become
    ``embed_batch_size``). At each iteration:

    1. ``subset_size`` distinct rows of the dataset are drawn uniformly (all rows when None);
    2. they are embedded with ``model`` in chunks of ``embed_batch_size`` and mined:
       ``miner(embeddings, subset_labels)``;
    3. each subset row gets the weight ``count / max count`` of its occurrences in the mined
       tuple (:func:`mantissa_embed.utils.convert_to_weights`); an empty tuple gives every
       subset row weight 1 (uniform over the subset); rows outside the subset get weight 0.
       The full-dataset weights are kept in ``self.weights`` ((N,) float32) and the subset in
       ``self.subset_indices``;
    4. ``len(subset)`` indices are drawn with replacement from those weights
       (:class:`WeightedSampler`) and yielded in batches of ``batch_size`` (None: one batch).

    The model is only called (``model(X_chunk) -> (n, D)``): its mode and parameters are the
    caller's business.

    Parameters
    ----------
    model : callable
        ``(n, ...) float32 -> (n, D)`` embeddings (a ``Sequential``, a function ...).
    miner : callable
        A miner: ``miner(embeddings, labels) -> index tuple``.
    dataset : tuple (X, labels)
        ``X`` (N, ...) float array, ``labels`` (N,) integer array.
    subset_size : int >= 1 or None, default None
        Rows embedded per iteration (at most N).
    batch_size : int >= 1 or None, keyword-only, default None
    seed : int, numpy.random.Generator or None, keyword-only, default 0
    embed_batch_size : int >= 1, keyword-only, default 256

    Raises
    ------
    TypeError
        ``model`` / ``miner`` not callable; ``dataset`` not an ``(X, labels)`` pair; bad types.
    ValueError
        Empty dataset, labels of the wrong length, ``subset_size`` > N; a model output that is
        not (n, D) or not finite; a miner output that is not a valid index tuple of the subset.

    Source: pytorch-metric-learning ``samplers/tuples_to_weights_sampler.py``.
    """

    def __init__(self, model, miner, dataset, subset_size=None, *, batch_size=None, seed=0,
                 embed_batch_size=256):
        if not callable(model):
            raise TypeError(f"model must be callable (X -> embeddings), got {type(model).__name__}")
        if not callable(miner):
            raise TypeError(f"miner must be callable (a miner), got {type(miner).__name__}")
        if not isinstance(dataset, (tuple, list)) or len(dataset) != 2:
            raise TypeError("dataset must be a pair (X, labels)")
        X = check_array(dataset[0], "dataset[0] (X)")
        if X.ndim < 2 or X.shape[0] == 0:
            raise ValueError(f"dataset[0] (X) must have shape (N, ...) with N >= 1, got {X.shape}")
        y = check_labels(dataset[1], "dataset[1] (labels)", n=X.shape[0])
        self.model, self.miner, self.X, self.labels = model, miner, X, y
        n = X.shape[0]
        self.subset_size = None if subset_size is None else check_int(subset_size, "subset_size", minimum=1)
        if self.subset_size is not None and self.subset_size > n:
            raise ValueError(f"subset_size ({self.subset_size}) must be <= the dataset size ({n})")
        self.batch_size = None if batch_size is None else check_int(batch_size, "batch_size", minimum=1)
        self.embed_batch_size = check_int(embed_batch_size, "embed_batch_size", minimum=1)
        self.rng = as_generator(seed)
        self.weights = None
        self.subset_indices = None

    @property
    def num_samples(self):
        """Indices per iteration (PML's ``len``): ``subset_size`` or N."""
        return self.subset_size or self.X.shape[0]

    def __len__(self):
        return 1 if self.batch_size is None else math.ceil(self.num_samples / self.batch_size)

    def _embed(self, X):
        outs = []
        for i in range(0, X.shape[0], self.embed_batch_size):
            e = check_array(self.model(X[i:i + self.embed_batch_size]), "model(X) (the embeddings)",
                            finite=False)
            if e.ndim != 2 or e.shape[0] != min(self.embed_batch_size, X.shape[0] - i):
                raise ValueError(f"model must return (n, D) embeddings, got shape {e.shape}")
            if not np.isfinite(e).all():
                raise ValueError("model returned NaN or Inf embeddings")
            outs.append(e.copy())
        return np.concatenate(outs)

    def compute_weights(self):
        """Steps 1-3: draw the subset, embed, mine; set and return ``self.weights`` (N,)."""
        from . import utils

        n = self.X.shape[0]
        if self.subset_size is None:
            idx = np.arange(n, dtype=np.int64)
        else:
            idx = self.rng.choice(n, size=self.subset_size, replace=False).astype(np.int64)
        emb = self._embed(self.X[idx])
        lab = self.labels[idx]
        tuples = self.miner(emb, lab)
        if tuples is not None:
            tuples = utils.check_indices_tuple(tuples, len(idx), len(idx), name="miner output")
        empty = tuples is None or all(len(t) == 0 for t in tuples)
        w_sub = np.asarray(utils.convert_to_weights(None if empty else tuples, lab), dtype=np.float32)
        if empty:
            w_sub = np.ones(len(idx), dtype=np.float32)  # uniform within the subset
        weights = np.zeros(n, dtype=np.float32)
        weights[idx] = w_sub
        self.weights, self.subset_indices = weights, idx
        return weights

    def __iter__(self):
        weights = self.compute_weights()
        yield from WeightedSampler(weights, self.num_samples, replacement=True, generator=self.rng,
                                   batch_size=self.batch_size)

    def __repr__(self):
        return (f"TuplesToWeightsSampler(miner={self.miner!r}, subset_size={self.subset_size}, "
                f"batch_size={self.batch_size})")


class FixedSetOfTriplets:
    """A fixed set of random triplets, drawn once, served in a new order each iteration.

    ``FixedSetOfTriplets(labels, num_triplets, seed=0, *, triplets_per_batch=1)``
    (pytorch-metric-learning's sampler). At construction, each triplet picks two distinct
    classes uniformly (the anchor's and the negative's), an anchor and a positive from the
    anchor's class (two distinct rows when the class has two or more, else the same row twice)
    and a negative from the other class. ``fixed_set_of_triplets`` is the (num_triplets, 3)
    int64 array of ``(anchor, positive, negative)`` rows. Each iteration shuffles those rows
    (in place, as PML) and yields batches of ``triplets_per_batch`` triplets flattened as
    ``a0, p0, n0, a1, p1, n1, ...`` (3 * triplets_per_batch indices; the last batch may be
    shorter), the layout :class:`~mantissa_embed.miners.EmbeddingsAlreadyPackagedAsTriplets`
    expects. Useful to study training when the only supervision is a set of triplets.

    Raises
    ------
    TypeError
        Non-integer labels; ``num_triplets`` / ``triplets_per_batch`` not an int.
    ValueError
        ``labels`` not 1-D or with fewer than 2 distinct classes; ``num_triplets < 1``.

    Source: pytorch-metric-learning ``samplers/fixed_set_of_triplets.py``.
    """

    def __init__(self, labels, num_triplets, seed=0, *, triplets_per_batch=1):
        if labels is not None and np.size(labels) == 0:
            raise ValueError("labels must not be empty (at least 2 distinct classes are needed)")
        labels = check_labels(labels, "labels")
        self.num_triplets = check_int(num_triplets, "num_triplets", minimum=1)
        self.triplets_per_batch = check_int(triplets_per_batch, "triplets_per_batch", minimum=1)
        uniq, first = np.unique(labels, return_index=True)
        if uniq.shape[0] < 2:
            raise ValueError(f"labels must contain at least 2 distinct classes, got {uniq.shape[0]}")
        order = np.argsort(first, kind="stable")
        self.labels_to_indices = {int(uniq[c]): np.flatnonzero(labels == uniq[c]).astype(np.int64)
                                  for c in order}
        self.rng = as_generator(seed)
        self.create_fixed_set_of_triplets()

    def create_fixed_set_of_triplets(self):
        """Draw ``fixed_set_of_triplets`` ((num_triplets, 3) int64) from the generator."""
        label_list = np.array(list(self.labels_to_indices), dtype=np.int64)
        out = np.empty((self.num_triplets, 3), dtype=np.int64)
        for i in range(self.num_triplets):
            la, ln = self.rng.choice(label_list, size=2, replace=False)
            a, p = _safe_random_choice(self.rng, self.labels_to_indices[int(la)], 2)
            n = self.rng.choice(self.labels_to_indices[int(ln)])
            out[i] = (a, p, n)
        self.fixed_set_of_triplets = out

    def __len__(self):
        return math.ceil(self.num_triplets / self.triplets_per_batch)

    def indices(self):
        """Shuffle the triplets and return them flattened (PML's iteration, 3 * num_triplets)."""
        self.rng.shuffle(self.fixed_set_of_triplets, axis=0)
        return self.fixed_set_of_triplets.reshape(-1).copy()

    def __iter__(self):
        yield from _split_batches(self.indices(), 3 * self.triplets_per_batch)

    def __repr__(self):
        return (f"FixedSetOfTriplets(num_triplets={self.num_triplets}, "
                f"triplets_per_batch={self.triplets_per_batch}, num_classes={len(self.labels_to_indices)})")


class HierarchicalSampler:
    """Batches that mix classes of ``super_classes_per_batch`` super-classes.

    ``HierarchicalSampler(labels, batch_size, samples_per_class, batches_per_super_tuple=4,
    super_classes_per_batch=2, inner_label=0, outer_label=1, seed=0)``
    (pytorch-metric-learning's sampler, from Ermolov / Brown et al.'s hierarchical batches).
    ``labels`` is (N, L): column ``inner_label`` holds the class, column ``outer_label`` the
    super-class. For every combination of ``super_classes_per_batch`` distinct super-classes
    (``itertools.combinations`` over the sorted super-class values), ``batches_per_super_tuple``
    batches are built. Each batch has one sub-batch of ``batch_size // super_classes_per_batch``
    slots per super-class of the combination, filled by visiting that super-class's classes in
    a random order and adding ``samples_per_class`` rows of each (without replacement when the
    class is big enough; ``"all"``: every row of the class) whenever they fit; then the batch
    is shuffled, and so is the list of batches. A batch may be shorter than ``batch_size`` when
    the classes do not fill the slots exactly. ``len()`` is the number of batches; every
    iteration rebuilds them with fresh randomness (as PML's ``reshuffle``).

    Raises
    ------
    TypeError
        Non-integer labels or sizes; ``samples_per_class`` neither an int nor ``"all"``.
    ValueError
        ``labels`` not 2-D or a label column out of range; ``batch_size`` not a multiple of
        ``super_classes_per_batch``; the sub-batch length not a multiple of
        ``samples_per_class``; fewer super-classes than ``super_classes_per_batch``.

    Source: pytorch-metric-learning ``samplers/hierarchical_sampler.py``.
    """

    def __init__(self, labels, batch_size, samples_per_class, batches_per_super_tuple=4,
                 super_classes_per_batch=2, inner_label=0, outer_label=1, seed=0):
        lab = np.asarray(labels)
        if lab.dtype.kind not in "iu":
            raise TypeError(f"labels must have an integer dtype, got {lab.dtype}")
        if lab.ndim != 2:
            raise ValueError(f"labels must be 2-D (N, levels), got shape {lab.shape}")
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        self.batches_per_super_tuple = check_int(batches_per_super_tuple, "batches_per_super_tuple", minimum=1)
        self.super_classes_per_batch = check_int(super_classes_per_batch, "super_classes_per_batch", minimum=1)
        inner = check_int(inner_label, "inner_label", minimum=0)
        outer = check_int(outer_label, "outer_label", minimum=0)
        for v, nm in ((inner, "inner_label"), (outer, "outer_label")):
            if v >= lab.shape[1]:
                raise ValueError(f"{nm} ({v}) must index a column of labels (shape {lab.shape})")
        if self.batch_size % self.super_classes_per_batch != 0:
            raise ValueError(f"batch_size ({self.batch_size}) must be a multiple of "
                             f"super_classes_per_batch ({self.super_classes_per_batch})")
        self.sub_batch_len = self.batch_size // self.super_classes_per_batch
        if isinstance(samples_per_class, str):
            if samples_per_class != "all":
                raise TypeError(f'samples_per_class must be an int or "all", got {samples_per_class!r}')
        else:
            if isinstance(samples_per_class, bool) or not isinstance(samples_per_class, numbers.Integral):
                raise TypeError(f'samples_per_class must be an int or "all", got {type(samples_per_class).__name__}')
            samples_per_class = check_int(samples_per_class, "samples_per_class", minimum=1)
            if self.sub_batch_len % samples_per_class != 0:
                raise ValueError(f"batch_size // super_classes_per_batch ({self.sub_batch_len}) must be a "
                                 f"multiple of samples_per_class ({samples_per_class})")
        self.samples_per_class = samples_per_class
        self.super_image_lists = {}
        for idx, (slb, lb) in enumerate(zip(lab[:, outer].tolist(), lab[:, inner].tolist())):
            self.super_image_lists.setdefault(slb, {}).setdefault(lb, []).append(idx)
        self.super_image_lists = {k: {c: np.array(v, dtype=np.int64) for c, v in d.items()}
                                  for k, d in self.super_image_lists.items()}
        supers = sorted(self.super_image_lists)
        if len(supers) < self.super_classes_per_batch:
            raise ValueError(f"labels have {len(supers)} super-classes, fewer than "
                             f"super_classes_per_batch={self.super_classes_per_batch}")
        self.super_pairs = list(itertools.combinations(supers, self.super_classes_per_batch))
        self.rng = as_generator(seed)
        self.reshuffle()

    def reshuffle(self):
        """Rebuild ``self.batches`` (a list of int64 arrays) with fresh randomness."""
        batches = []
        for combo in self.super_pairs:
            for _ in range(self.batches_per_super_tuple):
                batch = []
                for slb in combo:
                    classes = self.super_image_lists[slb]
                    keys = list(classes)
                    order = self.rng.permutation(len(keys))
                    sub = []
                    for k in order:
                        if len(sub) >= self.sub_batch_len:
                            break
                        inst = classes[keys[k]]
                        spc = inst.shape[0] if self.samples_per_class == "all" else self.samples_per_class
                        if len(sub) + spc > self.sub_batch_len:
                            continue
                        sub.extend(_safe_random_choice(self.rng, inst, spc).tolist())
                    batch.extend(sub)
                batches.append(self.rng.permutation(np.array(batch, dtype=np.int64)))
        perm = self.rng.permutation(len(batches))
        self.batches = [batches[i] for i in perm]

    def __len__(self):
        return len(self.batches)

    def __iter__(self):
        self.reshuffle()
        yield from self.batches

    def __repr__(self):
        return (f"HierarchicalSampler(batch_size={self.batch_size}, samples_per_class={self.samples_per_class!r}, "
                f"batches_per_super_tuple={self.batches_per_super_tuple}, "
                f"super_classes_per_batch={self.super_classes_per_batch})")
