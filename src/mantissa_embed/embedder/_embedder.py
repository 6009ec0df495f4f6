"""The ``Embedder``: train a trunk by metric learning, then embed, retrieve and verify.

One network, run once per batch: a class-balanced batch (``MPerClassSampler``) goes through the
trunk, a miner picks pairs or triplets among the batch's embeddings, the loss returns its
gradient with respect to the embeddings, ``Sequential.backward`` turns it into parameter
gradients and the optimizer steps. A "Siamese" or "triplet" network is this same network
applied to the rows of one batch; no second copy of the weights exists.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .. import datasets
from .._typing import ArrayLike
from .._validation import as_generator, check_float, check_int
from ..backend import BACKENDS
from ..layers import Layer, Sequential
from . import _fit_data, _fitting
from ._fit_settings import FitSettings
from ._hooks import profile_table
from ._inference_methods import EmbedderInference
from ._param_groups import check_lr_groups
from ._persistence import EmbedderPersistence
from ._recipe import DEFAULTS, OPTIMIZERS, build_loss, choose_m, make_loss, make_miner, make_optimizer
from ._summary import describe

if TYPE_CHECKING:
    from ..parameter import Parameter

__all__ = ["Embedder"]


class Embedder(EmbedderInference, EmbedderPersistence):
    """Metric learning on a trunk: ``fit`` / ``embed`` / ``retrieve`` / ``verify``.

    Inputs are images ``(N, C, H, W)`` for a CNN trunk, or feature vectors ``(N, F)`` (features
    from any other model) for a trunk that takes them (``models.mlp_embedder``, or any trunk
    starting with ``Dense``). The first ``fit`` decides which from ``X`` (``input_shape_``);
    later calls must match it.

    Parameters
    ----------
    layers : list of Layer or Sequential
        The trunk. Its output must be 2-D ``(N, D)`` (end with ``Flatten``/``Dense``), e.g.
        ``models.small_cnn_embedder(embed_dim=16)`` for images or ``models.mlp_embedder(16)``
        for feature vectors. A list is wrapped in
        ``Sequential(layers, seed=seed, backend=backend)``; a ``Sequential`` is used as is (its
        backend is set to ``backend``).
    loss : str or a loss object, default "default"
        ``"default"``: ``DEFAULTS["loss"]`` (``"proxy_anchor"``, the recipe of
        docs/recipes/training.md). ``"proxy_anchor"``: ``losses.ProxyAnchorLoss(num_classes,
        embedding_size, margin, alpha=32)`` (Kim et al. 2020, CVPR), built at the first fit
        from the classes of ``y`` and the trunk's output size; its proxies learn at
        ``lr * loss_lr_factor``. ``"multi_similarity"``: ``losses.MultiSimilarityLoss()`` with
        ``miners.MultiSimilarityMiner()`` (Wang et al. 2019, CVPR). ``"triplet"``:
        ``losses.TripletMarginLoss(margin)`` on batch-hard triplets (Schroff et al. 2015,
        "FaceNet"; Hermans et al. 2017). ``"contrastive"``:
        ``losses.ContrastiveLoss(pos_margin=0, neg_margin=margin)`` on all pairs (Hadsell et al.
        2006). A loss object: any callable ``loss(embeddings, labels, indices_tuple=None)``
        returning a ``LossOutput``; its ``parameters()``, if any, are trained with the trunk's.
    margin : float or None, default None
        The loss margin. None: 0.1 for ``"proxy_anchor"`` and ``"triplet"``, 1.0 for
        ``"contrastive"`` (``DEFAULTS``). Must be None for a loss object or ``"multi_similarity"``.
    seed : int >= 0 or numpy.random.Generator, default 0
        Seeds the trunk's initialization (when ``layers`` is a list), the proxies, the batch
        sampler and the augmentation.
    backend : {"mantissa", "numpy"}, default "mantissa"
        ``"mantissa"``: every kernel on the C engine; ``"numpy"``: on the numpy reference twins.
    miner : str, miner object or None, default "default"
        Which pairs/triplets of a batch the loss sees. ``"default"``: ``"multi_similarity"``
        for the multi-similarity loss, None (every pair / triplet) otherwise.
        ``"semihard"``, ``"hard"``, ``"easy"``, ``"all"``: ``miners.TripletMarginMiner(margin=
        <the triplet margin>, type_of_triplets=...)``; ``"batch_hard"``:
        ``miners.BatchHardMiner()``; ``"pair_margin"``: ``miners.PairMarginMiner`` with the
        contrastive loss's margins; ``"multi_similarity"``: ``miners.MultiSimilarityMiner()``;
        None: every valid pair/triplet; an object: any callable ``miner(embeddings, labels)``.
    optimizer : {"default", "adamw", "adam", "sgd"} or callable, default "default"
        ``"default"``: decided at each ``fit`` from its ``lr``: ``"sgd"`` for an ``lr`` of at
        least ``DEFAULTS["sgd_min_lr"]`` (0.01, an SGD step size), else ``"adamw"``
        (``lr=None`` included). ``optim.AdamW`` / ``optim.Adam`` / ``optim.SGD`` (torch
        semantics) over the trunk's groups (one per ``lr_groups`` multiplier) and the loss's;
        a callable ``optimizer(params, lr)`` returning an object with ``zero_grad()``, ``step()``.
        A fresh optimizer is created at every ``fit`` (except ``resume=True``).
    momentum : float >= 0 or None, default None
        SGD momentum. None: ``DEFAULTS["momentum"]`` (0.0).
    weight_decay : float >= 0 or None, default None
        None: ``DEFAULTS["weight_decay"][<the optimizer a fit runs>]`` (AdamW 1e-4, decoupled;
        else 0).
    m_per_class : int or None, default None
        Samples per class in a batch. None: the smallest divisor ``m >= 2`` of ``batch_size``
        with ``m * num_classes >= batch_size`` and at least two classes per batch (5 classes,
        batch 64: m = 16; 40 classes: m = 2).
    loss_lr_factor : float >= 0 or None, default None
        The loss's parameters learn at ``lr`` times this; None: ``DEFAULTS["loss_lr_factor"]``
        (100, as proxy losses usually need).
    lr_groups : dict str -> float >= 0, or None, default None
        lr multipliers by trunk parameter-name prefix (fine-tuning): ``{"head": 10.0}`` trains
        ``"head"`` / ``"head.<...>"`` (``net.named_parameters()``) at ``10 * lr``, the longest
        matching prefix winning, the rest at ``lr``; one optimizer group per multiplier, then
        the loss's. A prefix matching no parameter: ValueError at ``fit``. Frozen parameters
        (``net.freeze``) are left out of the optimizer (docs/weights.md, "Fine-tuning").

    Attributes
    ----------
    net : Sequential
        The trunk.
    loss_func, miner_func : the loss and miner objects in use (``miner_func`` may be None).
    history_ : dict
        ``{"loss": [...], "val_<metric>": [...]}``: per epoch of the last fit.
    train_state_ : dict or None
        Where the last fit stands (epoch, step, plan): what ``fit(..., resume=True)`` continues.
    classes_ : ndarray or None
        The sorted class labels of the last fit.
    profile_ : dict or None
        Where the last ``fit(..., profile=True)`` spent its time (see ``fit``); None
        otherwise. ``profile_summary`` prints it as a table.
    input_shape_ : tuple or None
        Per-sample input shape seen by the first ``fit`` (None before): ``(C, H, W)`` for
        images, ``(F,)`` for feature vectors. Saved with the model.
    embed_dim_ : int or None
        ``D``, the embedding size (None before fit/load).

    Training (``fit``)
    ----------------------
    Each epoch draws ``ceil(len(X) / batch_size)`` batches from ``MPerClassSampler(y, m,
    batch_size)`` (``m`` images of each of ``batch_size // m`` random classes). Per batch:
    ``xb = augment(X[idx])``; ``E = net.forward(xb)``; ``tuples = miner(E, y[idx])``;
    ``optimizer.zero_grad()``; ``out = loss(E, y[idx], tuples)``; ``net.backward(out.grad)``;
    the schedule sets the lr; ``optimizer.step()`` (``mantissa_embed.embedder._training``).

    Distance
    --------
    ``embed`` returns **L2-normalized** embeddings by default (``normalize=True``), and
    ``retrieve`` / ``verify`` use the Euclidean distance between L2-normalized
    embeddings -- the distance the loss trains (PML's ``LpDistance(normalize_embeddings=True)``).
    A loss object whose ``distance.normalize_embeddings`` is False switches both to raw
    embeddings. Embeddings passed to ``retrieve`` / ``verify`` are normalized the same way
    (a no-op for ``embed``'s output).

    Threads: ``embed``, ``retrieve``, ``verify`` and ``save`` may be called from
    several threads on one Embedder and give the serial results (they share the trunk's buffers,
    so they take one lock in turn; the engine parallelizes each call itself). ``fit`` is
    single-caller: a second concurrent ``fit`` raises RuntimeError, and inference from another
    thread waits until the running fit returns. A trunk shared by two Embedders is not covered.

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

    def __init__(
        self,
        layers: Sequence[Layer] | Sequential,
        loss: str | Callable[..., Any] = "default",
        margin: float | None = None,
        seed: int | np.random.Generator = 0,
        backend: str = "mantissa",
        miner: str | Callable[..., Any] | None = "default",
        optimizer: str | Callable[..., Any] = "default",
        momentum: float | None = None,
        weight_decay: float | None = None,
        m_per_class: int | None = None,
        loss_lr_factor: float | None = None,
        lr_groups: Mapping[str, float] | None = None,
    ) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.backend = backend
        if not isinstance(seed, np.random.Generator):
            seed = check_int(seed, "seed", minimum=0)
        self.seed = seed
        if isinstance(layers, Sequential):
            net = layers.set_backend(backend)
        elif isinstance(layers, Layer):
            raise TypeError(
                "layers must be a list of Layer objects or a Sequential, got a single "
                f"{type(layers).__name__} (wrap it in a list)"
            )
        elif isinstance(layers, (list, tuple)):
            net = Sequential(layers, seed=seed, backend=backend)
        else:
            raise TypeError(
                f"layers must be a list of Layer objects or a Sequential, got {type(layers).__name__}"
            )
        self.net = net

        self._loss_spec, self.loss_func, self.margin = make_loss(loss, margin, backend)
        self._miner_spec, self.miner_func = make_miner(miner, self.loss_func, backend)
        if isinstance(optimizer, str):
            if optimizer != "default" and optimizer not in OPTIMIZERS:
                raise ValueError(
                    f"optimizer must be one of {('default',) + OPTIMIZERS} or a callable, got {optimizer!r}"
                )
        elif not callable(optimizer):
            raise TypeError(
                f"optimizer must be one of {('default',) + OPTIMIZERS} or a callable(params, lr), "
                f"got {type(optimizer).__name__}"
            )
        self.optimizer = optimizer
        self.momentum = check_float(
            DEFAULTS["momentum"] if momentum is None else momentum, "momentum", minimum=0.0
        )
        self.weight_decay = (
            None if weight_decay is None else check_float(weight_decay, "weight_decay", minimum=0.0)
        )
        self.m_per_class = None if m_per_class is None else check_int(m_per_class, "m_per_class", minimum=1)
        self.loss_lr_factor = check_float(
            DEFAULTS["loss_lr_factor"] if loss_lr_factor is None else loss_lr_factor,
            "loss_lr_factor",
            minimum=0.0,
        )
        self.lr_groups = check_lr_groups(lr_groups)
        self._rng = as_generator(seed)
        self.train_state_ = None
        self.classes_ = None
        self.history_: dict[str, list[float]] = {"loss": []}
        self.input_shape_: tuple[int, ...] | None = tuple(net.input_shape) if net.built else None
        self.embed_dim_: int | None = None
        self.fitted_ = False
        self.optimizer_ = None
        self.profile_ = None
        self.threshold_ = None
        self.calibration_ = None
        # inference (embed / retrieve / verify / save) shares the trunk's buffers: one call at a
        # time, re-entrant for fit's own validation; fit holds it throughout and is single-caller
        self._lock = threading.RLock()
        self._fit_guard = threading.Lock()

    # ------------------------------------------------------------------ construction helpers
    def _normalizes(self) -> bool:
        dist = getattr(self.loss_func, "distance", None)
        return bool(getattr(dist, "normalize_embeddings", True))

    def _make_optimizer(self, groups: list[dict[str, Any]], name: str | None) -> Any:
        """The optimizer over ``groups``: ``name`` (``fit``'s resolution of ``optimizer``, see
        ``_recipe.resolve_optimizer``), or the callable ``optimizer`` when ``name`` is None."""
        wd = self.weight_decay
        if wd is None:
            wd = DEFAULTS["weight_decay"].get(name, 0.0) if name is not None else 0.0
        return make_optimizer(
            self.optimizer if name is None else name, groups, self.momentum, wd, self.backend
        )

    def _choose_m(self, batch_size: int, n_classes: int) -> int:
        return choose_m(batch_size, n_classes, self.m_per_class)

    def _ensure_loss(self, n_classes: int, embed_dim: int) -> None:
        """Build a string loss that needs the class count (``"proxy_anchor"``) for ``n_classes``
        classes, or check that a loss object with ``num_classes`` has room for them."""
        loss = self.loss_func
        if self._loss_spec is not None and (
            loss is None
            or getattr(loss, "num_classes", n_classes) != n_classes
            or getattr(loss, "embedding_size", embed_dim) != embed_dim
        ):
            if self._loss_spec == "proxy_anchor":
                seed = self.seed if isinstance(self.seed, int) else int(self._rng.integers(2**31))
                self.loss_func = build_loss(
                    self._loss_spec, self.margin, n_classes, embed_dim, seed, self.backend
                )
            return
        have = getattr(loss, "num_classes", None)
        if isinstance(have, int) and have < n_classes:
            raise ValueError(f"the loss has num_classes={have}, but y has {n_classes} classes")
        have = getattr(loss, "embedding_size", None)
        if isinstance(have, int) and have != embed_dim:
            raise ValueError(
                f"the loss has embedding_size={have}, but the trunk outputs {embed_dim} dimensions"
            )

    # ------------------------------------------------------------------------------ training
    def parameters(self) -> list[Parameter]:
        """Every learnable ``Parameter``: the trunk's (layer order), then the loss's, if any.

        Empty for the trunk before its first forward (shapes are inferred then).
        """
        params = list(self.net.parameters())
        loss_params = getattr(self.loss_func, "parameters", None)
        if callable(loss_params):
            params += list(loss_params())
        return params

    def fit(
        self,
        X: ArrayLike | datasets.ImageDataset,
        y: ArrayLike | None = None,
        epochs: int = 1,
        batch_size: int = 64,
        lr: float | None = None,
        verbose: bool = False,
        *,
        validation: float | tuple[ArrayLike, ArrayLike] | None = None,
        metrics: Sequence[str] = ("precision_at_1", "mean_average_precision_at_r"),
        restore_best: bool = False,
        early_stopping: int | None = None,
        callbacks: Sequence[Any] = (),
        callback: Callable[[int, float], Any] | None = None,
        augment: str | Callable[..., Any] | None = "default",
        schedule: str | Callable[..., Any] | None = "default",
        resume: bool = False,
        profile: bool = False,
    ) -> Embedder:
        """Train the trunk by metric learning on images or feature vectors ``X`` with class
        labels ``y``.

        Parameters
        ----------
        X : array_like, float, shape (N, C, H, W) or (N, F); or an ImageDataset
            Images (NCHW) or feature vectors (for a trunk that takes them, e.g.
            ``models.mlp_embedder``); converted to float32 once. NaN/Inf are rejected. The
            first fit decides the input shape (``input_shape_``); later fits (and
            ``validation`` data) must have the same per-sample shape. A dataset
            (``datasets.ImageFolder`` / ``ImageCSV``) is streamed from its files: each batch
            decoded on ``X.num_workers`` threads while the previous one trains, with
            ``X.train_transform`` (its parameters drawn from the Embedder's generator, so the
            result does not depend on the thread count) in place of ``augment``; the sampler
            reads ``X.labels`` only.
        y : array_like of int, shape (N,), or None
            Class labels (any ints; mapped to ``0 .. C-1`` in sorted order, ``classes_``).
            At least two classes. None (and only None) when ``X`` is a dataset: its labels.
        epochs : int >= 1, default 1
        batch_size : int, 4 <= batch_size <= 65536, default 64
            Images per batch; each epoch is ``ceil(N / batch_size)`` class-balanced batches of
            ``batch_size // m`` classes x ``m`` images (``m_per_class``). A size that cannot be
            split into at least two classes of at least two images (a prime) raises ValueError.
        lr : float > 0 or None, default None
            The trunk's learning rate; None: ``DEFAULTS["lr"][optimizer]`` (AdamW, Adam: 1e-3;
            SGD: 0.05). The loss's own parameters learn at ``lr * loss_lr_factor``. With
            ``optimizer="default"`` it also picks the optimizer: 0.01 or more runs SGD (the
            seed README's ``lr=0.05``), less (or None) AdamW; the one run is ``optimizer_``.
        verbose : bool, default False
            A tqdm progress bar per epoch with the running loss and the last validation metric.
        validation : None, float in (0, 1), (X_val, y_val) or an ImageDataset, keyword-only, default None
            Evaluated after every epoch. A float holds out that fraction of the *classes* of
            ``y`` (at least two, drawn with the Embedder's generator) with all their images
            (of a dataset: a ``subset``); each image queries all others (CSV flags: ``evaluate``).
        metrics : sequence of str, default ("precision_at_1", "mean_average_precision_at_r")
            Validation metrics among ``"precision_at_1"``, ``"r_precision"``,
            ``"mean_average_precision_at_r"`` (each validation image queries the others,
            itself excluded; ``retrieval_metrics``). Stored per
            epoch in ``history_["val_<name>"]``; the first one decides ``restore_best`` and
            ``early_stopping``.
        restore_best : bool, default False
            End with the weights of the epoch with the best first metric (of this call).
        early_stopping : int >= 1 or None, default None
            Stop after that many epochs without a better first metric.
        callbacks : sequence, default ()
            Objects with ``on_epoch_end(embedder, epoch, history)`` (or such callables), called
            after every epoch (``epoch`` from 0, after validation, ``history`` is ``history_``).
            A true return value stops training after that epoch. The Embedder is saveable
            inside a callback (a checkpoint that ``resume=True`` continues).
        callback : callable or None, default None
            Called as ``callback(epoch, mean_loss)`` after every epoch.
        augment : "default", "affine", "hflip", "affine+hflip", None or callable, default "default"
            Batch augmentation ``t(X_batch, rng)`` drawn from the Embedder's generator
            (``mantissa_embed.transforms``; presets: ``mantissa_embed.embedder._recipe.make_augment``).
            The presets transform images: for feature vectors ``(N, F)``, ``"default"`` means
            no augmentation and a preset name is a ValueError; a callable is applied to either.
            For a dataset ``X`` its ``train_transform`` is the augmentation and replaces this
            one (the two never stack): only ``"default"`` and None are accepted, both meaning
            "the dataset's".
        schedule : "default", "cosine", "step", "constant", None or a schedule, default "default"
            Learning-rate schedule stepped per batch over ``epochs * ceil(N / batch_size)``
            steps (``mantissa_embed.optim``); None keeps ``lr`` constant.
        resume : bool, default False
            Continue the checkpointed fit (this Embedder's last fit, or the one saved in the
            file it was loaded from) at its next epoch, with the same ``X``, ``y``,
            ``epochs`` and ``batch_size``: the optimizer state, the schedule position, the
            sampler and the random streams continue, so the result equals an uninterrupted run.
            ValueError when there is no checkpoint.
        profile : bool, default False
            Time every layer's forward and backward, the miner, the loss, the optimizer and the
            batch gathering (wall clock) into ``profile_`` (see ``profile_summary``).
            Profiling does not change the numbers.

        Returns
        -------
        self
            ``history_["loss"]`` holds the mean batch loss of every epoch (and the validation
            metrics); a new fit continues from the current weights with a fresh optimizer.
            Ctrl-C during a fit takes effect at the end of the current batch and leaves the
            Embedder fitted, in eval mode, with the weights of that step.

        Raises
        ------
        TypeError
            Non-numeric ``X``, non-integer ``y``, wrongly typed arguments.
        ValueError
            ``X`` neither 4-D nor 2-D, empty, or containing NaN/Inf; ``X`` of a rank the trunk
            does not take (feature vectors for a CNN, images for a trunk starting with
            ``Dense``); ``y`` of another length or with fewer
            than two classes; ``epochs < 1``; a ``batch_size`` / ``m_per_class`` layout without
            two classes of two images; ``lr <= 0``; a per-sample shape other than the trunk's
            (``input_shape_``); a trunk whose output is not 2-D; bad ``validation``,
            ``metrics``, ``augment`` (an image preset for feature vectors),
            ``schedule``; ``resume=True`` without a checkpoint.
        FloatingPointError
            Training diverged (the loss or the embeddings became NaN/Inf): lower ``lr``.
        """
        X, y = _fit_data.check_fit_data(self.net, X, y)
        settings = FitSettings(
            epochs=epochs,
            batch_size=batch_size,
            lr=lr,
            verbose=verbose,
            validation=validation,
            metrics=metrics,
            restore_best=restore_best,
            early_stopping=early_stopping,
            callbacks=callbacks,
            callback=callback,
            augment=augment,
            schedule=schedule,
            resume=resume,
            profile=profile,
            X=X,
        )
        self._check_trunk_output(_fit_data.sample_shape(X))
        if not self._fit_guard.acquire(blocking=False):
            raise RuntimeError(
                "fit is already running on this Embedder (in another thread, or called from "
                "one of its callbacks): training is single-caller"
            )
        try:
            with self._lock:
                return _fitting.fit(self, X, y, settings)
        finally:
            self._fit_guard.release()

    def profile_summary(self) -> str:
        """A text table of ``profile_`` (the last ``fit(..., profile=True)``): seconds and
        share of the total for every layer's forward and backward, the miner, the loss, the
        optimizer, the batch gathering and the rest. Returns the string (print it).

        Raises RuntimeError when no profiled fit has run.
        """
        p = getattr(self, "profile_", None)
        if not p:
            raise RuntimeError("no profile: call fit(X, y, profile=True) first")
        return profile_table(p)

    def _check_trunk_output(self, input_shape: Sequence[int]) -> None:
        out_shape = self.net.output_shape(tuple(input_shape))
        if len(out_shape) != 1:
            raise ValueError(
                f"the trunk must output one vector per image (N, D); for input {tuple(input_shape)} "
                f"it outputs per-sample shape {out_shape} (end it with Flatten() or Dense(D))"
            )

    # ----------------------------------------------------------------------------- inference
    def _check_fitted(self) -> None:
        if not self.fitted_:
            raise RuntimeError(
                "this Embedder is not fitted yet: call fit(X, y) first (or Embedder.load(path))"
            )

    def summary(self) -> str:
        """A text description: the trunk's layer table (when built), loss, miner, optimizer.

        Returns the string (print it).
        """
        return describe(self)

    def __repr__(self) -> str:
        loss = self._loss_spec if self._loss_spec is not None else type(self.loss_func).__name__
        return (
            f"Embedder(loss={loss!r}, margin={self.margin!r}, miner={self._miner_spec!r}, "
            f"backend={self.backend!r}, fitted={self.fitted_})"
        )
