"""The Embedder's default recipe (:data:`DEFAULTS`) and the factories that turn its string
arguments into loss, miner and optimizer objects."""
from __future__ import annotations

import numbers

import numpy as np

from . import losses, miners, optim
from ._validation import check_float

__all__ = ["DEFAULTS", "OPTIMIZERS", "make_loss", "make_miner", "make_optimizer", "choose_m"]

#: The default training recipe: what a ``None`` / ``"default"`` argument of ``Embedder``
#: resolves to. ``triplet_margin``: the ``TripletMarginLoss`` margin for ``loss="triplet"``
#: (PML's class default, 0.05, stays on ``losses.TripletMarginLoss`` itself);
#: ``triplet_miner``: the miner for ``loss="triplet"`` (batch hard, Hermans, Beyer & Leibe
#: 2017, on MPerClassSampler's "P x K" batches); ``contrastive_neg_margin``: ``neg_margin`` of
#: ``ContrastiveLoss`` for ``loss="contrastive"``; ``contrastive_miner``: None (every pair);
#: ``momentum``: the SGD momentum. How they were chosen: docs/recipes/training.md.
DEFAULTS = {
    "triplet_margin": 0.1,
    "triplet_miner": "batch_hard",
    "contrastive_neg_margin": 1.0,
    "contrastive_miner": None,
    "momentum": 0.0,
}

_TRIPLET_MINER_TYPES = ("semihard", "hard", "easy", "all")
_MINER_STRINGS = _TRIPLET_MINER_TYPES + ("batch_hard", "pair_margin")
OPTIMIZERS = ("sgd", "adam")


def make_loss(loss, margin, backend):
    """``(spec, loss object, margin)`` for Embedder's ``loss`` / ``margin`` arguments
    (``spec``: the string, or None for an object). Raises TypeError/ValueError."""
    if isinstance(loss, str):
        if margin is not None:
            margin = check_float(margin, "margin", minimum=0.0)
        if loss == "triplet":
            m = DEFAULTS["triplet_margin"] if margin is None else margin
            return loss, losses.TripletMarginLoss(margin=m, backend=backend), m
        if loss == "contrastive":
            m = DEFAULTS["contrastive_neg_margin"] if margin is None else margin
            return loss, losses.ContrastiveLoss(pos_margin=0.0, neg_margin=m, backend=backend), m
        raise ValueError(f"loss must be 'triplet', 'contrastive' or a loss object, got {loss!r}")
    if loss is None or isinstance(loss, (numbers.Number, bytes, np.ndarray)) or not callable(loss):
        raise TypeError(f"loss must be 'triplet', 'contrastive' or a callable loss object, got {type(loss).__name__}")
    if margin is not None:
        raise ValueError("margin must be None when loss is an object (set the margin on the loss object)")
    return None, loss, getattr(loss, "margin", None)


def make_miner(miner, loss_func, backend):
    """``(spec, miner object or None)`` for Embedder's ``miner`` argument, given the loss.
    Raises TypeError/ValueError."""
    if isinstance(miner, str) and miner == "default":
        triplet = isinstance(loss_func, losses.TripletMarginLoss)
        spec = DEFAULTS["triplet_miner"] if triplet else DEFAULTS["contrastive_miner"]
        if spec is None:
            return "default", None
        return "default", _miner_from_string(spec, loss_func, backend)
    if miner is None:
        return None, None
    if isinstance(miner, str):
        if miner not in _MINER_STRINGS:
            raise ValueError(f"miner must be one of {('default',) + _MINER_STRINGS}, None or a miner object, "
                             f"got {miner!r}")
        return miner, _miner_from_string(miner, loss_func, backend)
    if not callable(miner):
        raise TypeError(f"miner must be a string, None or a callable miner object, got {type(miner).__name__}")
    return "object", miner


def _miner_from_string(spec, loss_func, backend):
    if spec in _TRIPLET_MINER_TYPES:
        m = getattr(loss_func, "margin", None)
        m = 0.2 if m is None else float(m)  # PML's TripletMarginMiner default margin
        return miners.TripletMarginMiner(margin=m, type_of_triplets=spec, backend=backend)
    if spec == "batch_hard":
        return miners.BatchHardMiner(backend=backend)
    if spec == "pair_margin":
        pos = getattr(loss_func, "pos_margin", None)
        neg = getattr(loss_func, "neg_margin", None)
        if pos is None or neg is None:
            return miners.PairMarginMiner(backend=backend)
        return miners.PairMarginMiner(pos_margin=float(pos), neg_margin=float(neg), backend=backend)
    raise ValueError(f"unknown miner {spec!r}")  # pragma: no cover - validated before


def make_optimizer(optimizer, params, lr, momentum, weight_decay, backend):
    """The optimizer for ``"sgd"``, ``"adam"`` or a callable ``optimizer(params, lr)``.
    Raises TypeError when the callable's result has no ``zero_grad`` and ``step``."""
    if optimizer == "sgd":
        return optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay, backend=backend)
    if optimizer == "adam":
        return optim.Adam(params, lr=lr, weight_decay=weight_decay, backend=backend)
    opt = optimizer(params, lr)
    if not (hasattr(opt, "zero_grad") and hasattr(opt, "step")):
        raise TypeError("optimizer(params, lr) must return an object with zero_grad() and step()")
    return opt


def choose_m(batch_size, n_classes):
    """The smallest divisor ``m >= 2`` of ``batch_size`` with ``m * n_classes >= batch_size``
    and at least two classes per batch (else the smallest such divisor)."""
    divisors = [d for d in range(2, batch_size + 1) if batch_size % d == 0 and d * n_classes >= batch_size]
    for d in divisors:
        if batch_size // d >= 2:
            return d
    if divisors:  # e.g. a prime batch size: one class per batch is all that divides it
        return divisors[0]
    return batch_size  # pragma: no cover - batch_size itself always qualifies
