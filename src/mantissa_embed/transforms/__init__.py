"""Batched, seeded data augmentation for (N,C,H,W) float32 image batches.

Every transform is called as ``t(X, rng) -> X_aug`` with ``rng`` a ``numpy.random.Generator``
(the Embedder's, so training is reproducible); ``X_aug`` is a buffer the transform owns and
overwrites at its next call, ``X`` is never modified (``Transform``). Names and argument
semantics are torchvision's. ``get_config()`` / ``transform_from_config`` round-trip.

    from mantissa_embed import transforms as T
    aug = T.Compose([T.RandomAffine(12, translate=(0.09, 0.09), scale=(0.9, 1.1)),
                     T.RandomHorizontalFlip()])
    X_aug = aug(X, np.random.default_rng(0))
"""

from .base import TRANSFORM_TYPES, Compose, Transform, transform_from_config
from .random_affine import RandomAffine, affine_theta
from .random_crop import RandomCrop
from .random_horizontal_flip import RandomHorizontalFlip

__all__ = [
    "Transform",
    "Compose",
    "RandomAffine",
    "RandomCrop",
    "RandomHorizontalFlip",
    "affine_theta",
    "transform_from_config",
    "TRANSFORM_TYPES",
]
