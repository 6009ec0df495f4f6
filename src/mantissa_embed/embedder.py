"""The :class:`Embedder`: train a trunk by metric learning, then embed, retrieve and verify.

One network, run once per batch: a class-balanced batch (``MPerClassSampler``) goes through the
trunk, a miner picks pairs or triplets among the batch's embeddings, the loss returns its
gradient with respect to the embeddings, ``Sequential.backward`` turns it into parameter
gradients and the optimizer steps. A "Siamese" or "triplet" network is this same network
applied to the rows of one batch; no second copy of the weights exists. The loop is
:mod:`mantissa_embed._training`, files :mod:`mantissa_embed._persistence`, and embedding,
retrieval and verification :mod:`mantissa_embed._inference`.
"""
from __future__ import annotations

import math

import numpy as np

from . import _inference, _persistence
from ._recipe import DEFAULTS, OPTIMIZERS, choose_m, make_loss, make_miner, make_optimizer
from ._training import EpochCallback, HookList, Profiler, ProgressBar, profile_table, train_epochs
from ._validation import as_generator, check_array, check_float, check_int, check_labels
from .backend import BACKENDS
from .layers import Layer, Sequential
from .samplers import MPerClassSampler

__all__ = ["Embedder", "DEFAULTS"]


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
        SGD momentum (torch semantics). None: ``DEFAULTS["momentum"]`` (0.0).
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
    Belongie & Lim 2020, "PyTorch Metric Learning", arXiv:2008.09164).
    """

    def __init__(self, layers, loss="triplet", margin=None, seed=0, backend="mantissa", miner="default",
                 optimizer="sgd", momentum=None, weight_decay=0.0, m_per_class=None):
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

        self._loss_spec, self.loss_func, self.margin = make_loss(loss, margin, backend)
        self._miner_spec, self.miner_func = make_miner(miner, self.loss_func, backend)
        if isinstance(optimizer, str):
            if optimizer not in OPTIMIZERS:
                raise ValueError(f"optimizer must be one of {OPTIMIZERS} or a callable, got {optimizer!r}")
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
    def _normalizes(self):
        dist = getattr(self.loss_func, "distance", None)
        return bool(getattr(dist, "normalize_embeddings", True))

    def _make_optimizer(self, lr):
        return make_optimizer(self.optimizer, self.parameters(), lr, self.momentum, self.weight_decay, self.backend)

    def _choose_m(self, batch_size, n_classes):
        return self.m_per_class if self.m_per_class is not None else choose_m(batch_size, n_classes)

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
            Profiling does not change the numbers (same weights as an unprofiled fit).

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
        self.history_ = {"loss": []}
        self.profile_ = None
        hooks = ([ProgressBar()] if verbose else []) + ([EpochCallback(callback)] if callback is not None else [])
        profiler = Profiler(self.net) if profile else None
        if profiler is not None:
            hooks.append(profiler)
        train_epochs(self.net, self.miner_func, self.loss_func, opt, X, y, sampler, epochs=epochs,
                     n_batches=n_batches, batch_size=batch_size, lr=lr, losses=self.history_["loss"],
                     hooks=HookList(hooks))
        if profiler is not None:
            self.profile_ = profiler.result(epochs)
        self.net.eval()
        self.input_shape_ = tuple(X.shape[1:])
        self.embed_dim_ = int(self.net.output_shape(self.input_shape_)[0])
        self.fitted_ = True
        return self

    def profile_summary(self):
        """A text table of :attr:`profile_` (the last ``fit(..., profile=True)``): seconds and
        share of the total for every layer's forward and backward, the miner, the loss, the
        optimizer, the batch gathering and the rest. Returns the string (print it).

        Raises RuntimeError when no profiled fit has run.
        """
        p = getattr(self, "profile_", None)
        if not p:
            raise RuntimeError("no profile: call fit(X, y, profile=True) first")
        return profile_table(p)

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
        return _inference.embed(self, X, "X", batch_size, normalize)

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
        return _inference.retrieve(self, query, gallery, k)

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
        return _inference.verify(self, a, b, threshold)

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
        return _persistence.save(self, path)

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
        return _persistence.load(cls, path, backend)
