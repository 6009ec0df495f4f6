"""The inference half of ``Embedder``: ``embed``, ``retrieve``,
``build_index``, ``verify``, ``calibrate`` and ``evaluate`` (bodies in ``_inference`` and
``_calibration``). Each takes the Embedder's lock (see the class docstring).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._typing import ArrayLike, Float32Array, Int64Array, Seed
from .._validation import check_bool, check_int
from ..datasets.image_dataset import ImageDataset
from ..evaluation.query_gallery import query_gallery_metrics
from ..index import Index
from . import _calibration, _inference

__all__ = ["EmbedderInference"]


class EmbedderInference:
    """Mixed into ``Embedder`` (which provides ``_lock``,
    ``_check_fitted``, ``embed_dim_``, ``threshold_`` and ``calibration_``)."""

    if TYPE_CHECKING:
        _lock: threading.RLock
        backend: str
        embed_dim_: int | None
        threshold_: float | None
        calibration_: dict[str, Any] | None

        def _check_fitted(self) -> None: ...

    def embed(
        self,
        X: ArrayLike | ImageDataset,
        batch_size: int = 256,
        normalize: bool = True,
        *,
        verbose: bool = False,
    ) -> Float32Array:
        """Embed images or feature vectors in chunks of ``batch_size`` (bounded memory).

        Parameters
        ----------
        X : array_like, float, shape (n, *input_shape_): (n, C, H, W) or (n, F); or an ImageDataset
            Images, or feature vectors for a feature trunk, of the shape seen by ``fit``;
            converted to float32 chunk by chunk (no full copy of ``X``). NaN/Inf are rejected.
            A dataset (``datasets.ImageFolder`` / ``ImageCSV``) is decoded in eval mode, on
            its ``num_workers`` threads while the previous chunk is embedded; the result
            equals ``embed`` of the same images decoded into one array, bitwise.
        batch_size : int >= 1, default 256
        normalize : bool, default True
            Return L2-normalized rows (the space the loss trains and ``retrieve`` /
            ``verify`` measure). False: the trunk's raw output.
        verbose : bool, default False
            For a dataset: a tqdm bar with images/s.

        Returns
        -------
        ndarray, float32, shape (n, D), C-contiguous, freshly allocated.

        Raises
        ------
        RuntimeError
            Before ``fit`` (unless the Embedder was loaded with ``load``).
        TypeError / ValueError
            Non-numeric ``X``; wrong ndim or per-sample shape; NaN/Inf; a bad ``batch_size``.
        ValueError
            A finite image whose embedding is not (the network overflowed float32: rescale the
            images); the message names it (``X[i]``). No numpy warning is shown.
        """
        self._check_fitted()
        batch_size = check_int(batch_size, "batch_size", minimum=1)
        for name, v in (("normalize", normalize), ("verbose", verbose)):
            check_bool(v, name)
        with self._lock:
            return _inference.embed(self, X, "X", batch_size, normalize, progress=bool(verbose))

    def retrieve(self, query: ArrayLike, gallery: ArrayLike, k: int = 5) -> tuple[Int64Array, Float32Array]:
        """The ``k`` nearest gallery items of each query, nearest first.

        Parameters
        ----------
        query : array_like
            One input, a batch of inputs, one embedding ``(D,)`` or a batch of embeddings
            ``(n, D)``. Inputs have the shape ``fit`` saw (``input_shape_``): images ``(C, H,
            W)`` / ``(n, C, H, W)``, or feature vectors ``(F,)`` / ``(n, F)`` for a feature
            trunk.
        gallery : array_like or Index
            Inputs ``(m, *input_shape_)`` or embeddings ``(m, D)`` (e.g. ``embed(X_gallery)``,
            so a fixed gallery is embedded once and reused), or an
            ``Index`` (``build_index``): then the index's ids
            are returned instead of row indices.

            Inputs or embeddings is decided by shape: an array of the input shape is inputs,
            a 2-D ``(n, D)`` / 1-D ``(D,)`` array otherwise is embeddings (for an image trunk a
            2-D array is always embeddings). For a feature trunk whose input width ``F``
            equals the embedding size ``D``, such arrays are inputs (inputs win); search
            precomputed embeddings then with an ``Index`` directly:
            ``index.Index(D).add(Z).search(Zq, k)`` (``Z``, ``Zq`` from ``embed``, so
            L2-normalized: the same distances).
        k : int, 1 <= k <= m, default 5

        Returns
        -------
        indices : ndarray, int64, shape (n, k) -- or (k,) for a single query
            Gallery row indices, nearest first (ties: lower index first).
        distances : ndarray, float32, same shape
            Euclidean distances between L2-normalized embeddings (the trained distance). The
            k are ranked by distances computed exactly (float64 differences): the answer of a
            float64 brute force, ties by lower index (SGEMM-ranked candidates with a certified
            margin, ``mantissa_embed.embedder._exact_knn``). An Index gallery ranks as
            ``Index.search``.

        Raises
        ------
        RuntimeError  before fit / load.
        ValueError    bad shapes, NaN/Inf, embedding size mismatch, ``k`` larger than the gallery;
                      an image whose embedding overflowed (named: ``query[i]`` / ``gallery[i]``).
        TypeError     non-numeric inputs, non-int ``k``.
        """
        with self._lock:
            return _inference.retrieve(self, query, gallery, k)

    def build_index(
        self,
        X: ArrayLike | ImageDataset,
        labels: ArrayLike | None = None,
        ids: ArrayLike | None = None,
        **kwargs: Any,
    ) -> Index:
        """An ``Index`` of the embeddings of ``X`` (inputs or
        embeddings, told apart as in ``retrieve``, or an ``ImageDataset``, streamed), searchable
        by ``retrieve``: ``Index(embed_dim_, "euclidean", **kwargs)`` (``dtype=``,
        ``keep_float32=``) with ``add(embeddings, ids, labels)``; for a dataset ``labels``
        defaults to ``X.labels``. Raises as ``embed`` and ``Index``."""
        self._check_fitted()
        if isinstance(X, ImageDataset) and labels is None:
            labels = X.labels
        with self._lock:
            Z, _ = _inference.as_embeddings(self, X, "X", allow_single=False)
        dim: int = self.embed_dim_  # type: ignore[assignment]  # set once fitted (checked above)
        return Index(dim, "euclidean", **kwargs).add(Z, ids=ids, labels=labels)

    def verify(
        self, a: ArrayLike, b: ArrayLike, threshold: float | str | None = "calibrated"
    ) -> float | bool | np.ndarray:
        """Distance between ``a`` and ``b`` in the trained embedding space; with ``threshold``,
        whether they are "the same" (``distance <= threshold``).

        Parameters
        ----------
        a, b : array_like
            Each one input (image ``(C, H, W)`` or, for a feature trunk, feature vector
            ``(F,)``), one embedding ``(D,)``, or a batch of either (``(n, *input_shape_)`` /
            ``(n, D)``). Two batches must have the same length (pairwise); a single item
            against a batch is compared with every row. Inputs or embeddings: as ``retrieve``
            (by shape; for a feature trunk with ``F == D``, arrays are inputs; compare
            precomputed embeddings then directly: ``np.linalg.norm(Za - Zb, axis=-1)``).
        threshold : float >= 0, None or "calibrated", default "calibrated"
            ``"calibrated"``: ``threshold_`` from ``calibrate`` (saved with the model),
            or None when the Embedder was never calibrated. None: return the distances.

        Returns
        -------
        float (or bool with ``threshold``) when both are single items; otherwise an ndarray
        of shape (n,), float32 (or bool).

        Raises
        ------
        RuntimeError  before fit / load.
        ValueError    bad shapes, NaN/Inf, mismatched batch lengths, a negative threshold; an
                      image whose embedding overflowed (named: ``a[i]`` / ``b``).
        TypeError     non-numeric inputs or threshold.
        """
        if isinstance(threshold, str):
            if threshold != "calibrated":
                raise TypeError(f"threshold must be a number (>= 0), None or 'calibrated', got {threshold!r}")
            threshold = self.threshold_
        with self._lock:
            return _inference.verify(self, a, b, threshold)

    def calibrate(
        self,
        X: ArrayLike | ImageDataset,
        y: ArrayLike | None = None,
        *,
        target_far: float | None = None,
        target_precision: float | None = None,
        max_accuracy: bool = False,
        n_pairs: int = 100_000,
        seed: Seed = 0,
        batch_size: int = 256,
    ) -> dict[str, Any]:
        """Choose the verification threshold on labelled data (inputs ``(n, *input_shape_)``:
        images or feature vectors, or embeddings ``(n, D)``, told apart as in ``retrieve``, with
        int labels ``y``; or an ``ImageDataset``, streamed, with ``y`` None: its labels; best
        of identities held out from training)
        and keep it as ``threshold_``: ``verify`` then answers with it, ``save``
        stores it. One rule: ``target_far`` (float in [0, 1]: the largest threshold with FAR <= it;
        the default, 1e-3, when none is given), ``target_precision`` (in (0, 1]: the largest
        threshold whose precision, pairs weighted to their share among all pairs of ``y``,
        reaches it) or ``max_accuracy=True`` (best balanced accuracy). ``n_pairs`` (>= 1, default
        100000) positive and as many negative pairs are drawn with ``seed`` (uniform per kind,
        without building the n^2 pairs; every ordered pair when there are at most 2 ``n_pairs``). Rules and the draw: ``mantissa_embed.embedder._calibration``.

        Returns a dict, also stored as ``calibration_``: ``threshold``, ``far``, ``tar``,
        ``precision`` (None when nothing is accepted), ``balanced_accuracy``, ``rule``,
        ``target``, ``n_positive_pairs`` / ``n_negative_pairs``, ``positive_pairs_total`` /
        ``negative_pairs_total``, ``seed``.

        Raises RuntimeError before fit / load; TypeError / ValueError for more than one rule,
        targets out of range, labels without a positive or a negative pair, bad shapes.
        Source: TensorFlow Similarity's ``calibrate``; FAR / TAR as in NIST FRVT.
        """
        self._check_fitted()
        y = _inference.labels_for(X, y, "y")
        with self._lock:
            cal = _calibration.calibrate(
                self,
                X,
                y,
                target_far=target_far,
                target_precision=target_precision,
                max_accuracy=max_accuracy,
                n_pairs=n_pairs,
                seed=seed,
                batch_size=batch_size,
            )
            self.threshold_, self.calibration_ = cal["threshold"], cal
            return dict(cal)

    def evaluate(
        self,
        X: ArrayLike | ImageDataset,
        labels: ArrayLike | None = None,
        *,
        is_query: ArrayLike | None = None,
        is_gallery: ArrayLike | None = None,
        metrics: Sequence[str] = ("cmc_at_1", "cmc_at_5", "precision_at_5", "mean_average_precision_at_r"),
        batch_size: int = 256,
        verbose: bool = False,
    ) -> dict[str, float]:
        """Retrieval quality in Open Metric Learning's query/gallery protocol.

        Embeds ``X`` (``embed``: L2-normalized as trained), then each query ranks the gallery
        by Euclidean distance, its own row excluded
        (``evaluation.query_gallery_metrics``).

        Parameters
        ----------
        X : ImageDataset, or inputs / embeddings (told apart as in ``retrieve``)
            An ``ImageCSV`` with ``is_query`` / ``is_gallery`` columns uses its flags (pass
            ``ds.split("validation")``); an ``ImageFolder`` (or a CSV without them): every
            image queries all the others.
        labels : array_like of int, shape (n,), or None
            Required for arrays; None for a dataset (its labels).
        is_query, is_gallery : array_like of bool, shape (n,), or None
            Override the dataset's flags; None: the dataset's, or every item for arrays.
        metrics : sequence of str, default ("cmc_at_1", "cmc_at_5", "precision_at_5", "mean_average_precision_at_r")
            ``cmc_at_K`` (the fraction of queries with a same-class gallery item among the K
            nearest), ``precision_at_K`` (OML's: same-class items among the K nearest over
            min(K, their number)), ``precision_at_1``, ``r_precision``,
            ``mean_average_precision_at_r``. Queries without a same-class gallery item are
            left out (as pytorch-metric-learning's ``AccuracyCalculator``).
        batch_size : int >= 1, default 256
        verbose : bool, default False
            A tqdm bar while a dataset is embedded.

        Returns
        -------
        dict metric name -> float. The k-NN metrics equal ``AccuracyCalculator``'s on the
        same embeddings.

        Raises RuntimeError before fit / load; ValueError / TypeError for bad inputs, flags,
        metric names, or no query with a same-class gallery item.
        Source: Open Metric Learning (Shabanov et al.), ``calc_retrieval_metrics``; MAP@R:
        Musgrave, Belongie & Lim 2020, "A Metric Learning Reality Check".
        """
        self._check_fitted()
        batch_size = check_int(batch_size, "batch_size", minimum=1)
        check_bool(verbose, "verbose")
        labels = _inference.labels_for(X, labels, "labels")
        if isinstance(X, ImageDataset):
            if is_query is None or is_gallery is None:  # the dataset's flags, unless both are given
                q, g = X.query_gallery()
                is_query = q if is_query is None else is_query
                is_gallery = g if is_gallery is None else is_gallery
            with self._lock:
                Z = _inference.embed(self, X, "X", batch_size, progress=bool(verbose))
        else:
            with self._lock:
                Z, _ = _inference.as_embeddings(self, X, "X", allow_single=False, batch_size=batch_size)
        return query_gallery_metrics(Z, labels, is_query, is_gallery, metrics=metrics, backend=self.backend)
