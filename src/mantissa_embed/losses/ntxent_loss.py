"""NTXentLoss (Chen et al. 2020, "SimCLR"; Sohn 2016), pytorch-metric-learning's formulation."""

from __future__ import annotations

import numpy as np

from .. import utils
from .._validation import check_float
from ..distances import CosineSimilarity
from .generic_pair_loss import GenericPairLoss

LOG_TINY = float(np.log(np.float64(np.finfo(np.float32).tiny)))  # PML adds float32's tiny in the log


class NTXentLoss(GenericPairLoss):
    """Normalized temperature-scaled cross-entropy (the SimCLR / InfoNCE loss) over pairs.

    ``NTXentLoss(temperature=0.07, distance=None, reducer=None, embedding_regularizer=None,
    embedding_reg_weight=1, backend="mantissa")``

    Every positive pair (a, p) is a softmax classification of p among {p} and the negatives of
    ``a`` (the pairs (a, n) with another label)::

        l_ap = -log( exp(s_ap / T) / (exp(s_ap / T) + sum_n exp(s_an / T)) + tiny )

    with ``s`` the similarity (default ``CosineSimilarity()``; with a distance, ``s = -d``),
    ``T = temperature`` and ``tiny`` float32's smallest normal number (as PML). The reducer
    (default ``MeanReducer``; any reducer, as a "pos_pair" reduction over ``(a1, p)`` in PML's
    row-major pair order) gives ``terms = {"loss"}``. A positive pair whose anchor has no negative
    charges 0; no positive or no negative pair at all: loss 0.

    - No ``indices_tuple``: every pair the labels define.
    - ``indices_tuple``: pairs ``(a1, p, a2, n)`` (or triplets ``(a, p, n)`` read as
      ``(a, p, a, n)``); the negatives of a positive pair are the given pairs (a2, n) with
      ``a2 == a1`` (repeats count as often as they appear). As in PML, when every array of the
      tuple has at most one element the loss is 0.

    References: T. Chen, S. Kornblith, M. Norouzi, G. Hinton, "A Simple Framework for
    Contrastive Learning of Visual Representations", ICML 2020; K. Sohn, "Improved Deep Metric
    Learning with Multi-class N-pair Loss Objective", NeurIPS 2016; pytorch-metric-learning
    ``losses/ntxent_loss.py``.

    Parameters
    ----------
    temperature : float > 0, default 0.07
    distance, reducer, embedding_regularizer, embedding_reg_weight, backend :
        See ``BaseMetricLossFunction``.

    Input: embeddings (N, D), labels (N,) int (see the base class for ``indices_tuple``,
    ``ref_emb`` (M, D), ``ref_labels`` (M,)). Output: ``LossOutput``.

    Raises
    ------
    TypeError / ValueError
        Non-numeric or non-positive temperature; bad call inputs (see the base class).
    """

    def __init__(self, temperature: float = 0.07, **kwargs) -> None:
        self.temperature = check_float(temperature, "temperature", 0, strict=True)
        super().__init__(**kwargs)

    def get_default_distance(self):
        return CosineSimilarity(backend=self.backend)

    def pair_loss_all(self, mat, batch):
        def unreduced(lmat):  # the (N, M) matrix of per-positive-pair losses
            a1, p, _, _ = utils.get_all_pairs_indices(batch.labels, None if batch.same else batch.ref_labels)

            def to_weights(dl):
                w = np.zeros(mat.shape, dtype=np.float32)
                w[a1, p] = dl
                return w

            return lmat[a1, p], (a1, p), "pos_pair", to_weights

        return self._softmax_all(self.engine.ntxent_all, mat, batch, unreduced)

    def pair_loss(self, mat, pairs, batch):
        a1, p, a2, n = pairs
        if len(a1) == 0 or len(a2) == 0:
            return {"loss": 0.0}, np.zeros(mat.shape, dtype=np.float32)
        N, M = mat.shape
        scatter = self.engine.scatter_add_forward
        c = (1.0 if self.distance.is_inverted else -1.0) / self.temperature
        zp = c * mat[a1, p].astype(np.float64)
        zn = c * mat[a2, n].astype(np.float64)
        # per anchor: log-sum-exp of its negatives (as a multiset)
        m = np.full(N, -np.inf)
        np.maximum.at(m, a2, zn)
        en = np.exp(zn - m[a2])
        S = scatter(en.astype(np.float32), a2, np.zeros(N, np.float32)).astype(np.float64)
        with np.errstate(divide="ignore"):
            L = np.where(S > 0, m + np.log(np.where(S > 0, S, 1.0)), -np.inf)
        Lk = L[a1]
        x = -np.logaddexp(0.0, Lk - zp)
        losses = np.maximum(-np.logaddexp(x, LOG_TINY), 0.0)
        value, dl = self._reduce_generic(losses.astype(np.float32), (a1, p), "pos_pair", batch)
        w = np.exp(x - np.logaddexp(x, LOG_TINY))
        omr = np.where(np.isfinite(Lk), -np.expm1(x), 0.0)
        d = np.asarray(dl, dtype=np.float64) * w * omr
        B = scatter(d.astype(np.float32), a1, np.zeros(N, np.float32)).astype(np.float64)
        q = np.exp(zn - L[a2])  # L[a2] is finite: a2 has this negative
        vals = np.concatenate([-d * c, q * B[a2] * c]).astype(np.float32)
        dmat = scatter(vals, np.concatenate([a1 * M + p, a2 * M + n]), np.zeros(N * M, np.float32))
        self.stats = {"num_pos_pairs": len(a1), "num_neg_pairs": len(a2)}
        return {"loss": value}, dmat.reshape(N, M)

    def __repr__(self) -> str:
        return (
            f"NTXentLoss(temperature={self.temperature}, distance={self.distance!r}, "
            f"reducer={self.reducer!r})"
        )
