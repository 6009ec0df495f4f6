"""The :class:`Embedder`: train a trunk by metric learning, then embed, retrieve and verify.

One network, run once per batch: a class-balanced batch (``MPerClassSampler``) goes through the
trunk, a miner picks pairs or triplets among the batch's embeddings, the loss returns its
gradient with respect to the embeddings, ``Sequential.backward`` turns it into parameter
gradients and the optimizer steps. A "Siamese" or "triplet" network is this same network
applied to the rows of one batch; no second copy of the weights exists.
"""
from __future__ import annotations

import json
import math
import numbers
import os
import time
import warnings
import zipfile

import numpy as np

from ._io import atomic_write
from ._validation import as_generator, check_array, check_float, check_int, check_labels
from .backend import BACKENDS
from .samplers import MPerClassSampler

__all__ = ["Embedder", "DEFAULTS"]

#: The default training recipe; each entry is what a ``None`` / ``"default"`` constructor
#: argument of :class:`Embedder` resolves to. ``triplet_margin``: margin of
#: ``TripletMarginLoss`` when ``loss="triplet"`` and ``margin=None`` (0.1; PML's class
#: default, 0.05, is kept by ``losses.TripletMarginLoss`` itself); ``triplet_miner``: the miner
#: for ``loss="triplet"`` and ``miner="default"`` ("batch hard", Hermans, Beyer & Leibe 2017,
#: with the class-balanced "P x K" batches of MPerClassSampler); ``contrastive_neg_margin``:
#: ``neg_margin`` of ``ContrastiveLoss`` when ``loss="contrastive"`` and ``margin=None``;
#: ``contrastive_miner``: None (every pair).
#:
#: How they were chosen (this library, MNIST test set, train on 0-4, 8 epochs, batch 64,
#: lr 0.05, evaluate precision@1 / MAP@R on 5-9, seeds 0-9 of initialization and batches;
#: reproduce with ``benchmarks/recipe_sweep.py``): batch hard, margin 0.1: precision@1 mean
#: 0.824 (min 0.749), MAP@R mean 0.345 (min 0.301), 9 of 10 seeds meet both 0.78 and 0.30
#: (re-run after the backward kernels changed their summation order: 0.837 (0.794) / 0.337
#: (0.319), 10 of 10; the other rows were not re-run);
#: batch hard, margin 0.05: 0.833 (0.794) / 0.322 (0.287), 8 of 10; margin 0.2: 0.826 / 0.327,
#: 8 of 10; semi-hard 0.1 on standardized inputs: 0.799 / 0.286, 3 of 10; m_per_class 32:
#: 6 of 10; momentum 0.5: 0.795 / 0.297, 4 of 10 (PyTorch runs: momentum 0.9 loses ~0.1).
DEFAULTS = {
    "triplet_margin": 0.1,
    "triplet_miner": "batch_hard",
    "contrastive_neg_margin": 1.0,
    "contrastive_miner": None,
    "momentum": 0.0,
}

_TRIPLET_MINER_TYPES = ("semihard", "hard", "easy", "all")
_MINER_STRINGS = _TRIPLET_MINER_TYPES + ("batch_hard", "pair_margin")
_OPTIMIZERS = ("sgd", "adam")
_FORMAT = "mantissa-embed/embedder"
_FORMAT_VERSION = 1
_CONFIG_KEY = "__config__"
_PARAM_PREFIX = "trunk/"
_LOSS_PARAM_PREFIX = "loss/"
_EPS = 1e-12  # torch.nn.functional.normalize's eps, used by PML's LpDistance


def _l2_normalize(Z):
    """Rows of Z (n, D) divided by max(||row||, 1e-12), in place; returns Z."""
    norms = np.sqrt(np.einsum("ij,ij->i", Z, Z, dtype=np.float64))
    np.maximum(norms, _EPS, out=norms)
    Z /= norms[:, None].astype(np.float32)
    return Z


class Embedder:
    """Metric learning on a CNN trunk: ``fit`` / ``embed`` / ``retrieve`` / ``verify``.

    Parameters
    ----------
    layers : list of Layer or Sequential
        The trunk. Its output must be 2-D ``(N, D)`` (end with ``Flatten``/``Dense``), e.g.
        ``models.small_cnn_embedder(embed_dim=16)``. A list is wrapped in
        ``Sequential(layers, seed=seed, backend=backend)``; a ``Sequential`` is used as is (its
        backend is set to ``backend``).
    loss : {"triplet", "contrastive"} or a loss object, default "triplet"
        ``"triplet"``: ``losses.TripletMarginLoss(margin)``, charging every mined triplet
        ``(a, p, n)`` ``[d(a,p) - d(a,n) + margin]+`` and averaging over the non-zero terms
        (Schroff, Kalenichenko & Philbin 2015, "FaceNet", CVPR).
        ``"contrastive"``: ``losses.ContrastiveLoss(pos_margin=0, neg_margin=margin)``,
        charging positive pairs ``[d - 0]+`` and negative pairs ``[margin - d]+``, each kind
        averaged over its non-zero terms, the two summed (Hadsell, Chopra & LeCun 2006, CVPR).
        In both, ``d`` is the Euclidean distance between L2-normalized embeddings
        (``distances.LpDistance()``, PML's default), so ``0 <= d <= 2``.
        A loss object: any callable ``loss(embeddings, labels, indices_tuple=None)`` returning
        a ``LossOutput`` (e.g. ``losses.TripletMarginLoss(margin=0.2)``); its learnable
        parameters, if any (``loss.parameters()``), are optimized with the trunk's.
    margin : float or None, default None
        The loss margin. None: ``DEFAULTS["triplet_margin"]`` (0.1) for the triplet loss,
        ``DEFAULTS["contrastive_neg_margin"]`` (1.0, PML's default ``neg_margin``) for the
        contrastive loss. Must be None when ``loss`` is an object (set it on the object).
    seed : int >= 0 or numpy.random.Generator, default 0
        Seeds the trunk's initialization (when ``layers`` is a list) and the batch sampler.
    backend : {"mantissa", "numpy"}, default "mantissa"
        ``"mantissa"``: every kernel on the C engine; ``"numpy"``: on the numpy reference twins.
    miner : str, miner object or None, default "default"
        Which pairs/triplets of a batch the loss sees. ``"default"``: ``"batch_hard"`` for the
        triplet loss (``DEFAULTS["triplet_miner"]``), None for the contrastive loss.
        ``"semihard"``, ``"hard"``, ``"easy"``, ``"all"``:
        ``miners.TripletMarginMiner(margin=<the triplet margin>, type_of_triplets=...)``
        (semi-hard: ``d(a,p) < d(a,n) <= d(a,p) + margin``, Schroff et al. 2015);
        ``"batch_hard"``: ``miners.BatchHardMiner()``: for every anchor, its farthest positive
        and nearest negative in the batch (Hermans, Beyer & Leibe 2017, "In Defense of the
        Triplet Loss for Person Re-Identification", arXiv:1703.07737);
        ``"pair_margin"``: ``miners.PairMarginMiner(pos_margin, neg_margin)`` with the
        contrastive loss's margins (PML's defaults 0.2 / 0.8 for a triplet loss);
        None: no mining, every valid pair/triplet of the batch; an object: any callable
        ``miner(embeddings, labels) -> indices_tuple``.
        When a miner finds nothing in a batch the loss is 0 and the step changes nothing
        except momentum.
    optimizer : {"sgd", "adam"} or callable, default "sgd"
        ``"sgd"``: ``optim.SGD(params, lr, momentum=momentum, weight_decay=weight_decay)``;
        ``"adam"``: ``optim.Adam(params, lr, weight_decay=weight_decay)``; a callable
        ``optimizer(params, lr) -> object with zero_grad() and step()``. A fresh optimizer is
        created at every :meth:`fit` call.
    momentum : float >= 0 or None, default None
        SGD momentum (torch semantics). None: ``DEFAULTS["momentum"]`` (0.0; on the MNIST
        protocol momentum 0.9 at lr 0.05 generalized clearly worse to unseen classes).
    weight_decay : float >= 0, default 0.0
    m_per_class : int or None, default None
        Samples per class in a batch. None: the smallest divisor ``m >= 2`` of ``batch_size``
        with ``m * num_classes >= batch_size`` and at least two classes per batch (for 5
        classes and batch 64: m = 16, four classes per batch; for 40 classes: m = 2).

    Attributes
    ----------
    net : Sequential
        The trunk.
    loss_func, miner_func : the loss and miner objects in use (``miner_func`` may be None).
    history_ : dict
        ``{"loss": [mean batch loss of each epoch of the last fit]}``.
    profile_ : dict or None
        Where the last ``fit(..., profile=True)`` spent its time (see :meth:`fit`); None
        otherwise. :meth:`profile_summary` prints it as a table.
    input_shape_ : tuple or None
        Per-sample image shape ``(C, H, W)`` seen by :meth:`fit` (None before).
    embed_dim_ : int or None
        ``D``, the embedding size (None before fit/load).

    Training (:meth:`fit`)
    ----------------------
    Each epoch draws ``ceil(len(X) / batch_size)`` batches of ``batch_size`` images from
    ``MPerClassSampler(y, m_per_class, batch_size)``: each batch holds ``m`` images of each of
    ``batch_size // m`` random classes (without replacement inside a class; with replacement
    for a class smaller than ``m``), so every batch has positives and negatives. Per batch:
    ``E = net.forward(X[idx])``; ``tuples = miner(E, y[idx])``; ``out = loss(E, y[idx], tuples)``;
    ``optimizer.zero_grad()``; ``net.backward(out.grad)``; ``optimizer.step()``.

    Distance
    --------
    :meth:`embed` returns **L2-normalized** embeddings by default (``normalize=True``), and
    :meth:`retrieve` / :meth:`verify` use the Euclidean distance between L2-normalized
    embeddings -- the distance the loss trains (PML's ``LpDistance(normalize_embeddings=True)``).
    A loss object whose ``distance.normalize_embeddings`` is False switches both to raw
    embeddings. Embeddings passed to ``retrieve`` / ``verify`` are normalized the same way
    (a no-op for :meth:`embed`'s output).

    Raises
    ------
    TypeError
        ``layers`` not a list of layers / Sequential; ``loss``, ``miner`` or ``optimizer`` of an
        unsupported type; non-numeric ``margin``, ``momentum``, ``weight_decay``.
    ValueError
        Unknown ``loss`` / ``miner`` / ``optimizer`` string or ``backend``; ``margin`` given
        with a loss object; negative ``margin``, ``momentum`` or ``weight_decay``.

    Source
    ------
    The training loop and the losses/miners follow pytorch-metric-learning (Musgrave,
    Belongie & Lim 2020, "PyTorch Metric Learning", arXiv:2008.09164); the API follows the
    mantissa-embed seed README.
    """

    def __init__(self, layers, loss="triplet", margin=None, seed=0, backend="mantissa", miner="default",
                 optimizer="sgd", momentum=None, weight_decay=0.0, m_per_class=None):
        from .layers import Layer, Sequential

        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.backend = backend
        if not isinstance(seed, np.random.Generator):
            seed = check_int(seed, "seed", minimum=0)
        self.seed = seed
        if isinstance(layers, Sequential):
            net = layers.set_backend(backend)
        elif isinstance(layers, Layer):
            raise TypeError("layers must be a list of Layer objects or a Sequential, got a single "
                            f"{type(layers).__name__} (wrap it in a list)")
        elif isinstance(layers, (list, tuple)):
            net = Sequential(layers, seed=seed, backend=backend)
        else:
            raise TypeError(f"layers must be a list of Layer objects or a Sequential, got {type(layers).__name__}")
        self.net = net

        self._loss_spec, self.loss_func, self.margin = self._make_loss(loss, margin)
        self._miner_spec, self.miner_func = self._make_miner(miner)
        if isinstance(optimizer, str):
            if optimizer not in _OPTIMIZERS:
                raise ValueError(f"optimizer must be one of {_OPTIMIZERS} or a callable, got {optimizer!r}")
        elif not callable(optimizer):
            raise TypeError(f"optimizer must be 'sgd', 'adam' or a callable(params, lr), got {type(optimizer).__name__}")
        self.optimizer = optimizer
        self.momentum = check_float(DEFAULTS["momentum"] if momentum is None else momentum, "momentum", minimum=0.0)
        self.weight_decay = check_float(weight_decay, "weight_decay", minimum=0.0)
        self.m_per_class = None if m_per_class is None else check_int(m_per_class, "m_per_class", minimum=1)
        self._rng = as_generator(seed)
        self.history_ = {"loss": []}
        self.input_shape_ = tuple(net.input_shape) if net.built else None
        self.embed_dim_ = None
        self.fitted_ = False
        self.optimizer_ = None
        self.profile_ = None

    # ------------------------------------------------------------------ construction helpers
    def _make_loss(self, loss, margin):
        from . import losses

        if isinstance(loss, str):
            if margin is not None:
                margin = check_float(margin, "margin", minimum=0.0)
            if loss == "triplet":
                m = DEFAULTS["triplet_margin"] if margin is None else margin
                return loss, losses.TripletMarginLoss(margin=m, backend=self.backend), m
            if loss == "contrastive":
                m = DEFAULTS["contrastive_neg_margin"] if margin is None else margin
                return loss, losses.ContrastiveLoss(pos_margin=0.0, neg_margin=m, backend=self.backend), m
            raise ValueError(f"loss must be 'triplet', 'contrastive' or a loss object, got {loss!r}")
        if loss is None or isinstance(loss, (numbers.Number, bytes, np.ndarray)) or not callable(loss):
            raise TypeError(f"loss must be 'triplet', 'contrastive' or a callable loss object, got {type(loss).__name__}")
        if margin is not None:
            raise ValueError("margin must be None when loss is an object (set the margin on the loss object)")
        return None, loss, getattr(loss, "margin", None)

    def _make_miner(self, miner):
        from . import miners

        if isinstance(miner, str) and miner == "default":
            spec = DEFAULTS["triplet_miner"] if self._is_triplet() else DEFAULTS["contrastive_miner"]
            if spec is None:
                return "default", None
            return "default", self._miner_from_string(spec, miners)
        if miner is None:
            return None, None
        if isinstance(miner, str):
            if miner not in _MINER_STRINGS:
                raise ValueError(f"miner must be one of {('default',) + _MINER_STRINGS}, None or a miner object, "
                                 f"got {miner!r}")
            return miner, self._miner_from_string(miner, miners)
        if not callable(miner):
            raise TypeError(f"miner must be a string, None or a callable miner object, got {type(miner).__name__}")
        return "object", miner

    def _is_triplet(self):
        from . import losses

        return isinstance(self.loss_func, losses.TripletMarginLoss)

    def _miner_from_string(self, spec, miners):
        if spec in _TRIPLET_MINER_TYPES:
            m = getattr(self.loss_func, "margin", None)
            m = 0.2 if m is None else float(m)  # PML's TripletMarginMiner default margin
            return miners.TripletMarginMiner(margin=m, type_of_triplets=spec, backend=self.backend)
        if spec == "batch_hard":
            return miners.BatchHardMiner(backend=self.backend)
        if spec == "pair_margin":
            pos = getattr(self.loss_func, "pos_margin", None)
            neg = getattr(self.loss_func, "neg_margin", None)
            if pos is None or neg is None:
                return miners.PairMarginMiner(backend=self.backend)
            return miners.PairMarginMiner(pos_margin=float(pos), neg_margin=float(neg), backend=self.backend)
        raise ValueError(f"unknown miner {spec!r}")  # pragma: no cover - validated before

    def _normalizes(self):
        dist = getattr(self.loss_func, "distance", None)
        return bool(getattr(dist, "normalize_embeddings", True))

    def _make_optimizer(self, lr):
        from . import optim

        params = self.parameters()
        if self.optimizer == "sgd":
            return optim.SGD(params, lr=lr, momentum=self.momentum, weight_decay=self.weight_decay,
                             backend=self.backend)
        if self.optimizer == "adam":
            return optim.Adam(params, lr=lr, weight_decay=self.weight_decay, backend=self.backend)
        opt = self.optimizer(params, lr)
        if not (hasattr(opt, "zero_grad") and hasattr(opt, "step")):
            raise TypeError("optimizer(params, lr) must return an object with zero_grad() and step()")
        return opt

    def _choose_m(self, batch_size, n_classes):
        if self.m_per_class is not None:
            return self.m_per_class
        divisors = [d for d in range(2, batch_size + 1) if batch_size % d == 0 and d * n_classes >= batch_size]
        for d in divisors:
            if batch_size // d >= 2:
                return d
        if divisors:  # e.g. a prime batch size: one class per batch is all that divides it
            return divisors[0]
        return batch_size  # pragma: no cover - batch_size itself always qualifies

    # ------------------------------------------------------------------------------ training
    def parameters(self):
        """Every learnable ``Parameter``: the trunk's (layer order), then the loss's, if any.

        Empty for the trunk before its first forward (shapes are inferred then).
        """
        params = list(self.net.parameters())
        loss_params = getattr(self.loss_func, "parameters", None)
        if callable(loss_params):
            params += list(loss_params())
        return params

    def fit(self, X, y, epochs=1, batch_size=64, lr=0.05, verbose=False, *, callback=None, profile=False):
        """Train the trunk by metric learning on images ``X`` with class labels ``y``.

        Parameters
        ----------
        X : array_like, float, shape (N, C, H, W)
            Images (NCHW); converted to float32 once. NaN/Inf are rejected.
        y : array_like of int, shape (N,)
            Class labels; they only decide which pairs are "same" and which "different".
            At least two classes.
        epochs : int >= 1, default 1
        batch_size : int >= 2, default 64
            Images per batch; each epoch is ``ceil(N / batch_size)`` class-balanced batches
            (see the class docstring).
        lr : float > 0, default 0.05
        verbose : bool, default False
            Show a tqdm progress bar per epoch with the running loss.
        callback : callable or None, keyword-only, default None
            Called as ``callback(epoch, mean_loss)`` after every epoch (``epoch`` from 0).
        profile : bool, keyword-only, default False
            Time where the training goes: every layer's forward and backward, the miner, the
            loss (its forward and backward are one call), the optimizer step and the batch
            gathering, summed over the whole call (wall clock, ``time.perf_counter``). The
            result is stored in :attr:`profile_` and :meth:`profile_summary` formats it.
            Profiling does not change the numbers (same weights as an unprofiled fit); it
            adds two clock reads per layer and step.

        Returns
        -------
        self
            ``history_["loss"]`` holds the mean batch loss of every epoch of this call.
            With ``profile=True``, ``profile_`` is a dict::

                {"epochs": int, "batches": int, "total_s": float,
                 "layers": [{"index": int, "layer": str, "forward_s": float,
                             "backward_s": float}, ...],          # one per trunk layer
                 "miner_s": float, "loss_s": float, "optimizer_s": float,
                 "data_s": float, "other_s": float}

            (seconds; ``other_s`` = ``total_s`` minus everything else: Python bookkeeping
            and the finiteness checks). ``profile_`` is None after a fit without profiling.
            Training continues from the current weights (a new ``fit`` does not reinitialize
            the trunk), with a fresh optimizer.

        Raises
        ------
        TypeError
            Non-numeric ``X`` (strings, objects, bools), non-integer ``y`` (floats included),
            non-int ``epochs``/``batch_size``, non-numeric ``lr``, non-bool ``verbose``.
        ValueError
            ``X`` not 4-D, empty, or containing NaN/Inf; ``y`` not 1-D or of a length other
            than ``len(X)``; fewer than two classes; ``epochs < 1``; ``batch_size < 2``;
            ``lr <= 0``; ``X`` whose image shape differs from the one the trunk was built
            for; a trunk whose output is not 2-D.
        FloatingPointError
            Training diverged (the loss or the embeddings became NaN/Inf): lower ``lr``.
        """
        X = check_array(X, "X", ndim=4, allow_empty=False)
        y = check_labels(y, "y", n=X.shape[0])
        epochs = check_int(epochs, "epochs", minimum=1)
        batch_size = check_int(batch_size, "batch_size", minimum=2)
        lr = check_float(lr, "lr", minimum=0.0, strict=True)
        if not isinstance(verbose, (bool, np.bool_)):
            raise TypeError(f"verbose must be a bool, got {type(verbose).__name__}")
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be callable(epoch, loss) or None, got {type(callback).__name__}")
        if not isinstance(profile, (bool, np.bool_)):
            raise TypeError(f"profile must be a bool, got {type(profile).__name__}")
        n_classes = np.unique(y).shape[0]
        if n_classes < 2:
            raise ValueError(f"y must contain at least 2 classes for metric learning, got {n_classes}")
        if self.net.built and tuple(X.shape[1:]) != tuple(self.net.input_shape):
            raise ValueError(f"X must have shape (N, {', '.join(map(str, self.net.input_shape))}) "
                             f"(the trunk was built for that input), got {X.shape}")
        self._check_trunk_output(X.shape[1:])

        m = self._choose_m(batch_size, n_classes)
        n_batches = math.ceil(X.shape[0] / batch_size)
        sampler = MPerClassSampler(y, m, batch_size=batch_size, length_before_new_iter=n_batches * batch_size,
                                   seed=self._rng)
        self.sampler_ = sampler
        self.net.train()
        if not self.net.built:
            self.net.build(X.shape[1:])
        self.optimizer_ = opt = self._make_optimizer(lr)
        xb = np.empty((batch_size,) + X.shape[1:], dtype=np.float32)
        self.history_ = {"loss": []}
        self.profile_ = None
        clock = time.perf_counter
        prof = None
        if profile:
            prof = {"miner": 0.0, "loss": 0.0, "optimizer": 0.0, "data": 0.0, "batches": 0}
            self.net._profile = [[0.0, 0.0] for _ in self.net.layers]
            t_start = clock()
        try:
            self._fit_epochs(X, y, epochs, lr, sampler, n_batches, opt, xb, bar_ok=verbose, callback=callback,
                             prof=prof, clock=clock)
        finally:
            layer_times = self.net._profile
            self.net._profile = None
        if profile:
            total = clock() - t_start
            layers = [{"index": i, "layer": layer._describe(), "forward_s": float(f), "backward_s": float(b)}
                      for i, (layer, (f, b)) in enumerate(zip(self.net.layers, layer_times))]
            known = sum(d["forward_s"] + d["backward_s"] for d in layers) + sum(
                prof[k] for k in ("miner", "loss", "optimizer", "data"))
            self.profile_ = {"epochs": epochs, "batches": prof["batches"], "total_s": float(total),
                             "layers": layers, "miner_s": float(prof["miner"]), "loss_s": float(prof["loss"]),
                             "optimizer_s": float(prof["optimizer"]), "data_s": float(prof["data"]),
                             "other_s": float(max(total - known, 0.0))}
        self.net.eval()
        self.input_shape_ = tuple(X.shape[1:])
        self.embed_dim_ = int(self.net.output_shape(self.input_shape_)[0])
        self.fitted_ = True
        return self

    def _fit_epochs(self, X, y, epochs, lr, sampler, n_batches, opt, xb, bar_ok, callback, prof, clock):
        """The training loop of :meth:`fit` (``prof``: a dict of accumulated seconds, or None)."""
        verbose = bar_ok
        for epoch in range(epochs):
            total = 0.0
            batches = iter(sampler)
            bar = None
            if verbose:
                from tqdm.auto import tqdm

                bar = tqdm(batches, total=n_batches, desc=f"epoch {epoch + 1}/{epochs}", leave=True)
                batches = bar
            for i, idx in enumerate(batches):
                if prof is not None:
                    t0 = clock()
                xbi = xb[:idx.shape[0]]
                np.take(X, idx, axis=0, out=xbi)
                yb = y[idx]
                if prof is not None:
                    prof["data"] += clock() - t0
                emb = self.net.forward(xbi)
                if not np.isfinite(emb).all():  # X is finite: the weights diverged
                    raise FloatingPointError(
                        f"the embeddings became NaN/Inf at epoch {epoch + 1}, batch {i + 1}; lower lr (got {lr})")
                if prof is not None:
                    t0 = clock()
                tuples = None if self.miner_func is None else self.miner_func(emb, yb)
                if prof is not None:
                    t1 = clock()
                    prof["miner"] += t1 - t0
                out = self.loss_func(emb, yb, indices_tuple=tuples)
                if prof is not None:
                    prof["loss"] += clock() - t1
                loss = float(out.loss)
                if not np.isfinite(loss):
                    raise FloatingPointError(
                        f"the loss became {loss} at epoch {epoch + 1}, batch {i + 1}; lower lr (got {lr})")
                if prof is not None:
                    t0 = clock()
                opt.zero_grad()
                if prof is not None:
                    prof["optimizer"] += clock() - t0
                self.net.backward(out.grad, need_dx=False)
                if prof is not None:
                    t0 = clock()
                opt.step()
                if prof is not None:
                    prof["optimizer"] += clock() - t0
                    prof["batches"] += 1
                total += loss
                if bar is not None:
                    bar.set_postfix(loss=f"{total / (i + 1):.4f}", refresh=False)
            if bar is not None:
                bar.close()
            self.history_["loss"].append(total / n_batches)
            if callback is not None:
                callback(epoch, self.history_["loss"][-1])

    def profile_summary(self):
        """A text table of :attr:`profile_` (the last ``fit(..., profile=True)``): seconds and
        share of the total for every layer's forward and backward, the miner, the loss, the
        optimizer, the batch gathering and the rest. Returns the string (print it).

        Raises RuntimeError when no profiled fit has run.
        """
        p = getattr(self, "profile_", None)
        if not p:
            raise RuntimeError("no profile: call fit(X, y, profile=True) first")
        total = p["total_s"] or 1e-12
        rows = []
        for d in p["layers"]:
            rows.append((f"{d['index']}: {d['layer']} forward", d["forward_s"]))
            rows.append((f"{d['index']}: {d['layer']} backward", d["backward_s"]))
        rows += [("miner", p["miner_s"]), ("loss (forward + backward)", p["loss_s"]),
                 ("optimizer (zero_grad + step)", p["optimizer_s"]), ("batch gathering", p["data_s"]),
                 ("other (Python, checks)", p["other_s"])]
        w = max(len(r[0]) for r in rows)
        out = [f"{'where':<{w}}  {'seconds':>9}  {'share':>6}", "-" * (w + 19)]
        out += [f"{name:<{w}}  {sec:>9.4f}  {100 * sec / total:>5.1f}%" for name, sec in rows]
        out += ["-" * (w + 19),
                f"{'total (' + str(p['epochs']) + ' epochs, ' + str(p['batches']) + ' batches)':<{w}}  {total:>9.4f}"]
        return "\n".join(out)

    def _check_trunk_output(self, input_shape):
        out_shape = self.net.output_shape(tuple(input_shape))
        if len(out_shape) != 1:
            raise ValueError(f"the trunk must output one vector per image (N, D); for input {tuple(input_shape)} "
                             f"it outputs per-sample shape {out_shape} (end it with Flatten() or Dense(D))")

    # ----------------------------------------------------------------------------- inference
    def _check_fitted(self):
        if not self.fitted_:
            raise RuntimeError("this Embedder is not fitted yet: call fit(X, y) first (or Embedder.load(path))")

    def embed(self, X, batch_size=256, normalize=True):
        """Embed images in chunks of ``batch_size`` (bounded memory).

        Parameters
        ----------
        X : array_like, float, shape (n, C, H, W)
            Images of the shape seen by :meth:`fit`; converted to float32 chunk by chunk (no
            full copy of ``X``). NaN/Inf are rejected.
        batch_size : int >= 1, default 256
        normalize : bool, default True
            Return L2-normalized rows (the space the loss trains and :meth:`retrieve` /
            :meth:`verify` measure). False: the trunk's raw output.

        Returns
        -------
        ndarray, float32, shape (n, D), C-contiguous, freshly allocated.

        Raises
        ------
        RuntimeError
            Before :meth:`fit` (unless the Embedder was loaded with :meth:`load`).
        TypeError / ValueError
            Non-numeric ``X``; wrong ndim or image shape; NaN/Inf; a bad ``batch_size``.
        """
        self._check_fitted()
        batch_size = check_int(batch_size, "batch_size", minimum=1)
        if not isinstance(normalize, (bool, np.bool_)):
            raise TypeError(f"normalize must be a bool, got {type(normalize).__name__}")
        return self._embed(X, "X", batch_size, normalize)

    def _embed(self, X, name, batch_size=256, normalize=True):
        X = self._check_images(X, name, batched=True)
        n = X.shape[0]
        out = np.empty((n, self.embed_dim_), dtype=np.float32)
        net = self.net
        net.eval()
        for s in range(0, n, batch_size):
            # converted and checked (finite, and the shape by _check_images) once, here
            chunk = check_array(X[s:s + batch_size], name, ndim=4)
            out[s:s + chunk.shape[0]] = net._forward_valid(chunk) if net.built else net.forward(chunk)
        if normalize and self._normalizes() and n:
            _l2_normalize(out)
        return out

    def _check_images(self, X, name, batched):
        """Type/shape checks without converting the whole array (embed converts per chunk)."""
        if isinstance(X, (str, bytes)) or X is None:
            raise TypeError(f"{name} must be an array of numbers, got {type(X).__name__}")
        arr = np.asarray(X)
        if arr.dtype == object or arr.dtype.kind not in "iuf":
            raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}")
        want = (len(self.input_shape_) + 1) if batched else len(self.input_shape_)
        if arr.ndim != want or tuple(arr.shape[-len(self.input_shape_):]) != self.input_shape_:
            shape = ", ".join(map(str, self.input_shape_))
            exp = f"(n, {shape})" if batched else f"({shape})"
            raise ValueError(f"{name} must have shape {exp}, got {arr.shape}")
        return arr

    def _as_embeddings(self, a, name, allow_single=True):
        """Images or embeddings -> (float32 (n, D) normalized-as-trained, was_single)."""
        self._check_fitted()
        if isinstance(a, (str, bytes)) or a is None:
            raise TypeError(f"{name} must be an array of numbers, got {type(a).__name__}")
        arr = np.asarray(a)
        if arr.dtype == object or arr.dtype.kind not in "iuf":
            raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}")
        D = self.embed_dim_
        img_nd = len(self.input_shape_)
        img_ok = tuple(arr.shape[-img_nd:]) == self.input_shape_
        if arr.ndim == img_nd + 1 and img_ok:
            return self._embed(arr, name), False
        if arr.ndim == img_nd and allow_single and img_ok:
            return self._embed(arr[None], name), True
        if arr.ndim == 2 or (arr.ndim == 1 and allow_single):
            single = arr.ndim == 1
            Z = check_array(arr.reshape(1, -1) if single else arr, name, ndim=2)
            if Z.shape[1] != D:
                raise ValueError(f"{name} embeddings must have {D} columns (the embedding size), got shape {arr.shape}")
            Z = np.array(Z, dtype=np.float32, copy=True)  # never normalize the caller's array in place
            if self._normalizes() and Z.shape[0]:
                _l2_normalize(Z)
            return Z, single
        shape = ", ".join(map(str, self.input_shape_))
        forms = f"images (n, {shape}), embeddings (n, {D})"
        if allow_single:
            forms = f"one image ({shape}), " + forms + f" or one embedding ({D},)"
        raise ValueError(f"{name} must be {forms}; got shape {arr.shape}")

    def retrieve(self, query, gallery, k=5):
        """The ``k`` nearest gallery items of each query, nearest first.

        Parameters
        ----------
        query : array_like
            One image ``(C, H, W)``, a batch of images ``(n, C, H, W)``, one embedding ``(D,)``
            or a batch of embeddings ``(n, D)``.
        gallery : array_like
            Images ``(m, C, H, W)`` or embeddings ``(m, D)`` (e.g. ``embed(X_gallery)``, so a
            fixed gallery is embedded once and reused).
        k : int, 1 <= k <= m, default 5

        Returns
        -------
        indices : ndarray, int64, shape (n, k) -- or (k,) for a single query
            Gallery row indices, nearest first (ties: lower index first).
        distances : ndarray, float32, same shape
            Euclidean distances between L2-normalized embeddings (the trained distance),
            from the exact tiled search :func:`mantissa_embed.evaluation.knn` (SGEMM-ranked
            candidates, distances recomputed in float64 for the returned neighbours).

        Raises
        ------
        RuntimeError  before fit / load.
        ValueError    bad shapes, NaN/Inf, embedding size mismatch, ``k`` larger than the gallery.
        TypeError     non-numeric inputs, non-int ``k``.
        """
        from .evaluation.knn import knn

        self._check_fitted()
        k = check_int(k, "k", minimum=1)
        Q, single = self._as_embeddings(query, "query")
        G, _ = self._as_embeddings(gallery, "gallery", allow_single=False)
        if k > G.shape[0]:
            raise ValueError(f"k must be <= the number of gallery items ({G.shape[0]}), got k={k}")
        idx, dist = knn(Q, G, k, metric="euclidean", backend=self.backend)
        if single:
            return idx[0], dist[0]
        return idx, dist

    def verify(self, a, b, threshold=None):
        """Distance between ``a`` and ``b`` in the trained embedding space; with ``threshold``,
        whether they are "the same" (``distance <= threshold``).

        Parameters
        ----------
        a, b : array_like
            Each one image ``(C, H, W)``, one embedding ``(D,)``, or a batch of either
            (``(n, C, H, W)`` / ``(n, D)``). Two batches must have the same length (pairwise);
            a single item against a batch is compared with every row.
        threshold : float >= 0 or None, default None

        Returns
        -------
        float (or bool with ``threshold``) when both are single items; otherwise an ndarray
        of shape (n,), float32 (or bool).

        Raises
        ------
        RuntimeError  before fit / load.
        ValueError    bad shapes, NaN/Inf, mismatched batch lengths, a negative threshold.
        TypeError     non-numeric inputs or threshold.
        """
        self._check_fitted()
        if threshold is not None:
            threshold = check_float(threshold, "threshold", minimum=0.0)
        Za, sa = self._as_embeddings(a, "a")
        Zb, sb = self._as_embeddings(b, "b")
        if not (sa or sb) and Za.shape[0] != Zb.shape[0]:
            raise ValueError(f"a and b must have the same number of items, got {Za.shape[0]} and {Zb.shape[0]}")
        diff = Za.astype(np.float64) - Zb.astype(np.float64)
        d = np.sqrt(np.einsum("ij,ij->i", diff, diff)).astype(np.float32)
        if sa and sb:
            return bool(d[0] <= threshold) if threshold is not None else float(d[0])
        return d <= threshold if threshold is not None else d

    # ------------------------------------------------------------------------ description
    def summary(self):
        """A text description: the trunk's layer table (when built), loss, miner, optimizer.

        Returns the string (print it).
        """
        lines = []
        if self.net.built:
            lines.append(self.net.summary())
        else:
            lines.append(repr(self.net) + "\n(not built: shapes are inferred at the first fit)")
        lines.append(f"Loss: {self._describe(self.loss_func)}")
        lines.append(f"Miner: {self._describe(self.miner_func) if self.miner_func is not None else 'None (all pairs/triplets)'}")
        opt = self.optimizer if isinstance(self.optimizer, str) else getattr(self.optimizer, "__name__", "callable")
        extra = f", momentum={self.momentum:g}" if self.optimizer == "sgd" else ""
        lines.append(f"Optimizer: {opt}{extra}, weight_decay={self.weight_decay:g}")
        dist = "Euclidean between L2-normalized embeddings" if self._normalizes() else "Euclidean between raw embeddings"
        lines.append(f"Distance: {dist}; backend={self.backend!r}; fitted={self.fitted_}")
        return "\n".join(lines)

    @staticmethod
    def _describe(obj):
        attrs = []
        for name in ("margin", "pos_margin", "neg_margin", "type_of_triplets"):
            v = getattr(obj, name, None)
            if v is not None:
                attrs.append(f"{name}={v!r}" if isinstance(v, str) else f"{name}={float(v):g}")
        return f"{type(obj).__name__}({', '.join(attrs)})"

    def __repr__(self):
        loss = self._loss_spec if self._loss_spec is not None else type(self.loss_func).__name__
        return (f"Embedder(loss={loss!r}, margin={self.margin!r}, miner={self._miner_spec!r}, "
                f"backend={self.backend!r}, fitted={self.fitted_})")

    # -------------------------------------------------------------------------- persistence
    def _config(self):
        loss_spec = self._loss_spec
        if loss_spec is None:
            loss_spec = {"object": type(self.loss_func).__name__}
        miner_spec = self._miner_spec
        if miner_spec == "object":
            miner_spec = {"object": type(self.miner_func).__name__}
        return {
            "format": _FORMAT,
            "version": _FORMAT_VERSION,
            "trunk": self.net.get_config(),
            "loss": loss_spec,
            "margin": self.margin if self._loss_spec is not None else None,
            "miner": miner_spec,
            "optimizer": self.optimizer if isinstance(self.optimizer, str) else "sgd",
            "momentum": self.momentum,
            "weight_decay": self.weight_decay,
            "m_per_class": self.m_per_class,
            "seed": self.seed if isinstance(self.seed, int) else None,
            "backend": self.backend,
            "input_shape": list(self.input_shape_),
            "embed_dim": self.embed_dim_,
            "history": {"loss": [float(v) for v in self.history_.get("loss", [])]},
        }

    def save(self, path):
        """Write the fitted Embedder to one ``.npz`` file at ``path`` (exactly that name).

        Contents: the trunk's parameters (``"trunk/0.weight"``, ...), the loss's learnable
        parameters if any (``"loss/<i>"``), and ``"__config__"``: a JSON string (trunk layers,
        loss, margin, miner, optimizer settings, input shape, embedding size, history). The
        file is written to a temporary file in the same directory, then renamed onto ``path``
        (``os.replace``), so readers never see a partial file. Custom loss/miner/optimizer
        objects are recorded by class name only: :meth:`load` restores the trunk exactly and
        falls back to the default recipe for them (with a warning).

        Raises RuntimeError before fit; TypeError for a non-path ``path``; OSError when the
        directory does not exist or is not writable.
        """
        self._check_fitted()
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
        path = os.fspath(path)
        arrays = {_PARAM_PREFIX + name: a for name, a in self.net.state_arrays().items()}
        loss_params = getattr(self.loss_func, "parameters", None)
        if callable(loss_params):
            for i, p in enumerate(loss_params()):
                arrays[f"{_LOSS_PARAM_PREFIX}{i}"] = np.array(p.data, copy=True)
        arrays[_CONFIG_KEY] = np.array(json.dumps(self._config()))
        return atomic_write(path, lambda f: np.savez(f, **arrays), suffix=".npz.tmp")

    @classmethod
    def load(cls, path, backend=None):
        """Read an Embedder written by :meth:`save`; ready to ``embed`` / ``retrieve`` / ``verify``
        (and to ``fit`` further).

        Parameters
        ----------
        path : str or os.PathLike
        backend : {"mantissa", "numpy"} or None, default None
            None: the backend recorded in the file.

        Loading never unpickles (``numpy.load(..., allow_pickle=False)``), so a file cannot run
        code. Raises FileNotFoundError for a missing file and ValueError naming ``path`` for
        a truncated, corrupt or foreign file, a missing key, or arrays that do not fit the
        recorded trunk.
        """
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
        path = os.fspath(path)
        if not os.path.exists(path):
            raise FileNotFoundError(f"no such Embedder file: {path!r}")
        try:
            f = np.load(path, allow_pickle=False)
            if not isinstance(f, np.lib.npyio.NpzFile):
                raise ValueError("a single .npy array, not an .npz archive")
            with f:
                if _CONFIG_KEY not in f.files:
                    raise ValueError(f"missing the {_CONFIG_KEY!r} entry")
                arrays = {k: f[k] for k in f.files}
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zipfile.LargeZipFile) as exc:
            raise ValueError(f"{path!r} is not a readable mantissa-embed Embedder file ({exc})") from None
        try:
            cfg = json.loads(str(arrays.pop(_CONFIG_KEY)[()]))
            if not isinstance(cfg, dict) or cfg.get("format") != _FORMAT:
                raise ValueError(f"the config's format is not {_FORMAT!r}")
            if cfg.get("version") != _FORMAT_VERSION:
                raise ValueError(f"unsupported format version {cfg.get('version')!r}")
            return cls._from_config(cfg, arrays, backend)
        except (ValueError, TypeError, KeyError, AttributeError, RuntimeError) as exc:
            raise ValueError(f"{path!r} is not a valid mantissa-embed Embedder file ({exc})") from None

    @classmethod
    def _from_config(cls, cfg, arrays, backend):
        from .layers import Sequential

        backend = cfg["backend"] if backend is None else backend
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        trunk = dict(cfg["trunk"])
        trunk["backend"] = backend
        trunk_shape = trunk.pop("input_shape", None)  # built below, once the arrays are checked
        net = Sequential.from_config(trunk)
        input_shape = tuple(check_int(s, f"input_shape[{i}]", minimum=1) for i, s in enumerate(cfg["input_shape"]))
        if trunk_shape is not None and list(trunk_shape) != list(input_shape):
            raise ValueError(f"the trunk's input_shape {trunk_shape} differs from input_shape {list(input_shape)}")
        state = {k[len(_PARAM_PREFIX):]: v for k, v in arrays.items() if k.startswith(_PARAM_PREFIX)}
        # compare the config's parameter shapes with the stored arrays before build() allocates
        # them, so a manipulated config (absurd layer sizes) cannot trigger a huge allocation
        shapes = net._state_shapes(input_shape)
        missing, unexpected = sorted(set(shapes) - set(state)), sorted(set(state) - set(shapes))
        if missing or unexpected:
            raise ValueError(f"state arrays do not match the model: missing {missing}, unexpected {unexpected}")
        for name, shape in shapes.items():
            if state[name].shape != shape:
                raise ValueError(f"arrays[{name!r}] must have shape {shape}, got {state[name].shape}")
        net.build(input_shape)
        net.load_state_arrays(state)

        loss, margin, miner = cfg["loss"], cfg["margin"], cfg["miner"]
        if isinstance(loss, dict) or isinstance(miner, dict):
            warnings.warn(f"the saved Embedder used a custom loss or miner ({loss!r}, {miner!r}); it is replaced by "
                          "the default recipe (only matters for further training)", stacklevel=3)
            if isinstance(loss, dict):
                loss, margin = "triplet", None
            if isinstance(miner, dict):
                miner = "default"
        if miner is None:
            miner = None
        seed = cfg.get("seed")
        emb = cls(net, loss=loss, margin=margin, seed=0 if seed is None else seed, backend=backend, miner=miner,
                  optimizer=cfg.get("optimizer", "sgd"), momentum=cfg.get("momentum"),
                  weight_decay=cfg.get("weight_decay", 0.0), m_per_class=cfg.get("m_per_class"))
        loss_keys = sorted((k for k in arrays if k.startswith(_LOSS_PARAM_PREFIX)),
                           key=lambda k: int(k[len(_LOSS_PARAM_PREFIX):]))
        loss_params = getattr(emb.loss_func, "parameters", None)
        if loss_keys and callable(loss_params):
            params = list(loss_params())
            if len(params) != len(loss_keys):
                raise ValueError(f"{len(loss_keys)} saved loss parameters, the loss has {len(params)}")
            for p, k in zip(params, loss_keys):
                p.assign(arrays[k])
        unknown = [k for k in arrays if not k.startswith((_PARAM_PREFIX, _LOSS_PARAM_PREFIX))]
        if unknown:
            raise ValueError(f"unexpected entries {unknown}")
        emb.input_shape_ = input_shape
        emb._check_trunk_output(input_shape)
        emb.embed_dim_ = int(net.output_shape(input_shape)[0])
        if cfg.get("embed_dim") is not None and int(cfg["embed_dim"]) != emb.embed_dim_:
            raise ValueError(f"embed_dim {cfg['embed_dim']} does not match the trunk's output {emb.embed_dim_}")
        emb.history_ = {"loss": [float(v) for v in cfg.get("history", {}).get("loss", [])]}
        emb.fitted_ = True
        emb.net.eval()
        return emb
