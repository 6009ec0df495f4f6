"""The ``Embedder``: train a trunk by metric learning, then embed, retrieve and verify.

The public names are ``Embedder`` and the recipe it defaults to (``DEFAULTS``,
``FACE_PRESET``). The modules of the package, one concept each:

- ``_embedder``: the ``Embedder`` class (construction, ``fit``, ``save`` / ``load``, ``summary``);
- ``_recipe``: ``DEFAULTS`` and the factories of the loss, miner, optimizer, augmentation,
  schedule and the P x K batch layout;
- ``_fitting``: ``fit``'s plan (validation split, parameter groups, epoch ends, callbacks, early
  stopping, the checkpoint state ``resume=True`` continues);
- ``_training``: the batch loop over a batch source, its hooks and Ctrl-C deferral;
- ``_persistence``: the ``.npz`` file of ``save`` / ``load``;
- ``_inference_methods``: ``embed``, ``retrieve``, ``build_index``, ``verify``, ``calibrate``
  and ``evaluate``, mixed into ``Embedder``, over ``_inference`` (their bodies),
  ``_calibration`` (the pair draw and threshold rules) and ``_exact_knn`` (the exact search);
- ``_threads``: the engine's thread count while ``fit`` / ``embed`` run.
"""
from ._embedder import Embedder
from ._recipe import DEFAULTS, FACE_PRESET

__all__ = ["Embedder", "DEFAULTS", "FACE_PRESET"]
