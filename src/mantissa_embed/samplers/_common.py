"""Index-batch helpers shared by the samplers."""

from __future__ import annotations


def safe_random_choice(rng, values, size):
    """``size`` draws from ``values``: without replacement when there are enough, else with
    replacement (PML's ``safe_random_choice``)."""
    return rng.choice(values, size=size, replace=len(values) < size)


def split_batches(indices, batch_size):
    """``indices`` cut into consecutive batches of ``batch_size`` (the last may be shorter);
    one batch when ``batch_size`` is None."""
    if batch_size is None:
        return [indices]
    return [indices[i : i + batch_size] for i in range(0, len(indices), batch_size)]
