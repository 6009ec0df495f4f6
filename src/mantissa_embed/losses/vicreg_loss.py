"""VICRegLoss (Bardes, Ponce & LeCun 2022), pytorch-metric-learning's formulation."""

from __future__ import annotations

import numpy as np

from .._validation import check_array, check_float
from .base_metric_loss_function import BaseMetricLossFunction, _Batch


class VICRegLoss(BaseMetricLossFunction):
    """Variance-Invariance-Covariance regularization between two views of a batch.

    ``VICRegLoss(invariance_lambda=25, variance_mu=25, covariance_v=1, eps=1e-4, reducer=None,
    backend="mantissa")``; ``loss_func(embeddings (N, D), ref_emb=(N, D) or None)`` (None: the same
    view). Terms ``invariance_loss``, ``variance_loss1``, ``variance_loss2``, ``covariance_loss``;
    ``ref_grad`` is None without ``ref_emb``. No labels, no distance.

    Raises ``ValueError`` for ``distance`` / ``embedding_regularizer`` (as PML), labels or an
    indices_tuple at call time, views of different shapes, NaN/Inf, ``eps <= 0``.
    Source: A. Bardes et al., "VICReg", ICLR 2022.
    """

    def __init__(
        self, invariance_lambda=25, variance_mu=25, covariance_v=1, eps: float = 1e-4, **kwargs
    ) -> None:
        if "distance" in kwargs:
            raise ValueError("VICRegLoss cannot use a distance function")
        if "embedding_regularizer" in kwargs:
            raise ValueError("VICRegLoss cannot use a regularizer")
        self.invariance_lambda = check_float(invariance_lambda, "invariance_lambda")
        self.variance_mu = check_float(variance_mu, "variance_mu")
        self.covariance_v = check_float(covariance_v, "covariance_v")
        self.eps = check_float(eps, "eps", minimum=0.0, strict=True)
        super().__init__(**kwargs)

    def _sub_loss_names(self):
        return ["invariance_loss", "variance_loss1", "variance_loss2", "covariance_loss"]

    def _validate(self, embeddings, labels, indices_tuple, ref_emb, ref_labels):
        if indices_tuple is not None:
            raise ValueError("indices_tuple is not supported by VICRegLoss")
        if labels is not None or ref_labels is not None:
            raise ValueError("labels and ref_labels are not supported by VICRegLoss")
        emb = check_array(embeddings, "embeddings", ndim=2)
        ref = None
        if ref_emb is not None:
            ref = check_array(ref_emb, "ref_emb", ndim=2)
            if ref.shape != emb.shape:
                raise ValueError(f"ref_emb must have the shape of embeddings {emb.shape}, got {ref.shape}")
        if emb.shape[1] == 0 and emb.shape[0] > 0:
            raise ValueError(f"embeddings must have at least one column, got shape {emb.shape}")
        return _Batch(emb, None, ref, None, ref is None, None)

    def _var_cov(self, Z, name, batch):
        """(variance value, covariance part, dZ) of one view, float64."""
        N, D = Z.shape
        mu = Z.mean(axis=0)
        Zc = Z - mu
        var = (Zc * Zc).sum(axis=0) / (N - 1)
        std = np.sqrt(var + self.eps)
        h = np.maximum(1.0 - std, 0.0)
        vl = self.variance_mu * h / 2
        vval, dvl = self._reduce_generic(vl, np.arange(D), "element", batch, loss_name=name)
        dstd = -np.asarray(dvl, dtype=np.float64) * self.variance_mu / 2 * (h > 0)
        dvar = dstd / (2 * std)
        dZ = Zc * (2 * dvar / (N - 1))[None, :]
        C = Zc.T @ Zc / (N - 1)
        off = C.copy()
        np.fill_diagonal(off, 0.0)
        cov = float((off * off).sum() / D)
        return vval, cov, dZ, Zc, off

    def compute_loss(self, batch):
        N, D = batch.N, batch.D
        if N == 0:
            return self.zero_losses(batch)
        Z = batch.emb.astype(np.float64)
        R = Z if batch.ref is None else batch.ref.astype(np.float64)
        diff = Z - R
        inv = self.invariance_lambda * (diff * diff).mean(axis=1)
        ival, dinv = self._reduce_generic(inv, np.arange(N), "element", batch, loss_name="invariance_loss")
        g = (np.asarray(dinv, dtype=np.float64) * self.invariance_lambda * 2.0 / D)[:, None] * diff
        dZ, dR = g, -g
        terms = {
            "invariance_loss": ival,
            "variance_loss1": 0.0,
            "variance_loss2": 0.0,
            "covariance_loss": 0.0,
        }
        if N >= 2:
            v1, c1, dZv, Zc, off1 = self._var_cov(Z, "variance_loss1", batch)
            v2, c2, dRv, Rc, off2 = self._var_cov(R, "variance_loss2", batch)
            cval, dcl = self._reduce_generic(
                np.array([self.covariance_v * (c1 + c2)]),
                None,
                "already_reduced",
                batch,
                loss_name="covariance_loss",
            )
            w = float(np.sum(dcl)) * self.covariance_v
            # d/dZc of sum_{j!=k} C_jk^2 / D with C = Zc^T Zc / (N-1): 4 Zc off / (D (N-1)); centering
            # is a projection whose backward removes the column mean (which is 0 for Zc off already)
            dZc = Zc @ off1 * (4.0 * w / (D * (N - 1)))
            dRc = Rc @ off2 * (4.0 * w / (D * (N - 1)))
            dZ = dZ + dZv + dZc - dZc.mean(axis=0)
            dR = dR + dRv + dRc - dRc.mean(axis=0)
            terms.update(variance_loss1=v1, variance_loss2=v2, covariance_loss=cval)
        if batch.ref is None:
            return terms, (dZ + dR).astype(np.float32), None
        return terms, dZ.astype(np.float32), dR.astype(np.float32)

    def __repr__(self) -> str:
        return (
            f"VICRegLoss(invariance_lambda={self.invariance_lambda}, variance_mu={self.variance_mu}, "
            f"covariance_v={self.covariance_v}, eps={self.eps})"
        )
