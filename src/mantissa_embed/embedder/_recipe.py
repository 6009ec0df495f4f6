"""The Embedder's default recipe (``DEFAULTS``) and the factories that turn its string
arguments into loss, miner and optimizer objects."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from .. import losses, miners, optim, transforms
from .._validation import check_float

__all__ = [
    "DEFAULTS",
    "FACE_PRESET",
    "LOSSES",
    "OPTIMIZERS",
    "AUGMENTS",
    "MAX_BATCH_SIZE",
    "make_loss",
    "build_loss",
    "make_miner",
    "resolve_optimizer",
    "make_optimizer",
    "make_augment",
    "make_schedule",
    "choose_m",
]

#: The default training recipe: what a ``"default"`` / ``None`` argument of ``Embedder`` and
#: ``Embedder.fit`` resolves to. ``loss``: the loss string; ``proxy_margin``/``proxy_alpha``:
#: ``ProxyAnchorLoss``'s ``margin``/``alpha`` (PML's defaults); ``loss_lr_factor``: the loss's
#: own parameters (proxies, class weights) learn at this multiple of ``lr``;
#: ``triplet_margin``: the ``TripletMarginLoss`` margin for ``loss="triplet"`` (PML's class
#: default, 0.05, stays on ``losses.TripletMarginLoss`` itself); ``triplet_miner``: the miner
#: for ``loss="triplet"`` (None: every triplet of the batch, pytorch-metric-learning's
#: default; batch-hard mining collapses the small trunks to one point);
#: ``contrastive_neg_margin``: ``neg_margin`` of ``ContrastiveLoss`` for ``loss="contrastive"``;
#: ``optimizer``: what ``optimizer="default"`` runs, except that an ``lr`` of at least
#: ``sgd_min_lr`` given to ``fit`` is an SGD step size and runs SGD (``resolve_optimizer``);
#: ``lr`` (per optimizer), ``weight_decay``, ``momentum`` (SGD), ``schedule``, ``augment``
#: (faces: see ``FACE_PRESET``). How they were chosen: docs/recipes/training.md.
DEFAULTS: dict[str, Any] = {
    "loss": "proxy_anchor",
    "proxy_margin": 0.1,
    "proxy_alpha": 32.0,
    "loss_lr_factor": 100.0,
    "triplet_margin": 0.1,
    "triplet_miner": None,
    "contrastive_neg_margin": 1.0,
    "contrastive_miner": None,
    "optimizer": "adamw",
    "sgd_min_lr": 0.01,
    "lr": {"sgd": 0.05, "adam": 1e-3, "adamw": 1e-3},
    "weight_decay": {"sgd": 0.0, "adam": 0.0, "adamw": 1e-4},
    "momentum": 0.0,
    "schedule": "cosine",
    "augment": "affine",
}

#: The face preset (aligned faces: ORL / AT&T), for the default trunk and loss:
#: ``Embedder(models.cnn_embedder(), **FACE_PRESET["embedder"]).fit(X, y, epochs=200,
#: **FACE_PRESET["fit"])``, i.e. batches of 8 subjects x 5 images and horizontal flips only.
#: Chosen by 3-fold cross-validation over the training subjects (docs/recipes/training.md).
FACE_PRESET: dict[str, dict[str, Any]] = {
    "embedder": {"m_per_class": 5},
    "fit": {"augment": "hflip", "batch_size": 40},
}

LOSSES = ("triplet", "contrastive", "proxy_anchor", "multi_similarity")
_TRIPLET_MINER_TYPES = ("semihard", "hard", "easy", "all")
_MINER_STRINGS = _TRIPLET_MINER_TYPES + ("batch_hard", "pair_margin", "multi_similarity")
OPTIMIZERS = ("sgd", "adam", "adamw")


def make_loss(loss, margin, backend):
    """``(spec, loss object or None, margin)`` for Embedder's ``loss`` / ``margin`` arguments.

    ``spec``: the loss string (``"default"`` resolved), or None for an object. A loss with
    learnable weights per class (``"proxy_anchor"``) needs the number of classes and the
    embedding size, so its object is None until ``build_loss`` at the first fit.
    Raises TypeError/ValueError."""
    if isinstance(loss, str):
        if loss == "default":
            loss = DEFAULTS["loss"]
        if margin is not None:
            margin = check_float(margin, "margin", minimum=0.0)
        if loss == "triplet":
            m = DEFAULTS["triplet_margin"] if margin is None else margin
            return loss, losses.TripletMarginLoss(margin=m, backend=backend), m
        if loss == "contrastive":
            m = DEFAULTS["contrastive_neg_margin"] if margin is None else margin
            return loss, losses.ContrastiveLoss(pos_margin=0.0, neg_margin=m, backend=backend), m
        if loss == "multi_similarity":
            if margin is not None:
                raise ValueError(
                    "margin must be None for loss='multi_similarity' (it has no margin; "
                    "pass a losses.MultiSimilarityLoss object to set alpha/beta/base)"
                )
            return loss, losses.MultiSimilarityLoss(backend=backend), None
        if loss == "proxy_anchor":
            return loss, None, DEFAULTS["proxy_margin"] if margin is None else margin
        raise ValueError(f"loss must be one of {('default',) + LOSSES} or a loss object, got {loss!r}")
    if loss is None or isinstance(loss, (numbers.Number, bytes, np.ndarray)) or not callable(loss):
        raise TypeError(
            f"loss must be a string {('default',) + LOSSES} or a callable loss object, "
            f"got {type(loss).__name__}"
        )
    if margin is not None:
        raise ValueError("margin must be None when loss is an object (set the margin on the loss object)")
    return None, loss, getattr(loss, "margin", None)


def build_loss(spec, margin, num_classes, embedding_size, seed, backend):
    """The loss object of a string ``spec`` that needs the class count and embedding size."""
    if spec == "proxy_anchor":
        return losses.ProxyAnchorLoss(
            num_classes,
            embedding_size,
            margin=margin,
            alpha=DEFAULTS["proxy_alpha"],
            seed=seed,
            backend=backend,
        )
    raise ValueError(f"unknown loss {spec!r}")  # pragma: no cover - validated by make_loss


def make_miner(miner, loss_func, backend):
    """``(spec, miner object or None)`` for Embedder's ``miner`` argument, given the loss.
    Raises TypeError/ValueError."""
    if isinstance(miner, str) and miner == "default":
        if isinstance(loss_func, losses.TripletMarginLoss):
            spec = DEFAULTS["triplet_miner"]
        elif isinstance(loss_func, losses.MultiSimilarityLoss):
            spec = "multi_similarity"
        else:
            spec = DEFAULTS["contrastive_miner"]
        if spec is None:
            return "default", None
        return "default", _miner_from_string(spec, loss_func, backend)
    if miner is None:
        return None, None
    if isinstance(miner, str):
        if miner not in _MINER_STRINGS:
            raise ValueError(
                f"miner must be one of {('default',) + _MINER_STRINGS}, None or a miner object, got {miner!r}"
            )
        return miner, _miner_from_string(miner, loss_func, backend)
    if not callable(miner):
        raise TypeError(
            f"miner must be a string, None or a callable miner object, got {type(miner).__name__}"
        )
    return "object", miner


def _miner_from_string(spec, loss_func, backend):
    if spec in _TRIPLET_MINER_TYPES:
        m = getattr(loss_func, "margin", None)
        m = 0.2 if m is None else float(m)  # PML's TripletMarginMiner default margin
        return miners.TripletMarginMiner(margin=m, type_of_triplets=spec, backend=backend)
    if spec == "batch_hard":
        return miners.BatchHardMiner(backend=backend)
    if spec == "multi_similarity":
        return miners.MultiSimilarityMiner(backend=backend)
    if spec == "pair_margin":
        pos = getattr(loss_func, "pos_margin", None)
        neg = getattr(loss_func, "neg_margin", None)
        if pos is None or neg is None:
            return miners.PairMarginMiner(backend=backend)
        return miners.PairMarginMiner(pos_margin=float(pos), neg_margin=float(neg), backend=backend)
    raise ValueError(f"unknown miner {spec!r}")  # pragma: no cover - validated before


def resolve_optimizer(optimizer, lr):
    """The optimizer name a fit runs for Embedder's ``optimizer`` and fit's ``lr``, or None for
    a callable ``optimizer``.

    ``"default"``: ``"sgd"`` when ``lr`` is given and at least ``DEFAULTS["sgd_min_lr"]``
    (0.01), else ``DEFAULTS["optimizer"]`` (``"adamw"``). Adam's step moves every weight by
    about ``lr`` whatever its gradient's scale, so its useful rates are around 1e-3; an ``lr``
    of 0.01 or more is an SGD step size (the seed README's ``fit(lr=0.05)``): AdamW at 0.05
    moves a typical conv weight (~0.1) by half its size per batch, and the embedding collapsed.
    A named optimizer is used as given, whatever ``lr``."""
    if not isinstance(optimizer, str):
        return None
    if optimizer != "default":
        return optimizer
    # an lr that is the threshold rounded to float32 (np.float32(0.01) is 0.0099999998) counts as it
    return "sgd" if lr is not None and lr >= DEFAULTS["sgd_min_lr"] * (1 - 1e-6) else DEFAULTS["optimizer"]


def make_optimizer(optimizer, groups, momentum, weight_decay, backend):
    """The optimizer for ``"sgd"``, ``"adam"``, ``"adamw"`` or a callable ``optimizer(params, lr)``.

    ``groups``: torch-style parameter groups ``[{"params": [...], "lr": float}, ...]`` (the
    trunk's, then the loss's). A callable gets the parameters of every group and the first
    group's lr. Raises TypeError when the callable's result has no ``zero_grad`` and ``step``.
    """
    if optimizer == "sgd":
        return optim.SGD(
            groups, lr=groups[0]["lr"], momentum=momentum, weight_decay=weight_decay, backend=backend
        )
    if optimizer == "adam":
        return optim.Adam(groups, lr=groups[0]["lr"], weight_decay=weight_decay, backend=backend)
    if optimizer == "adamw":
        return optim.AdamW(groups, lr=groups[0]["lr"], weight_decay=weight_decay, backend=backend)
    opt = optimizer([p for g in groups for p in g["params"]], groups[0]["lr"])
    if not (hasattr(opt, "zero_grad") and hasattr(opt, "step")):
        raise TypeError("optimizer(params, lr) must return an object with zero_grad() and step()")
    return opt


#: the largest ``fit`` batch (a batch is gathered into one array)
MAX_BATCH_SIZE = 1 << 16


def choose_m(batch_size, n_classes, m_per_class=None):
    """The samples per class ``m`` of a ``batch_size`` batch over ``n_classes`` classes.

    ``m_per_class`` given: it must divide ``batch_size`` and leave at least two classes per
    batch (``2 <= batch_size // m <= n_classes``). None: the smallest divisor ``m >= 2`` of
    ``batch_size`` with ``m * n_classes >= batch_size`` and ``batch_size // m >= 2``. Raises
    ValueError naming ``batch_size`` or ``m_per_class`` when no such layout exists (a prime
    ``batch_size``, one class per batch), so that every batch has positive and negative pairs.
    ``batch_size`` above ``MAX_BATCH_SIZE`` is a ValueError here too (``FitSettings`` checks it
    for ``fit``), so that the divisor search stays short whoever calls it.
    """
    if batch_size > MAX_BATCH_SIZE:
        raise ValueError(f"batch_size must be <= {MAX_BATCH_SIZE}, got {batch_size}")
    if m_per_class is not None:
        if batch_size % m_per_class:
            raise ValueError(f"m_per_class ({m_per_class}) must divide batch_size ({batch_size})")
        p = batch_size // m_per_class
        if p < 2:
            raise ValueError(
                f"m_per_class ({m_per_class}) must be at most batch_size / 2 ({batch_size // 2}): "
                "each batch needs at least two classes"
            )
        if p > n_classes:
            raise ValueError(
                f"batch_size // m_per_class = {p} classes per batch, but y has {n_classes}: "
                f"raise m_per_class or lower batch_size"
            )
        return m_per_class
    for d in range(2, batch_size // 2 + 1):
        if batch_size % d == 0 and d * n_classes >= batch_size:
            return d
    raise ValueError(
        f"batch_size ({batch_size}) cannot be split into at least two classes of m >= 2 samples "
        f"each (m must divide batch_size; {n_classes} classes): use an even batch_size such as "
        f"{batch_size + 1 if batch_size % 2 else batch_size + 2} or set m_per_class"
    )


#: the augmentation presets ``fit(augment=...)`` accepts by name (torchvision's semantics)
AUGMENTS = ("affine", "hflip", "affine+hflip")


def make_augment(augment):
    """The batch transform ``t(X, rng) -> X`` for ``fit``'s ``augment`` (``FitSettings.augment``,
    checked there), or None.

    ``"default"``: ``DEFAULTS["augment"]``. ``"affine"``: ``transforms.RandomAffine(degrees=12,
    translate=(0.09, 0.09), scale=(0.9, 1.1))`` (about +-2.5 px on 28 px digits); ``"hflip"``:
    ``transforms.RandomHorizontalFlip()``; ``"affine+hflip"``: both; None: no augmentation; a
    callable ``t(X, rng)`` is used as is. A new transform at every call (it owns its buffers).
    """
    if not isinstance(augment, str):
        return augment
    if augment == "default":
        augment = DEFAULTS["augment"]
    if augment not in AUGMENTS:  # pragma: no cover - checked by FitSettings
        raise ValueError(f"unknown augment {augment!r}")
    parts = augment.split("+")
    ts = []
    if "affine" in parts:
        ts.append(transforms.RandomAffine(degrees=12, translate=(0.09, 0.09), scale=(0.9, 1.1)))
    if "hflip" in parts:
        ts.append(transforms.RandomHorizontalFlip())
    return ts[0] if len(ts) == 1 else transforms.Compose(ts)


def make_schedule(schedule):
    """The learning-rate schedule for ``fit``'s ``schedule``, or None (a constant lr); the check
    of ``FitSettings.schedule``.

    ``"default"``: ``DEFAULTS["schedule"]``; a string of ``mantissa_embed.optim.make_schedule``
    (``"cosine"``, ``"step"``, ``"constant"``); an object with ``factor(step, total_steps)``.
    Raises ValueError/TypeError naming ``schedule``.
    """
    if schedule is None:
        return None
    if isinstance(schedule, str):
        return optim.make_schedule(DEFAULTS["schedule"] if schedule == "default" else schedule)
    if not callable(getattr(schedule, "factor", None)):
        raise TypeError(
            f"schedule must be a string, None or an object with factor(step, total_steps), "
            f"got {type(schedule).__name__}"
        )
    return schedule
