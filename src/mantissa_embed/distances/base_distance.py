"""BaseDistance: pytorch-metric-learning's distance contract, with an explicit backward."""

from __future__ import annotations

import numbers
import threading
from typing import Any

import numpy as np

from .._checks.arrays import check_bool
from .._typing import ArrayLike, Float32Array
from .._validation import check_array, check_float
from ..backend import BACKENDS, get_backend
from . import _numpy_ops as _ops


class DistanceContext:
    """What ``BaseDistance.backward`` needs from one forward pass (opaque to callers).

    Attributes: ``query`` / ``ref`` (the embeddings the matrix was computed from, after
    normalization; ``ref is query`` when the reference set is the batch), ``query_norms`` /
    ``ref_norms`` (None without normalization), ``base`` (the matrix before ``power``),
    ``mat`` (the output), ``same`` (reference is the batch), ``engine`` (backend module),
    ``shape`` (N, M, D).
    """

    __slots__ = (
        "query",
        "ref",
        "query_norms",
        "ref_norms",
        "base",
        "mat",
        "same",
        "engine",
        "shape",
        "extra",
    )
    query: Any
    ref: Any
    query_norms: Any
    ref_norms: Any
    base: Any
    mat: Any
    same: bool
    engine: Any
    shape: tuple[int, int, int]
    extra: Any

    def __init__(self, **kw) -> None:
        for k in self.__slots__:
            setattr(self, k, kw.get(k))


class BaseDistance:
    """Base class of distances and similarities (pytorch-metric-learning's ``BaseDistance``).

    ``mat = distance(query_emb (N, D), ref_emb=None (M, D))`` -> (N, M) float32, after optional
    Lp normalization of the rows, raised to ``power``; ``dq, dr = distance.backward(dmat)`` from
    the cache of the last call (``dr`` None when ``ref_emb`` was None). Losses use the re-entrant
    ``forward_ctx`` / ``backward`` pair. Parameters: ``normalize_embeddings=True``
    (``torch.nn.functional.normalize(x, p)``, eps 1e-12), ``p=2`` (any ``p >= 1`` or inf for
    classes with ``_general_p``, else only 2), ``power=1`` (> 0), ``is_inverted=False`` (True for
    similarities), ``backend="mantissa"`` (losses and miners pass their own).

    Raises ``ValueError`` for an unsupported ``p``, ``power <= 0`` or an unknown backend, and
    ``TypeError`` for arguments of the wrong type.
    """

    #: Subclasses that implement every p >= 1 (the norm of the distance and of the normalization).
    _general_p = False

    def __init__(
        self,
        normalize_embeddings: bool = True,
        p: float = 2,
        power: float = 1,
        is_inverted: bool = False,
        backend: str = "mantissa",
    ) -> None:
        if isinstance(p, bool) or not isinstance(p, numbers.Real):
            raise TypeError(f"p must be a number, got {type(p).__name__}")
        if not self._general_p and p != 2:
            raise ValueError(f"p={p!r} is not supported by {type(self).__name__}: only the L2 norm (p=2)")
        if not p >= 1:  # also rejects NaN
            raise ValueError(f"p must be >= 1 (or inf), got {p!r}")
        self.p: float = p if p == float("inf") else (int(p) if p == int(p) else float(p))
        self.power: float = check_float(power, "power", minimum=0.0, strict=True)
        if self.power == int(self.power):
            self.power = int(self.power)
        self.normalize_embeddings: bool = check_bool(normalize_embeddings, "normalize_embeddings")
        self.is_inverted: bool = check_bool(is_inverted, "is_inverted")
        self.backend: str = _check_backend(backend)
        self._ctx: DistanceContext | None = None
        self._ws: dict[Any, Any] = {}

    # -- PML helpers -------------------------------------------------------------------------
    def smallest_dist(self, a, b):
        """Elementwise "closest" of two arrays: min for distances, max for similarities."""
        return np.maximum(a, b) if self.is_inverted else np.minimum(a, b)

    def largest_dist(self, a, b):
        """Elementwise "farthest" of two arrays: max for distances, min for similarities."""
        return np.minimum(a, b) if self.is_inverted else np.maximum(a, b)

    def margin(self, x, y):
        """How much farther ``x`` is than ``y``: ``x - y`` (similarities: ``y - x``)."""
        return y - x if self.is_inverted else x - y

    def normalize(self, embeddings, dim=1):
        """Lp-normalize along ``dim`` with ``p = self.p`` (numpy; eps 1e-12)."""
        e = np.asarray(embeddings)
        nrm = np.linalg.norm(e.astype(np.float64), ord=self.p, axis=dim, keepdims=True)
        return (e / np.maximum(nrm, 1e-12)).astype(e.dtype, copy=False)

    def maybe_normalize(self, embeddings, dim=1):
        """``normalize`` when ``normalize_embeddings``, else the input."""
        return self.normalize(embeddings, dim=dim) if self.normalize_embeddings else np.asarray(embeddings)

    def get_norm(self, embeddings, dim=1):
        """Row Lp norms (``p = self.p``)."""
        return np.linalg.norm(np.asarray(embeddings, dtype=np.float64), ord=self.p, axis=dim).astype(
            np.float32
        )

    def pairwise_distance(self, query_emb, ref_emb):
        """Row-wise distances between ``query_emb[i]`` and ``ref_emb[i]`` (both (N, D)), no power."""
        raise NotImplementedError

    # -- forward / backward --------------------------------------------------------------------
    def __call__(self, query_emb: ArrayLike, ref_emb: ArrayLike | None = None) -> Float32Array:
        """(N, M) float32 matrix; caches what ``backward`` needs."""
        mat, self._ctx = self.forward_ctx(query_emb, ref_emb)
        return mat

    def forward(self, query_emb: ArrayLike, ref_emb: ArrayLike | None = None) -> Float32Array:
        """Same as calling the object (PML's ``forward``)."""
        return self(query_emb, ref_emb)

    def forward_ctx(
        self,
        query_emb: ArrayLike,
        ref_emb: ArrayLike | None = None,
        backend: str | None = None,
        validate: bool = True,
    ) -> tuple[Float32Array, DistanceContext]:
        """Re-entrant forward: returns ``(mat, ctx)`` for ``backward``.

        Parameters
        ----------
        query_emb : (N, D) array_like (float32 after conversion, finite)
        ref_emb : (M, D) array_like, optional
        backend : str, optional
            Overrides ``self.backend`` for this call.
        validate : bool, default True
            False skips the checks (the caller already validated float32 C-contiguous finite input).

        Raises
        ------
        ValueError
            Not 2-D, NaN/Inf, or different numbers of columns.
        """
        if validate:
            q = check_array(query_emb, "query_emb", ndim=2)
            r = None if ref_emb is None else check_array(ref_emb, "ref_emb", ndim=2)
            if r is not None and r.shape[1] != q.shape[1]:
                raise ValueError(
                    f"ref_emb must have {q.shape[1]} columns like query_emb, got shape {r.shape}"
                )
        else:
            q, r = query_emb, ref_emb  # type: ignore[assignment]  # validate=False: checked arrays
        eng = get_backend(self.backend if backend is None else _check_backend(backend))
        same = r is None
        ctx = DistanceContext(
            same=same, engine=eng, shape=(q.shape[0], (q if r is None else r).shape[0], q.shape[1])
        )
        if self.normalize_embeddings:
            norm_fw = eng.l2_normalize_forward if self.p == 2 else self._lp_normalize_forward
            qn, qnorms = norm_fw(q)
            if same:
                rn, rnorms = qn, qnorms
            else:
                rn, rnorms = norm_fw(r)
            if self.p != 2:
                ctx.extra = {"q_raw": q, "r_raw": q if same else r}
        else:
            qn, qnorms = q, None
            rn, rnorms = (qn, None) if same else (r, None)
        ctx.query, ctx.ref, ctx.query_norms, ctx.ref_norms = qn, rn, qnorms, rnorms
        base, mat = self._compute(qn, rn, ctx)
        ctx.base, ctx.mat = base, mat
        return mat, ctx

    def backward(
        self, dmat: ArrayLike, ctx: DistanceContext | None = None
    ) -> tuple[Float32Array, Float32Array | None]:
        """Gradients ``(dquery, dref)`` of a scalar loss given ``dmat = dL/d mat`` (N, M).

        ``ctx``: from ``forward_ctx``; default the cache of the last call. ``dref`` is None
        when the reference set was the batch (the two roles are summed into ``dquery``).

        Raises
        ------
        RuntimeError
            No forward pass was cached.
        ValueError
            ``dmat`` of the wrong shape.
        """
        if ctx is None:
            ctx = self._ctx
            if ctx is None:
                raise RuntimeError("backward() called before a forward pass")
        N, M, D = ctx.shape
        dmat = check_array(dmat, "dmat", ndim=2, finite=False)
        if dmat.shape != (N, M):
            raise ValueError(f"dmat must have shape ({N}, {M}), got {dmat.shape}")
        eng = ctx.engine
        dq, dr = self._compute_backward(dmat, ctx)
        if ctx.same:  # (a subclass may have folded both roles into dq already: dr None)
            if dr is not None:
                dq = dq + dr
            dr = None
        if self.normalize_embeddings and self.p != 2:
            dq = _ops.lp_normalize_backward(dq, ctx.extra["q_raw"], ctx.query_norms, self.p)
            if dr is not None:
                dr = _ops.lp_normalize_backward(dr, ctx.extra["r_raw"], ctx.ref_norms, self.p)
        elif self.normalize_embeddings:
            dq = eng.l2_normalize_backward(dq, ctx.query, ctx.query_norms, dx=dq)
            if dr is not None:
                dr = eng.l2_normalize_backward(dr, ctx.ref, ctx.ref_norms, dx=dr)
        return dq, dr

    def _lp_normalize_forward(self, x):
        return _ops.lp_normalize_forward(x, self.p)

    # -- subclass hooks --------------------------------------------------------------------------
    def _compute(self, q, r, ctx):
        """(base matrix, output matrix = base ** power); subclasses implement ``compute_mat``."""
        base = self.compute_mat(q, r, ctx)
        mat = base if self.power == 1 else (base**self.power).astype(np.float32, copy=False)
        return base, mat

    def _compute_backward(self, dmat, ctx):
        if self.power != 1:
            b = ctx.base
            with np.errstate(divide="ignore", invalid="ignore"):
                dbase = dmat * (self.power * b ** (self.power - 1))
            dbase = np.where(np.isfinite(dbase), dbase, 0).astype(np.float32)
        else:
            dbase = dmat
        return self.compute_mat_backward(dbase, ctx)

    def compute_mat(self, query_emb, ref_emb, ctx):
        """(N, M) matrix between the (normalized) rows; ``ref_emb is query_emb`` for the batch."""
        raise NotImplementedError

    def compute_mat_backward(self, dbase, ctx):
        """(dq, dr) for ``dbase = dL/d compute_mat(...)``, both roles separate; when ``ctx.same``
        a subclass may return ``(dq + dr, None)`` (both roles folded)."""
        raise NotImplementedError

    def _workspace(self, n):
        """Scratch reused across calls, one per thread (the kernels run without the GIL)."""
        key = threading.get_ident()
        ws = self._ws.get(key)
        if ws is None or ws.shape[0] < n:
            ws = np.empty(max(n, 1), dtype=np.float32)
            self._ws[key] = ws
        return ws

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_ctx"] = None
        state["_ws"] = {}
        return state

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(normalize_embeddings={self.normalize_embeddings}, "
            f"p={self.p}, power={self.power}, is_inverted={self.is_inverted})"
        )


def _check_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    return backend
