"""TripletMarginLoss (Schroff, Kalenichenko & Philbin 2015), pytorch-metric-learning's formulation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import utils
from .._checks.arrays import check_bool
from .._validation import as_generator, check_float
from ..reducers import AvgNonZeroReducer
from .base_metric_loss_function import BaseMetricLossFunction

if TYPE_CHECKING:
    from .._typing import Seed


class TripletMarginLoss(BaseMetricLossFunction):
    """Triplet margin loss.

    ``TripletMarginLoss(margin=0.05, swap=False, smooth_loss=False, triplets_per_anchor="all",
    distance=None, reducer=None, embedding_regularizer=None, embedding_reg_weight=1,
    backend="mantissa", seed=None)``

    Every triplet (anchor a, positive p with the anchor's label, negative n with another label)
    charges ``[d_ap - d_an + margin]+`` (``softplus(d_ap - d_an + margin)`` when ``smooth_loss``;
    with a similarity ``s``: ``[s_an - s_ap + margin]+``), with ``d`` the distance (default
    ``LpDistance()``). The reducer (default ``AvgNonZeroReducer``, the mean over the triplets
    whose loss is > 0; any reducer, as a "triplet" reduction) gives ``terms = {"loss"}``.

    - ``triplets_per_anchor="all"`` with no ``indices_tuple``: every triplet of the batch.
    - ``triplets_per_anchor=k`` (int): k random triplets per anchor
      (``mantissa_embed.utils.get_random_triplet_indices``, drawn from ``seed``).
    - ``indices_tuple``: the given triplets ``(a, p, n)``, or pairs ``(a1, p, a2, n)`` turned into
      every triplet ``(a1[i], p[i], n[j])`` with ``a1[i] == a2[j]`` (as PML).
    - ``swap``: use ``min(d_an, d_pn)`` as the negative distance (max for a similarity), the
      "distance swap" of Balntas et al. 2016; ties split the gradient (as ``torch.min``).
      Requires the reference set to be the batch (``ref_emb`` None).

    Gradient at a zero distance: 0.

    References: F. Schroff, D. Kalenichenko, J. Philbin, "FaceNet: A Unified Embedding for Face
    Recognition and Clustering", CVPR 2015; V. Balntas et al., "Learning local feature
    descriptors with triplets and shallow convolutional neural networks", BMVC 2016;
    pytorch-metric-learning ``losses/triplet_margin_loss.py``.

    Parameters
    ----------
    margin : float, default 0.05
    swap : bool, default False
    smooth_loss : bool, default False
    triplets_per_anchor : "all" or int >= 1, default "all"
    distance, reducer, embedding_regularizer, embedding_reg_weight, backend :
        See ``BaseMetricLossFunction``.
    seed : int, numpy.random.Generator or None
        Randomness of ``triplets_per_anchor=k`` (a mantissa-embed addition).

    Raises
    ------
    TypeError / ValueError
        Bad arguments; ``swap`` with ``ref_emb`` (ValueError); bad call inputs (see the base class).
    """

    def __init__(
        self,
        margin: float = 0.05,
        swap: bool = False,
        smooth_loss: bool = False,
        triplets_per_anchor: int | str = "all",
        *,
        seed: Seed = None,
        **kwargs,
    ) -> None:
        self.margin = check_float(margin, "margin")
        self.swap = check_bool(swap, "swap")
        self.smooth_loss = check_bool(smooth_loss, "smooth_loss")
        self.triplets_per_anchor = utils._check_t_per_anchor(triplets_per_anchor)
        self._rng = as_generator(seed)
        super().__init__(**kwargs)

    def get_default_reducer(self):
        return AvgNonZeroReducer()

    def compute_loss(self, batch):
        if self.swap and batch.ref is not None:
            raise ValueError("swap=True needs the reference set to be the batch: call without ref_emb")
        ref_labels = None if batch.same else batch.ref_labels
        if batch.indices_tuple is None and utils._is_all(self.triplets_per_anchor):
            if utils._count_triplets(batch.labels, batch.ref_labels, batch.same) == 0:
                return self.zero_losses(batch)
            mat, ctx = self._mat(batch)
            terms, dmat = self._triplet_loss(
                self.engine.triplet_loss_all,
                (mat, batch.labels, batch.ref_labels),
                lambda: utils.get_all_triplets_indices(batch.labels, ref_labels),
                batch,
                exclude_self=batch.same,
            )
        else:
            if batch.indices_tuple is None:
                triplets = utils.get_random_triplet_indices(
                    batch.labels, ref_labels, t_per_anchor=self.triplets_per_anchor, seed=self._rng
                )
            else:
                triplets = utils.convert_to_triplets(batch.indices_tuple, batch.labels, ref_labels)
            if len(triplets[0]) == 0:
                return self.zero_losses(batch)
            mat, ctx = self._mat(batch)
            terms, dmat = self._triplet_loss(
                self.engine.triplet_loss_triplets, (mat, *triplets), lambda: triplets, batch
            )
        dq, dr = self._grads(dmat, ctx)
        return terms, dq, dr

    def _triplet_loss(self, kernel, args, triplets, batch, **kw):
        """``kernel`` fused with a mean / avg-non-zero reducer; otherwise its per-triplet losses
        (``triplets()``: their indices) through the reducer, then its backward with the reducer's
        d value / d loss as weights. Returns ``({"loss": value}, d value / d mat)``."""
        kw.update(
            margin=self.margin, swap=self.swap, smooth=self.smooth_loss, inverted=self.distance.is_inverted
        )
        mode = self._fused_mode()
        if mode is not None:
            loss, dmat, st = kernel(*args, nonzero_only=mode == "avg_non_zero", **kw)
            self.stats = {k: v for k, v in st.items() if k.startswith("num_")}
            return {"loss": loss}, dmat
        _, _, _, losses = kernel(*args, grad=False, return_losses=True, **kw)
        value, dl = self._reduce_generic(losses, triplets(), "triplet", batch)
        _, dmat, _ = kernel(*args, weights=dl, **kw)
        return {"loss": value}, dmat

    def __repr__(self) -> str:
        return (
            f"TripletMarginLoss(margin={self.margin}, swap={self.swap}, smooth_loss={self.smooth_loss}, "
            f"triplets_per_anchor={self.triplets_per_anchor!r}, distance={self.distance!r}, "
            f"reducer={self.reducer!r})"
        )
