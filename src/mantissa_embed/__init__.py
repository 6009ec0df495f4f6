"""mantissa-embed: CPU-native metric learning.

A vendored C engine (``mantissa_embed.engine``, typed Cython wrappers, GIL released) does the
numeric work; thin Python classes hold the layers, losses, miners and the ``Embedder``.
Names and defaults follow pytorch-metric-learning. Main entry points::

    from mantissa_embed import Embedder, models, datasets
    emb = Embedder(models.small_cnn_embedder(embed_dim=16), loss="triplet")

Subpackages (imported on first access): ``layers``, ``models``, ``optim``, ``losses``,
``miners``, ``distances``, ``reducers``, ``samplers``, ``datasets``, ``evaluation``, ``viz``,
``engine``, ``backend``, ``utils``. The demo: ``python -m mantissa_embed demo``.

Threads: the engine uses every processor available to the process by default;
``MANTISSA_EMBED_NUM_THREADS`` (an integer from 1 to 4096, read once, at the engine's first use;
any other value gives a RuntimeWarning naming it and is ignored) or ``set_num_threads`` change it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what the lazy attributes below are, for type checkers and editors
    # (`name as name`: the explicit re-export form, so linters read them as the public names)
    from . import (
        backend as backend,
        datasets as datasets,
        distances as distances,
        embedder as embedder,
        engine as engine,
        evaluation as evaluation,
        layers as layers,
        losses as losses,
        miners as miners,
        models as models,
        optim as optim,
        parameter as parameter,
        reducers as reducers,
        samplers as samplers,
        testing as testing,
        transforms as transforms,
        utils as utils,
        viz as viz,
    )
    from .embedder import Embedder
    from .engine import get_num_threads, set_num_threads
    from .layers import Sequential
    from .parameter import Parameter
    from .samplers import MPerClassSampler

__version__ = "0.1.0"

_SUBMODULES = (
    "layers",
    "models",
    "optim",
    "losses",
    "miners",
    "distances",
    "reducers",
    "samplers",
    "datasets",
    "evaluation",
    "viz",
    "engine",
    "backend",
    "utils",
    "parameter",
    "embedder",
    "testing",
    "transforms",
)
_ATTRS = {
    "Embedder": "embedder",
    "MPerClassSampler": "samplers",
    "Sequential": "layers",
    "Parameter": "parameter",
    "set_num_threads": "engine",
    "get_num_threads": "engine",
}

__all__ = [
    "Embedder",
    "MPerClassSampler",
    "Sequential",
    "Parameter",
    "set_num_threads",
    "get_num_threads",
    "__version__",
    *_SUBMODULES,
]


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    if name in _ATTRS:
        return getattr(importlib.import_module(f".{_ATTRS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
