"""Batch samplers (pytorch-metric-learning's ``samplers``), seeded by numpy.

There is no DataLoader: iterating a sampler yields 1-D int64 arrays of dataset indices, one per
batch, drawn from a ``numpy.random.Generator`` (``seed`` / ``generator``: an int, a Generator,
or None for fresh entropy); numpy's global RNG is never used. ``len(sampler)`` is the number
of batches one iteration yields.
"""

from .fixed_set_of_triplets import FixedSetOfTriplets
from .hierarchical_sampler import HierarchicalSampler
from .m_per_class_sampler import MPerClassSampler
from .tuples_to_weights_sampler import TuplesToWeightsSampler
from .weighted_sampler import WeightedSampler

__all__ = [
    "MPerClassSampler",
    "WeightedSampler",
    "TuplesToWeightsSampler",
    "FixedSetOfTriplets",
    "HierarchicalSampler",
]
