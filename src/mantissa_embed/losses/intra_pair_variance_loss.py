"""IntraPairVarianceLoss (Kim et al. 2019), pytorch-metric-learning's formulation."""

from __future__ import annotations

import numpy as np

from .. import utils
from .._validation import check_float
from ..distances import CosineSimilarity
from .generic_pair_loss import GenericPairLoss


def _hinge_coefs(eps, increase):
    """(dv/dmu, dv/ds) of a pair's hinge argument v = dv/dmu * mu + dv/ds * s: positive pairs
    (``increase``) v = (1 - eps) mu - s, negative pairs v = s - (1 + eps) mu (Yu & Tao 2019)."""
    return ((1 - eps), -1.0) if increase else (-(1 + eps), 1.0)


class IntraPairVarianceLoss(GenericPairLoss):
    """Penalizes pairs that deviate from the mean positive (negative) pair.

    ``IntraPairVarianceLoss(pos_eps=0.01, neg_eps=0.01, distance=None, reducer=None, ...)``: with a
    similarity, ``pos_loss = [(1 - pos_eps) mu_p - s_ap]+^2``, ``neg_loss = [s_an - (1 + neg_eps)
    mu_n]+^2`` (roles swapped for a distance); each reduced on its own (default MeanReducer, the
    gradient flowing through the means).
    Source: B. Yu, D. Tao, "Deep Metric Learning with Tuplet Margin Loss", ICCV 2019.
    """

    def __init__(self, pos_eps: float = 0.01, neg_eps: float = 0.01, **kwargs) -> None:
        self.pos_eps = check_float(pos_eps, "pos_eps")
        self.neg_eps = check_float(neg_eps, "neg_eps")
        super().__init__(**kwargs)

    def get_default_distance(self):
        return CosineSimilarity(backend=self.backend)

    def _sub_loss_names(self):
        return ["pos_loss", "neg_loss"]

    def pair_loss_all(self, mat, batch):
        if self._fused_mode(supported=("mean",)):
            return self._pair_loss_dense(mat, batch)
        pairs = utils.get_all_pairs_indices(batch.labels, None if batch.same else batch.ref_labels)
        return self.pair_loss(mat, pairs, batch)

    def _pair_loss_dense(self, mat, batch):
        """Every pair with the default MeanReducer: the same values as ``pair_loss`` on the
        enumerated pairs. The few positive pairs go through index lists; the negative pairs
        (almost the whole matrix) through a mask, in a handful of in-place passes."""
        lab = batch.labels
        ref = lab if batch.same else batch.ref_labels
        matches = lab[:, None] == ref[None, :]
        if batch.same:
            np.fill_diagonal(matches, False)
        diffs = lab[:, None] != ref[None, :]
        inv = self.distance.is_inverted
        # positives: index lists
        pflat = np.flatnonzero(matches)
        dpos = None
        pos = 0.0
        if pflat.size:
            sp = mat.ravel()[pflat].astype(np.float64)
            pos, dpos = self._part_values(sp, self.pos_eps, inv)
        # negatives: dense over the mask
        dmat = np.zeros(mat.shape, dtype=np.float64)
        neg = self._part_dense(mat.astype(np.float64), diffs, self.neg_eps, not inv, dmat)
        if dpos is not None:
            dmat.ravel()[pflat] += dpos  # the flat indices are distinct
        return {"pos_loss": pos, "neg_loss": neg}, dmat.astype(np.float32)

    @staticmethod
    def _part_values(s, eps, increase):
        """(MeanReducer value, d value / d s) of one kind of pair, from its similarities s (k,)."""
        k = len(s)
        mu = s.mean()
        dv_dmu, dv_ds = _hinge_coefs(eps, increase)
        r = np.maximum(dv_dmu * mu + dv_ds * s, 0.0)
        value = float(np.sum(r * r, dtype=np.float64) / k)
        g = (1.0 / k) * 2.0 * r
        return value, dv_ds * g + dv_dmu * g.sum() / k

    @staticmethod
    def _part_dense(m64, mask, eps, increase, dmat):
        """One kind of pair over a boolean mask of the (N, M) matrix; writes its gradient into
        ``dmat`` (zeros on entry); returns the MeanReducer value."""
        k = int(np.count_nonzero(mask))
        if k == 0:
            return 0.0
        mu = float(np.sum(m64, where=mask)) / k
        dv_dmu, dv_ds = _hinge_coefs(eps, increase)
        v = np.multiply(m64, dv_ds, out=m64)
        v += dv_dmu * mu
        r = np.maximum(v, 0.0, out=v)
        np.multiply(r, mask, out=r)
        # MeanReducer: the mean of the k losses r^2 (einsum, not BLAS ddot: no BLAS threads here)
        value = float(np.einsum("ij,ij->", r, r)) / k
        gs = float(np.sum(r)) * (2.0 / k)  # sum of d value / d r over the pairs
        np.multiply(r, dv_ds * 2.0 / k, out=dmat)
        np.add(dmat, dv_dmu * gs / k, out=dmat, where=mask)
        return value

    def _part(self, mat, i, j, eps, increase, name, rtype, batch, dmat):
        if len(i) == 0:
            return 0.0
        s = mat[i, j].astype(np.float64)
        mu = s.mean()
        k = len(s)
        dv_dmu, dv_ds = _hinge_coefs(eps, increase)
        r = np.maximum(dv_dmu * mu + dv_ds * s, 0.0)
        value, dl = self._reduce_generic(r * r, (i, j), rtype, batch, loss_name=name)
        g = np.asarray(dl, dtype=np.float64) * 2.0 * r
        ds = dv_ds * g + dv_dmu * g.sum() / k
        M = mat.shape[1]
        dmat += np.bincount(i * M + j, weights=ds, minlength=mat.size).reshape(mat.shape)
        return value

    def pair_loss(self, mat, pairs, batch):
        a1, p, a2, n = pairs
        inv = self.distance.is_inverted
        dmat = np.zeros(mat.shape, dtype=np.float64)
        pos = self._part(mat, a1, p, self.pos_eps, inv, "pos_loss", "pos_pair", batch, dmat)
        neg = self._part(mat, a2, n, self.neg_eps, not inv, "neg_loss", "neg_pair", batch, dmat)
        return {"pos_loss": pos, "neg_loss": neg}, dmat.astype(np.float32)

    def __repr__(self) -> str:
        return (
            f"IntraPairVarianceLoss(pos_eps={self.pos_eps}, neg_eps={self.neg_eps}, "
            f"distance={self.distance!r}, reducer={self.reducer!r})"
        )
