"""HierarchicalSampler: batches mixing the classes of a few super-classes."""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Iterator
from typing import Any

import numpy as np

from .._typing import ArrayLike, Int64Array, Seed
from .._validation import as_generator, check_int
from ._common import safe_random_choice


class HierarchicalSampler:
    """Batches that mix the classes of ``super_classes_per_batch`` super-classes.

    pytorch-metric-learning's sampler. ``labels`` is (N, L): column ``inner_label`` holds the class, ``outer_label`` the
    super-class. For every combination of ``super_classes_per_batch`` super-classes
    (``itertools.combinations`` of the sorted values) ``batches_per_super_tuple`` batches are
    built, each with ``batch_size // super_classes_per_batch`` slots per super-class, filled by
    visiting its classes in random order and adding ``samples_per_class`` rows of each
    (``"all"``: the whole class) while they fit. Batches and their order are shuffled, and a
    batch may be shorter than ``batch_size``. Every iteration rebuilds them (PML's ``reshuffle``).

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

    def __init__(
        self,
        labels: ArrayLike,
        batch_size: int,
        samples_per_class: int | str,
        batches_per_super_tuple: int = 4,
        super_classes_per_batch: int = 2,
        inner_label: int = 0,
        outer_label: int = 1,
        seed: Seed = 0,
    ) -> None:
        lab = np.asarray(labels)
        if lab.dtype.kind not in "iu":
            raise TypeError(f"labels must have an integer dtype, got {lab.dtype}")
        if lab.ndim != 2:
            raise ValueError(f"labels must be 2-D (N, levels), got shape {lab.shape}")
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        self.batches_per_super_tuple = check_int(
            batches_per_super_tuple, "batches_per_super_tuple", minimum=1
        )
        self.super_classes_per_batch = check_int(
            super_classes_per_batch, "super_classes_per_batch", minimum=1
        )
        inner = check_int(inner_label, "inner_label", minimum=0)
        outer = check_int(outer_label, "outer_label", minimum=0)
        for v, nm in ((inner, "inner_label"), (outer, "outer_label")):
            if v >= lab.shape[1]:
                raise ValueError(f"{nm} ({v}) must index a column of labels (shape {lab.shape})")
        if self.batch_size % self.super_classes_per_batch != 0:
            raise ValueError(
                f"batch_size ({self.batch_size}) must be a multiple of "
                f"super_classes_per_batch ({self.super_classes_per_batch})"
            )
        self.sub_batch_len = self.batch_size // self.super_classes_per_batch
        if isinstance(samples_per_class, str):
            if samples_per_class != "all":
                raise TypeError(f'samples_per_class must be an int or "all", got {samples_per_class!r}')
        else:
            if isinstance(samples_per_class, bool) or not isinstance(samples_per_class, numbers.Integral):
                raise TypeError(
                    f'samples_per_class must be an int or "all", got {type(samples_per_class).__name__}'
                )
            samples_per_class = check_int(samples_per_class, "samples_per_class", minimum=1)
            if self.sub_batch_len % samples_per_class != 0:
                raise ValueError(
                    f"batch_size // super_classes_per_batch ({self.sub_batch_len}) must be a "
                    f"multiple of samples_per_class ({samples_per_class})"
                )
        self.samples_per_class: Any = samples_per_class
        self.super_image_lists: dict[Any, Any] = {}
        for idx, (slb, lb) in enumerate(zip(lab[:, outer].tolist(), lab[:, inner].tolist())):
            self.super_image_lists.setdefault(slb, {}).setdefault(lb, []).append(idx)
        self.super_image_lists = {
            k: {c: np.array(v, dtype=np.int64) for c, v in d.items()}
            for k, d in self.super_image_lists.items()
        }
        supers = sorted(self.super_image_lists)
        if len(supers) < self.super_classes_per_batch:
            raise ValueError(
                f"labels have {len(supers)} super-classes, fewer than "
                f"super_classes_per_batch={self.super_classes_per_batch}"
            )
        self.super_pairs = list(itertools.combinations(supers, self.super_classes_per_batch))
        self.rng = as_generator(seed)
        self.reshuffle()

    def reshuffle(self) -> None:
        """Rebuild ``self.batches`` (a list of int64 arrays) with fresh randomness."""
        batches = []
        for combo in self.super_pairs:
            for _ in range(self.batches_per_super_tuple):
                batch = []
                for slb in combo:
                    classes = self.super_image_lists[slb]
                    keys = list(classes)
                    order = self.rng.permutation(len(keys))
                    sub: list[Any] = []
                    for k in order:
                        if len(sub) >= self.sub_batch_len:
                            break
                        inst = classes[keys[k]]
                        spc = inst.shape[0] if self.samples_per_class == "all" else self.samples_per_class
                        if len(sub) + spc > self.sub_batch_len:
                            continue
                        sub.extend(safe_random_choice(self.rng, inst, spc).tolist())
                    batch.extend(sub)
                batches.append(self.rng.permutation(np.array(batch, dtype=np.int64)))
        perm = self.rng.permutation(len(batches))
        self.batches = [batches[i] for i in perm]

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self) -> Iterator[Int64Array]:
        self.reshuffle()
        yield from self.batches

    def __repr__(self) -> str:
        return (
            f"HierarchicalSampler(batch_size={self.batch_size}, samples_per_class={self.samples_per_class!r}, "
            f"batches_per_super_tuple={self.batches_per_super_tuple}, "
            f"super_classes_per_batch={self.super_classes_per_batch})"
        )
