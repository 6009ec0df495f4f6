"""SubCenterArcFaceLoss (Deng et al. 2020, "Sub-center ArcFace: Boosting Face Recognition by Large-scale Noisy Web Faces")."""

from __future__ import annotations

import math

import numpy as np

from .._typing import ArrayLike
from .._validation import check_float, check_int, check_labels
from ._proxy_math import max_over_centers
from ._scratch import scratch
from .arcface_loss import ArcFaceLoss

__all__ = ["SubCenterArcFaceLoss"]


class SubCenterArcFaceLoss(ArcFaceLoss):
    """ArcFace with ``sub_centers`` centers per class: a class's cosine is the largest over its centers.

    ``SubCenterArcFaceLoss(num_classes, embedding_size, margin=28.6, scale=64, sub_centers=3,
    **kwargs)``; ``W`` (embedding_size, num_classes * sub_centers), column ``j * sub_centers + k`` is
    center k of class j, N(0, 1). The gradient goes to the maximizing center.
    Source: J. Deng et al., "Sub-center ArcFace", ECCV 2020.
    """

    def __init__(
        self,
        num_classes: int,
        embedding_size: int,
        margin: float = 28.6,
        scale: float = 64,
        sub_centers=3,
        **kwargs,
    ) -> None:
        self.sub_centers = check_int(sub_centers, "sub_centers", minimum=1)
        super().__init__(num_classes, embedding_size, margin=margin, scale=scale, **kwargs)

    def _num_weight_columns(self):
        return self.num_classes * self.sub_centers

    def _target_columns(self, labels):
        return labels[:, None] * self.sub_centers + np.arange(self.sub_centers)

    def _cosine64(self, x, W):
        S, back = super()._cosine64(x, W)
        N, C, K = x.shape[0], self.num_classes, self.sub_centers
        S3 = S.reshape(N, C, K)
        # max over the K centers and the one-hot of the first maximizing center, by K strided
        # passes (numpy's argmax / put_along_axis over a short last axis cost one call per (i, j))
        cos = max_over_centers(S3)
        taken = np.zeros((N, C), dtype=bool)
        first = []
        for k in range(K):
            m = S3[:, :, k] == cos
            m &= ~taken
            taken |= m
            first.append(m)

        def backward(dcos):
            dS3 = scratch("subcenter.dS3", (N, C, K), dcos.dtype)
            if dS3 is None:
                dS3 = np.empty((N, C, K), dtype=dcos.dtype)
            for k in range(K):  # (a non-finite dcos, reported as an overflow, may spread as NaN)
                np.multiply(dcos, first[k], out=dS3[:, :, k])
            return back(dS3.reshape(N, C * K))

        return cos, backward

    def get_outliers(
        self, embeddings: ArrayLike, labels: ArrayLike, threshold=75, return_dominant_centers: bool = True
    ):
        """Examples whose cosine to their class's dominant center is below ``cos(threshold)`` (degrees).

        Returns ``outliers`` (int64 indices) and, with ``return_dominant_centers``, the dominant centers
        (embedding_size, num_classes) float32 (zeros for absent classes). PML's ``get_outliers``.
        """
        x = self._logits_input(embeddings)
        lab = check_labels(labels, "labels", n=x.shape[0])
        thr = math.cos(math.radians(check_float(threshold, "threshold")))
        W = self.W.data.astype(np.float64)
        S, _ = super()._cosine64(x, W)
        K = self.sub_centers
        outliers = []
        dom = np.zeros((self.embedding_size, self.num_classes), dtype=np.float32)
        for c in range(self.num_classes):
            idx = np.nonzero(lab == c)[0]
            if idx.size == 0:
                continue
            sims = S[idx, c * K : (c + 1) * K]
            best = np.argmax(np.bincount(np.argmax(sims, axis=1), minlength=K))
            dom[:, c] = self.W.data[:, c * K + best]
            outliers.extend(idx[sims[:, best] < thr].tolist())
        out = np.asarray(outliers, dtype=np.int64)
        return (out, dom) if return_dominant_centers else out
