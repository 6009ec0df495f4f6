"""MarginLoss (Wu et al. 2017), pytorch-metric-learning's formulation, with a learnable beta."""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

import numpy as np

from .. import utils
from .._checks.arrays import check_bool
from .._validation import as_generator, check_float, check_int
from ..parameter import Parameter
from ..reducers import DivisorReducer
from .base_metric_loss_function import BaseMetricLossFunction

if TYPE_CHECKING:
    from .._typing import Seed


class MarginLoss(BaseMetricLossFunction):
    """Margin loss over triplets, with a (learnable, optionally per-class) boundary ``beta``.

    ``MarginLoss(margin=0.2, nu=0, beta=1.2, triplets_per_anchor="all", learn_beta=False,
    num_classes=None, distance=None, reducer=None, ..., seed=None)``: each triplet charges
    ``[d_ap - beta + margin]+ + [beta - d_an + margin]+``; default DivisorReducer (the number of
    non-zero terms); terms ``margin_loss`` and ``beta_reg_loss``. With ``learn_beta`` ``beta`` is a
    Parameter of shape (1,) or (num_classes,) whose gradient accumulates into ``beta.grad``.

    Raises ``TypeError`` / ``ValueError`` for bad arguments, or labels missing or outside
    ``[0, num_classes)`` with per-class betas.
    Source: C.-Y. Wu et al., "Sampling Matters in Deep Embedding Learning", ICCV 2017.
    """

    def __init__(
        self,
        margin: float = 0.2,
        nu: float = 0,
        beta: float = 1.2,
        triplets_per_anchor: int | str = "all",
        learn_beta: bool = False,
        num_classes: int | None = None,
        *,
        seed: Seed = None,
        **kwargs,
    ) -> None:
        self.margin = check_float(margin, "margin")
        self.nu = check_float(nu, "nu")
        beta = check_float(beta, "beta")
        self.learn_beta = check_bool(learn_beta, "learn_beta")
        if num_classes is not None:
            if isinstance(num_classes, bool) or not isinstance(num_classes, numbers.Integral):
                raise TypeError(f"num_classes must be an int or None, got {num_classes!r}")
            num_classes = check_int(num_classes, "num_classes", minimum=1)
        self.num_classes = num_classes
        self.triplets_per_anchor = utils._check_t_per_anchor(triplets_per_anchor)
        self._rng = as_generator(seed)
        super().__init__(**kwargs)
        init = np.full(num_classes or 1, beta, dtype=np.float32)
        self.beta = Parameter(init, name="beta") if self.learn_beta else init

    def get_default_reducer(self):
        return DivisorReducer()

    def _sub_loss_names(self):
        return ["margin_loss", "beta_reg_loss"]

    def parameters(self):
        """``[beta]`` (a Parameter) when ``learn_beta``, else ``[]``."""
        return [self.beta] if self.learn_beta else []

    @property
    def _beta(self):
        return self.beta.data if self.learn_beta else self.beta

    def _beta_index(self, batch, anchors):
        """Index into beta of each anchor (zeros for a single beta)."""
        if self._beta.shape[0] == 1:
            return np.zeros(len(anchors), dtype=np.int64)
        if batch.labels is None:
            raise ValueError(
                "MarginLoss with num_classes needs labels (beta is indexed by the anchor's label)"
            )
        lab = batch.labels[anchors]
        if lab.size and (lab.min() < 0 or lab.max() >= self._beta.shape[0]):
            raise ValueError(f"labels must lie in [0, num_classes={self._beta.shape[0]}) to index beta")
        return lab.astype(np.int64)

    def compute_loss(self, batch):
        ref_labels = None if batch.same else batch.ref_labels
        if (
            batch.indices_tuple is None
            and utils._is_all(self.triplets_per_anchor)
            and self._fused_mode(supported=("divisor", "mean", "sum"))
        ):
            return self._all_triplets(batch)
        triplets = utils.convert_to_triplets(
            batch.indices_tuple,
            batch.labels,
            ref_labels,
            t_per_anchor=self.triplets_per_anchor,
            seed=self._rng,
        )
        a, p, n = triplets
        if len(a) == 0:
            return self.zero_losses(batch)
        bidx = self._beta_index(batch, a)
        mat, ctx = self._mat(batch)
        M = mat.shape[1]
        beta = self._beta.astype(np.float64)
        b = beta[bidx]
        sg = -1.0 if self.distance.is_inverted else 1.0
        vp = sg * (mat[a, p].astype(np.float64) - b) + self.margin
        vn = sg * (b - mat[a, n].astype(np.float64)) + self.margin
        pos, neg = np.maximum(vp, 0.0), np.maximum(vn, 0.0)
        divisor = int(np.count_nonzero(pos > 0) + np.count_nonzero(neg > 0))
        self.stats = {
            "num_pos_pairs": int(np.count_nonzero(pos > 0)),
            "num_neg_pairs": int(np.count_nonzero(neg > 0)),
            "divisor": divisor,
        }
        value, dl = self._reduce_generic(
            pos + neg, triplets, "triplet", batch, loss_name="margin_loss", divisor=divisor
        )
        dl = np.asarray(dl, dtype=np.float64)
        gp, gn = dl * (vp > 0), dl * (vn > 0)
        dmat = (
            np.bincount(a * M + p, weights=sg * gp, minlength=mat.size)
            - np.bincount(a * M + n, weights=sg * gn, minlength=mat.size)
        ).reshape(mat.shape)
        nb = beta.shape[0]
        dbeta = np.bincount(bidx, weights=sg * (gn - gp), minlength=nb)
        terms = {"margin_loss": value, "beta_reg_loss": 0.0}
        if self.learn_beta:
            if nb == 1:
                rv, rd = self._reduce_generic(
                    np.array([beta[0] * self.nu]), None, "already_reduced", batch, loss_name="beta_reg_loss"
                )
                dbeta[0] += self.nu * float(np.sum(rd))
            else:
                rv, rd = self._reduce_generic(
                    b * self.nu, a, "element", batch, loss_name="beta_reg_loss", divisor=divisor
                )
                dbeta += np.bincount(bidx, weights=self.nu * np.asarray(rd, dtype=np.float64), minlength=nb)
            terms["beta_reg_loss"] = rv
            self.beta.grad += dbeta.astype(np.float32)
        dq, dr = self._grads(dmat.astype(np.float32), ctx)
        return terms, dq, dr

    def _all_triplets(self, batch):
        """Every triplet, reduced by Divisor/Mean/SumReducer, in O(N M): the positive term of a
        triplet depends on (a, p) only and the negative term on (a, n) only."""
        matches, diffs = utils.get_matches_and_diffs(batch.labels, None if batch.same else batch.ref_labels)
        npos = matches.sum(axis=1).astype(np.float64)
        nneg = diffs.sum(axis=1).astype(np.float64)
        ntrip = npos * nneg
        K = float(ntrip.sum())
        if K == 0:
            return self.zero_losses(batch)
        bidx = self._beta_index(batch, np.arange(batch.N))
        mat, ctx = self._mat(batch)
        beta = self._beta.astype(np.float64)
        b = beta[bidx][:, None]
        sg = -1.0 if self.distance.is_inverted else 1.0
        m64 = mat.astype(np.float64)
        vp = sg * (m64 - b) + self.margin
        vn = sg * (b - m64) + self.margin
        ap = matches & (vp > 0)
        an = diffs & (vn > 0)
        total = float(
            np.sum(np.where(ap, vp, 0.0).sum(axis=1) * nneg + np.where(an, vn, 0.0).sum(axis=1) * npos)
        )
        divisor = int(np.sum(ap.sum(axis=1) * nneg + an.sum(axis=1) * npos))
        self.stats = {
            "num_pos_pairs": int(np.sum(ap.sum(axis=1) * nneg)),
            "num_neg_pairs": int(np.sum(an.sum(axis=1) * npos)),
            "divisor": divisor,
        }
        mode = self.reducer.fused_mode()
        if mode == "divisor":
            scale = 1.0 / divisor if divisor else 0.0
            self.reducer.stats = {"divisor": float(divisor)}
        elif mode == "mean":
            scale = 1.0 / K
        else:
            scale = 1.0
        gp = np.where(ap, scale * nneg[:, None], 0.0)
        gn = np.where(an, scale * npos[:, None], 0.0)
        dmat = sg * (gp - gn)
        nb = beta.shape[0]
        dbeta = np.bincount(bidx, weights=sg * (gn.sum(axis=1) - gp.sum(axis=1)), minlength=nb)
        terms = {"margin_loss": total * scale, "beta_reg_loss": 0.0}
        if self.learn_beta:
            if nb == 1:
                terms["beta_reg_loss"] = float(beta[0] * self.nu)
                dbeta[0] += self.nu
            else:
                terms["beta_reg_loss"] = float(np.sum(beta[bidx] * self.nu * ntrip) * scale)
                dbeta += np.bincount(bidx, weights=self.nu * ntrip * scale, minlength=nb)
            self.beta.grad += dbeta.astype(np.float32)
        dq, dr = self._grads(dmat.astype(np.float32), ctx)
        return terms, dq, dr

    def __repr__(self) -> str:
        return (
            f"MarginLoss(margin={self.margin}, nu={self.nu}, beta={self._beta.tolist()}, "
            f"triplets_per_anchor={self.triplets_per_anchor!r}, learn_beta={self.learn_beta}, "
            f"num_classes={self.num_classes}, distance={self.distance!r}, reducer={self.reducer!r})"
        )
