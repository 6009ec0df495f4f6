"""The ``Embedder``: train a trunk by metric learning, then embed, retrieve and verify.

The public names are ``Embedder`` and the recipe it defaults to (``DEFAULTS``,
``FACE_PRESET``). The private modules hold one concept each; docs/architecture.md ("Layers of
the stack") says which.
"""

from ._embedder import Embedder
from ._recipe import DEFAULTS, FACE_PRESET

__all__ = ["Embedder", "DEFAULTS", "FACE_PRESET"]
