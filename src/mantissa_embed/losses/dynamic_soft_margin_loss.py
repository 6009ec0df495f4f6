"""DynamicSoftMarginLoss (Zhang & Rusinkiewicz 2019), pytorch-metric-learning's formulation."""

from __future__ import annotations

import numpy as np

from .. import utils
from .._validation import check_array, check_float
from ..distances import LpDistance
from ._ranking_math import dsm_add_soft_counts
from .base_metric_loss_function import BaseMetricLossFunction, _Batch
from .fast_ap_loss import _check_int_like

_CHUNK = 1 << 22  # triplets per chunk


class DynamicSoftMarginLoss(BaseMetricLossFunction):
    """Each ``x = d(a, p) - d(a, n)`` weighted by the CDF of a running histogram of ``x``.

    ``DynamicSoftMarginLoss(min_val=-2.0, num_bins=10, momentum=0.01, distance=None, ...)``: over
    all triplets of the labels or of ``indices_tuple`` (without labels, matching rows of the batch
    and the reference set against the hardest negative), ``loss = mean_x CDF[bin(x)] x``. State:
    ``hist_`` (num_bins,) float64. The distance must be an LpDistance with
    ``normalize_embeddings=True`` and ``p=2``.

    Raises ``TypeError`` for another distance; ``ValueError`` for ``min_val == 0``,
    ``num_bins < 1``, a distance without normalization or with ``p != 2``.
    Source: L. Zhang, S. Rusinkiewicz, "Learning Local Descriptors with a CDF-Based Dynamic Soft
    Margin", ICCV 2019.
    """

    def __init__(self, min_val=-2.0, num_bins=10, momentum: float = 0.01, **kwargs) -> None:
        super().__init__(**kwargs)
        if not isinstance(self.distance, LpDistance):
            raise TypeError(
                "DynamicSoftMarginLoss requires distance to be an LpDistance, "
                f"got {type(self.distance).__name__}"
            )
        if self.distance.normalize_embeddings is not True or self.distance.p != 2:
            raise ValueError(
                "DynamicSoftMarginLoss requires distance to be LpDistance(normalize_embeddings=True, p=2)"
            )
        self.min_val = check_float(min_val, "min_val")
        if self.min_val == 0:
            raise ValueError("min_val must be nonzero (the bin width is 2 |min_val| / num_bins)")
        self.num_bins = _check_int_like(num_bins, "num_bins", 1)
        self.delta = 2 * abs(self.min_val) / self.num_bins
        self.momentum = check_float(momentum, "momentum")
        self.hist_ = np.zeros(self.num_bins, dtype=np.float64)

    def get_default_distance(self):
        return LpDistance(backend=self.backend)

    def _validate(self, embeddings, labels, indices_tuple, ref_emb, ref_labels):
        if labels is not None:
            return super()._validate(embeddings, labels, indices_tuple, ref_emb, ref_labels)
        emb = check_array(embeddings, "embeddings", ndim=2)
        ref = None
        if ref_emb is not None:
            ref = check_array(ref_emb, "ref_emb", ndim=2)
            if ref.shape[1] != emb.shape[1]:
                raise ValueError(
                    f"ref_emb must have {emb.shape[1]} columns like embeddings, got shape {ref.shape}"
                )
        return _Batch(emb, None, ref, None, ref is None, None)

    # -- the x values, in chunks ------------------------------------------------------------------
    def _chunks_with_labels(self, batch, mat):
        """Yields (rows_p, cols_p, rows_n, cols_n) for chunks of the triplets of ``indices_tuple``."""
        a, p, n = utils.convert_to_triplets(
            batch.indices_tuple, batch.labels, None if batch.same else batch.ref_labels, t_per_anchor="all"
        )
        for s in range(0, len(a), _CHUNK):
            aa, pp, nn = a[s : s + _CHUNK], p[s : s + _CHUNK], n[s : s + _CHUNK]
            yield aa, pp, aa, nn

    def _without_labels(self, mat):
        """(x, pos index pairs, list of (weight, row, col) for the negative terms) without labels."""
        r, c = mat.shape
        L = max(r, c)
        m = mat.astype(np.float64).copy()
        k = min(r, c)
        d_pos = np.zeros(L)
        d_pos[:k] = np.diagonal(m)[:k]
        idx = np.arange(k)
        m[idx, idx] = np.inf
        min_a = np.zeros(L)
        min_p = np.zeros(L)
        arg_a = np.full(L, -1)
        arg_p = np.full(L, -1)
        if r > 0 and c > 0:
            arg_a[:c] = np.argmin(m, axis=0)
            min_a[:c] = m[arg_a[:c], np.arange(c)]
            arg_p[:r] = np.argmin(m, axis=1)
            min_p[:r] = m[np.arange(r), arg_p[:r]]
        d_neg = np.minimum(min_a, min_p)
        x = d_pos - d_neg
        keep = np.isfinite(x)
        # gradient weights of d_neg on min_a / min_p (torch.minimum splits ties in half)
        wa = np.where(min_a < min_p, 1.0, np.where(min_a == min_p, 0.5, 0.0))
        wp = 1.0 - wa
        return x, keep, k, arg_a, arg_p, wa, wp, c, r

    def _all_triplets(self, batch, mat, ctx):
        """Labels and no indices_tuple: the engine's all-triplets kernels (no triplet list)."""
        eng = self.engine
        rlab = batch.labels if batch.same else batch.ref_labels
        nb, mv, dl = self.num_bins, self.min_val, self.delta
        args = (mat, batch.labels, rlab, batch.same, mv, dl)
        mom = self.momentum if self.hist_.sum() != 0 else 1.0
        u_add, n_total = eng.dsm_triplet_hist(*args, nb, mom)
        if n_total == 0:
            return self.zero_losses(batch)
        u = (1.0 - mom) * self.hist_ + u_add
        Z = u.sum()
        h = u / Z if Z != 0 else u.copy()
        cdf = np.cumsum(h)
        total, by_bin = eng.dsm_triplet_loss(*args, cdf)
        loss = total / n_total
        self.hist_ = h
        value, dlred = self._reduce_generic(np.array([loss]), None, "already_reduced", batch)
        scale = float(np.asarray(dlred).reshape(-1)[0]) / n_total
        g_h = np.cumsum(by_bin[::-1])[::-1] * scale
        g_u = (g_h - np.dot(g_h, h)) / Z if Z != 0 else np.zeros(nb)
        dmat = eng.dsm_triplet_backward(*args, cdf, g_u, scale, mom)
        dq, dr = self._grads(dmat, ctx)
        return {"loss": value}, dq, dr

    def compute_loss(self, batch):
        if batch.N == 0 or batch.M == 0:
            return self.zero_losses(batch)
        mat, ctx = self._mat(batch)
        if batch.labels is not None and batch.indices_tuple is None:
            return self._all_triplets(batch, mat, ctx)
        md = mat.astype(np.float64)
        nb, mv, dl = self.num_bins, self.min_val, self.delta
        if batch.labels is None:
            x, keep, k, arg_a, arg_p, wa, wp, c, r = self._without_labels(md)
            sel = np.nonzero(keep)[0]
            chunks = [("nolab", x[sel], sel)]
        else:
            chunks = None
        # pass 1: histogram of this batch
        mom = self.momentum if self.hist_.sum() != 0 else 1.0
        u = (1.0 - mom) * self.hist_
        n_total = 0

        def xs():
            if chunks is not None:
                yield chunks[0][1], chunks[0]
                return
            for ap_r, ap_c, an_r, an_c in self._chunks_with_labels(batch, md):
                yield md[ap_r, ap_c] - md[an_r, an_c], (ap_r, ap_c, an_r, an_c)

        for xv, _ in xs():
            n_total += len(xv)
            if len(xv) == 0:
                continue
            dsm_add_soft_counts(u, xv, mv, dl, mom)
        if n_total == 0:
            return self.zero_losses(batch)
        Z = u.sum()
        h = u / Z if Z != 0 else u.copy()
        cdf = np.cumsum(h)
        # pass 2: loss and dL/dh
        total = 0.0
        by_bin = np.zeros(nb)
        for xv, _ in xs():
            if len(xv) == 0:
                continue
            rw = np.clip(np.floor((xv - mv) / dl), 0, nb - 1).astype(np.int64)
            total += float(np.sum(cdf[rw] * xv))
            by_bin += np.bincount(rw, weights=xv, minlength=nb)
        loss = total / n_total
        self.hist_ = h
        value, dlred = self._reduce_generic(np.array([loss]), None, "already_reduced", batch)
        scale = float(np.asarray(dlred).reshape(-1)[0]) / n_total
        g_h = np.cumsum(by_bin[::-1])[::-1] * scale  # dL/dh_r = sum_{r(x) >= r} x / n
        g_u = (g_h - np.dot(g_h, h)) / Z if Z != 0 else np.zeros(nb)
        g_u_pad = np.concatenate([g_u, [0.0]])
        # pass 3: dL/dx -> dmat
        dmat = np.zeros(md.shape)
        for xv, where in xs():
            if len(xv) == 0:
                continue
            t = (xv - mv) / dl
            ri = np.floor(t).astype(np.int64)
            rw = np.clip(ri, 0, nb - 1)
            g = cdf[rw] * scale
            g0 = np.where((ri >= 0) & (ri < nb), g_u_pad[np.clip(ri, 0, nb)], 0.0)
            g1 = np.where((ri + 1 >= 0) & (ri + 1 < nb), g_u_pad[np.clip(ri + 1, 0, nb)], 0.0)
            g = g + mom * (g1 - g0) / dl
            if chunks is not None:
                self._scatter_nolab(dmat, g, where[2], k, arg_a, arg_p, wa, wp, c, r)
            else:
                ap_r, ap_c, an_r, an_c = where
                Mcols = md.shape[1]
                size = md.size
                dmat += np.bincount(ap_r * Mcols + ap_c, weights=g, minlength=size).reshape(md.shape)
                dmat -= np.bincount(an_r * Mcols + an_c, weights=g, minlength=size).reshape(md.shape)
        dq, dr = self._grads(dmat.astype(np.float32), ctx)
        return {"loss": value}, dq, dr

    @staticmethod
    def _scatter_nolab(dmat, g, sel, k, arg_a, arg_p, wa, wp, c, r) -> None:
        for gi, i in zip(g, sel):
            if i < k:
                dmat[i, i] += gi
            if i < c and wa[i] > 0:
                dmat[arg_a[i], i] -= gi * wa[i]
            if i < r and wp[i] > 0:
                dmat[i, arg_p[i]] -= gi * wp[i]

    def __repr__(self) -> str:
        return (
            f"DynamicSoftMarginLoss(min_val={self.min_val}, num_bins={self.num_bins}, "
            f"momentum={self.momentum}, distance={self.distance!r}, reducer={self.reducer!r})"
        )
