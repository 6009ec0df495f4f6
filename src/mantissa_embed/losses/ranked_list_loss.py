"""RankedListLoss (Wang et al. 2019), pytorch-metric-learning's formulation."""
from __future__ import annotations

import warnings

import numpy as np

from .._validation import check_float
from ..distances import LpDistance
from ._ranking_math import ranked_list_backward, ranked_list_forward
from .base_metric_loss_function import BaseMetricLossFunction
from .fast_ap_loss import _labels_required, _no_indices_tuple, _reject_ref


class RankedListLoss(BaseMetricLossFunction):
    """Ranked List Loss (RLL): per anchor, weighted hinges on the positives farther than
    ``alpha - margin`` and on the negatives closer than ``alpha``.

    ``RankedListLoss(margin, Tn, imbalance=0.5, alpha=None, Tp=0, distance=None, reducer=None,
    embedding_regularizer=None, embedding_reg_weight=1, backend="mantissa")``

    With ``d`` the (N, N) matrix (default ``LpDistance()``) with a zeroed diagonal,
    ``P*_ij = d_ij`` for positives ``j != i`` with ``d_ij > alpha - margin`` (else 0) and
    ``N*_ij = d_ij`` for negatives with ``d_ij < alpha`` (else 0); over the nonzero entries
    ``wp = exp(Tp (P* - (alpha - margin)))``, ``wn = exp(Tn (alpha - N*))`` (0 elsewhere):

        L_P(i) = sum_j wp_ij (P*_ij - (alpha - margin)) / sum_j (wp_ij + 1e-5)
        L_N(i) = sum_j wn_ij (alpha - N*_ij) / sum_j (wn_ij + 1e-5)
        loss_i = (1 - imbalance) L_P(i) + imbalance L_N(i)

    (the ``1e-5`` is added for each of the N columns, as in PML), reduced by ``reducer`` (default
    ``MeanReducer``; reduction type "element" over all anchors). The weights are differentiated
    too (torch autograd semantics). The defaults (``Tp=0``) are the paper's "RLL-Simpler".

    References: X. Wang, Y. Hua, E. Kodirov, G. Hu, R. Garnier, N. Robertson, "Ranked List Loss for
    Deep Metric Learning", CVPR 2019; pytorch-metric-learning ``losses/ranked_list_loss.py``.

    Parameters
    ----------
    margin : float (required)
    Tn : float (required)
        Temperature of the negative weights.
    imbalance : float, default 0.5
        In [0, 1].
    alpha : float, optional
        Default ``1 + margin / 2``.
    Tp : float, default 0
        Temperature of the positive weights. ``Tp > 5`` or ``Tn > 5`` warns (overflow risk).
    distance, reducer, embedding_regularizer, embedding_reg_weight, backend :
        See :class:`~mantissa_embed.losses.BaseMetricLossFunction`.

    Inputs: ``embeddings`` (N, D), ``labels`` (N,) (required); ``indices_tuple`` and ``ref_emb``
    are not supported (ValueError). Output: ``LossOutput`` (``terms = {"loss"}``).

    Raises
    ------
    TypeError / ValueError
        Non-finite or non-numeric arguments, ``imbalance`` outside [0, 1], missing labels,
        ``indices_tuple`` or ``ref_emb`` given; bad call inputs (see the base class).
    """

    def __init__(self, margin, Tn, imbalance=0.5, alpha=None, Tp=0, **kwargs):
        super().__init__(**kwargs)
        self.margin = check_float(margin, "margin")
        self.imbalance = check_float(imbalance, "imbalance")
        if not 0 <= self.imbalance <= 1:
            raise ValueError(f"imbalance must be between 0 and 1, got {imbalance}")
        self.alpha = check_float(alpha, "alpha") if alpha is not None else 1 + self.margin / 2
        self.Tp = check_float(Tp, "Tp")
        self.Tn = check_float(Tn, "Tn")
        if self.Tp > 5 or self.Tn > 5:
            warnings.warn("Values of Tp or Tn are too high. Too large temperature values may lead to overflow.")

    def get_default_distance(self):
        return LpDistance(backend=self.backend)

    def __call__(self, embeddings, labels=None, indices_tuple=None, ref_emb=None, ref_labels=None):
        if labels is None:
            raise ValueError("labels are required by RankedListLoss")
        _reject_ref(type(self).__name__, embeddings, labels, ref_emb, ref_labels)
        _no_indices_tuple(type(self).__name__, indices_tuple)
        return super().__call__(embeddings, labels)

    forward = __call__

    def compute_loss(self, batch):
        _labels_required("RankedListLoss", batch)
        if batch.N == 0:
            return self.zero_losses(batch)
        mat, ctx = self._mat(batch)
        losses, cache = ranked_list_forward(mat, batch.labels, self.margin, self.alpha, self.Tp, self.Tn,
                                            self.imbalance)
        idx = np.arange(batch.N, dtype=np.int64)
        value, dl = self._reduce_generic(losses, idx, "element", batch)
        dmat = ranked_list_backward(dl, cache)
        dq, dr = self._grads(dmat.astype(np.float32), ctx)
        return {"loss": value}, dq, dr

    def __repr__(self):
        return (f"RankedListLoss(margin={self.margin}, Tn={self.Tn}, imbalance={self.imbalance}, "
                f"alpha={self.alpha}, Tp={self.Tp}, distance={self.distance!r}, reducer={self.reducer!r})")
