"""ManifoldLoss (Aziere & Todorovic 2019), pytorch-metric-learning's formulation."""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

import numpy as np

from .._validation import as_generator, check_array, check_float, check_int
from ..distances import CosineSimilarity
from ..parameter import Parameter
from .base_metric_loss_function import BaseMetricLossFunction, _Batch

if TYPE_CHECKING:
    from .._typing import Seed


def _lse_hinge(Fm, mc, margin):
    """Rows ``log(1 + sum_{j != mc_i, v_ij >= 0} exp(v_ij))`` with ``v_ij = Fm_ij - Fm_{i, mc_i} + margin``.
    Returns ``(values (N,), dvalues/dFm (N, K))``."""
    N = Fm.shape[0]
    rows = np.arange(N)
    v = Fm - Fm[rows, mc][:, None] + margin
    keep = v >= 0
    keep[rows, mc] = False
    e = np.where(keep, np.exp(np.where(keep, v, 0.0)), 0.0)
    s = 1.0 + e.sum(axis=1)
    w = e / s[:, None]
    dF = w.copy()
    dF[rows, mc] -= w.sum(axis=1)  # one entry per row: no repeated index
    return np.log(s), dF


class ManifoldLoss(BaseMetricLossFunction):
    """Ensemble deep manifold similarity with hard proxies: a random walk on the graph of the
    embeddings and ``K`` learnable proxies scores each embedding against every proxy.

    ``ManifoldLoss(l, K=50, lambdaC=1.0, alpha=0.8, margin=5e-4, seed=None, distance=None,
    reducer=None, embedding_regularizer=None, embedding_reg_weight=1, backend="mantissa")``

    With ``E = [embeddings; proxies]`` ((N + K) x l), ``S_ij = exp(2 max(s_ij, 0))`` for
    ``i != j`` (``s``: ``distance``, default cosine similarity), ``S_ii = 0``,
    ``S_bar = D^-1/2 S D^-1/2`` (``D``: row sums) and ``F = (1 - alpha) (I - alpha S_bar)^-1``:

        loss_int = mean_i log(1 + sum_{j != c_i, v_ij >= 0} exp(v_ij)),  v_ij = F_i,N+j - F_i,N+c_i + margin
        loss_ctx = the same with cos(F_i, F_N+j) (rows of F) in place of F_i,N+j
        loss     = loss_int + lambdaC * loss_ctx      (lambdaC = inf: loss_ctx only)

    where ``c_i`` is the meta-class (proxy) of embedding ``i``: given as ``indices_tuple`` (an (N,)
    integer array in ``[0, K)``), else drawn as in PML: every proxy once plus ``N - K`` uniform
    draws, shuffled (needs ``N >= K``), from ``seed`` (int or ``numpy.random.Generator``). The
    loss is already reduced. The proxies are a ``Parameter``
    ``(K, l)`` initialized from a standard normal draw of ``seed`` (``loss.parameters()``); each
    call **accumulates** dL/d proxies into ``proxies.grad``. The gradient goes through the matrix
    inverse, the normalization and the clamp (0 where ``s < 0``), as torch autograd does; the
    inverse runs in float64 (PML: float32).

    Inputs: ``embeddings`` (N, l); ``labels`` / ``ref_labels`` / ``ref_emb`` are not supported
    (ValueError); ``indices_tuple``: meta-classes (N,) or None. Output: ``LossOutput``
    (``terms = {"loss"}``). N = 0: loss 0, zero gradient. Cost: O((N + K)^3) (the inverse).

    Deviation: ``lambdaC = inf`` gives the context loss alone (PML multiplies it by inf).

    References: N. Aziere, S. Todorovic, "Ensemble Deep Manifold Similarity Learning using Hard
    Proxies", CVPR 2019; pytorch-metric-learning ``losses/manifold_loss.py``.

    Parameters
    ----------
    l : int
        Embedding size (>= 1).
    K : int, default 50
        Number of proxies (>= 1).
    lambdaC : float, default 1.0
        Weight of the context loss (>= 0, may be ``inf``).
    alpha : float, default 0.8
        Random-walk parameter, in (0, 1).
    margin : float, default 5e-4
    seed : int or numpy.random.Generator, optional
        Randomness of the proxies' initialization and of the meta-classes.

    Raises
    ------
    TypeError / ValueError
        Bad arguments (``lambdaC < 0`` ValueError, as PML); embeddings whose width is not ``l``,
        labels or ref_emb given, meta-classes of the wrong length or out of range, ``N < K``
        without meta-classes.
    """

    def __init__(
        self,
        l: int,  # noqa: E741 - pytorch-metric-learning's name for it, kept for keyword calls
        K: int = 50,
        lambdaC: float = 1.0,
        alpha: float = 0.8,
        margin: float = 5e-4,
        seed: Seed = None,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        if isinstance(lambdaC, bool) or not isinstance(lambdaC, numbers.Real) or np.isnan(lambdaC):
            raise TypeError(f"lambdaC must be a number, got {lambdaC!r}")
        if lambdaC < 0:
            raise ValueError(
                f"Incorrect value for lambdaC argument. Given lambdaC={lambdaC} "
                "but accepted only non-negative values"
            )
        self.l: int = check_int(l, "l", minimum=1)
        self.K: int = check_int(K, "K", minimum=1)
        self.lambdaC: float = float(lambdaC)
        self.alpha: float = check_float(alpha, "alpha")
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        self.margin: float = check_float(margin, "margin")
        self.rng = as_generator(seed)
        self.proxies = Parameter(self.rng.standard_normal((self.K, self.l)), name="proxies")

    def get_default_distance(self):
        return CosineSimilarity(backend=self.backend)

    def parameters(self):
        """``[proxies]`` (a (K, l) ``Parameter``)."""
        return [self.proxies]

    def _validate(self, embeddings, labels, indices_tuple, ref_emb, ref_labels):
        if labels is not None or ref_labels is not None:
            raise ValueError(
                "labels and ref_labels are not supported by ManifoldLoss (pass meta-classes as indices_tuple)"
            )
        if ref_emb is not None:
            raise ValueError("ref_emb is not supported by ManifoldLoss")
        emb = check_array(embeddings, "embeddings", ndim=2)
        N = emb.shape[0]
        if emb.shape[1] != self.l:
            raise ValueError(f"embeddings must have l={self.l} columns, got shape {emb.shape}")
        mc = None
        if indices_tuple is not None:
            arr = np.asarray(indices_tuple)
            if arr.dtype.kind not in "iu" and not (arr.size == 0 and arr.ndim == 1):
                raise TypeError(
                    f"indices_tuple (meta-classes) must be an integer array, got dtype {arr.dtype}"
                )
            if arr.ndim != 1 or arr.shape[0] != N:
                raise ValueError(f"indices_tuple (meta-classes) must have shape ({N},), got {arr.shape}")
            mc = arr.astype(np.int64)
            if mc.size and (mc.min() < 0 or mc.max() >= self.K):
                raise ValueError(
                    f"indices_tuple (meta-classes) must be in [0, {self.K}), "
                    f"got values in [{mc.min()}, {mc.max()}]"
                )
        return _Batch(emb, None, None, None, True, mc)

    def _meta_classes(self, N):
        if N < self.K:
            raise ValueError(
                f"ManifoldLoss draws every proxy once: it needs at least K={self.K} embeddings "
                f"without indices_tuple (meta-classes), got {N}"
            )
        mc = np.concatenate([np.arange(self.K), self.rng.integers(0, self.K, N - self.K)])
        return mc[self.rng.permutation(N)].astype(np.int64)

    def compute_loss(self, batch):
        N, K = batch.N, self.K
        if N == 0:
            return self.zero_losses(batch)
        mc = batch.indices_tuple if batch.indices_tuple is not None else self._meta_classes(N)
        E = np.concatenate([batch.emb, self.proxies.data], axis=0)
        mat, ctx = self.distance.forward_ctx(E, None, backend=self.backend, validate=False)
        s = mat.astype(np.float64)
        T = N + K
        c = np.maximum(s, 0.0)
        S = np.exp(c / 0.5)
        np.fill_diagonal(S, 0.0)
        deg = S.sum(axis=1)
        dh = deg**-0.5
        Sb = dh[:, None] * S * dh[None, :]
        A = np.eye(T) - self.alpha * Sb
        Linv = np.linalg.inv(A)
        F = (1.0 - self.alpha) * Linv
        dF = np.zeros_like(F)
        value = 0.0
        if np.isfinite(self.lambdaC):
            vi, dvi = _lse_hinge(F[:N, N:], mc, self.margin)
            value += vi.mean()
            dF[:N, N:] += dvi / N
            w_ctx = self.lambdaC
        else:
            w_ctx = 1.0
        Fe, Fp = F[:N], F[N:]
        ne = np.linalg.norm(Fe, axis=1)
        npx = np.linalg.norm(Fp, axis=1)
        C = (Fe @ Fp.T) / (ne[:, None] * npx[None, :])
        vc, dvc = _lse_hinge(C, mc, self.margin)
        value += w_ctx * vc.mean()
        dC = dvc * (w_ctx / N)
        # cosine backward: dC/dFe_i = Fp_j/(|e||p|) - C_ij e_i/|e|^2
        dFe = (dC / (ne[:, None] * npx[None, :])) @ Fp - (np.sum(dC * C, axis=1) / ne**2)[:, None] * Fe
        dFp = (dC / (ne[:, None] * npx[None, :])).T @ Fe - (np.sum(dC * C, axis=0) / npx**2)[:, None] * Fp
        dF[:N] += dFe
        dF[N:] += dFp
        red_value, dl = self._reduce_generic(np.array([value]), None, "already_reduced", batch)
        scale = float(np.asarray(dl).reshape(-1)[0])
        dLinv = (1.0 - self.alpha) * scale * dF
        dA = -Linv.T @ dLinv @ Linv.T
        dSb = -self.alpha * dA
        dS = dSb * dh[:, None] * dh[None, :]
        ddh = np.sum(dSb * S * dh[None, :], axis=1) + np.sum(dSb * S * dh[:, None], axis=0)
        ddeg = ddh * (-0.5) * deg**-1.5
        dS += ddeg[:, None]
        np.fill_diagonal(dS, 0.0)
        ds = dS * 2.0 * S * (s >= 0)
        dE, _ = self.distance.backward(ds.astype(np.float32), ctx)
        self.proxies.grad += dE[N:]
        dq = np.ascontiguousarray(dE[:N], dtype=np.float32)
        return {"loss": red_value}, dq, None

    def __repr__(self) -> str:
        return (
            f"ManifoldLoss(l={self.l}, K={self.K}, lambdaC={self.lambdaC}, alpha={self.alpha}, "
            f"margin={self.margin})"
        )
