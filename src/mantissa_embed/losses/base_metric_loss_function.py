"""LossOutput and BaseMetricLossFunction (pytorch-metric-learning's base class, with explicit gradients)."""

from __future__ import annotations

import inspect
import numbers
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .._typing import ArrayLike, IndicesTuple
from .._validation import check_array, check_float, check_labels
from ..backend import BACKENDS, get_backend
from ..distances import BaseDistance, LpDistance
from ..reducers import BaseReducer, MeanReducer
from ..utils import check_indices_tuple

if TYPE_CHECKING:
    from ..parameter import Parameter
    from ..regularizers import BaseRegularizer


@dataclass
class LossOutput:
    """What a loss call returns: ``loss`` (float), ``grad`` (N, D) float32 dL/d embeddings,
    ``ref_grad`` (M, D) float32 or None, ``terms`` (PML's sub-loss names -> float, summing to
    ``loss``) and ``unreduced`` (PML's loss dict, only with a DoNothingReducer; else None).
    """

    loss: float
    grad: np.ndarray
    ref_grad: np.ndarray | None = None
    terms: dict = field(default_factory=dict)
    unreduced: dict | None = None

    def __float__(self) -> float:
        return float(self.loss)


class _Batch:
    """Validated inputs of one loss call."""

    __slots__ = ("emb", "labels", "ref", "ref_labels", "same", "indices_tuple", "N", "M", "D")

    def __init__(
        self, emb, labels: ArrayLike, ref, ref_labels: ArrayLike, same, indices_tuple: IndicesTuple
    ) -> None:
        self.emb, self.labels, self.ref, self.ref_labels = emb, labels, ref, ref_labels
        self.same, self.indices_tuple = same, indices_tuple
        self.N, self.D = emb.shape
        self.M = self.N if ref is None else ref.shape[0]


def _is_jsonable(v):
    if v is None or isinstance(v, (bool, str, numbers.Real)) and not isinstance(v, np.ndarray):
        return not isinstance(v, float) or np.isfinite(v)
    return isinstance(v, (list, tuple)) and all(_is_jsonable(x) for x in v)


def _jsonable(v):
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (np.bool_, bool)):
        return bool(v)
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        return float(v)
    return v


class BaseMetricLossFunction:
    """Base class of the metric losses (pytorch-metric-learning's ``BaseMetricLossFunction``).

    ``BaseMetricLossFunction(distance=None, reducer=None, embedding_regularizer=None,
    embedding_reg_weight=1, backend="mantissa")``; defaults ``LpDistance()`` and the loss's
    ``get_default_reducer()``. ``loss_func(embeddings (N, D), labels (N,) = None, indices_tuple=None,
    ref_emb (M, D) = None, ref_labels (M,) = None)`` returns a ``LossOutput``. Subclasses
    implement ``compute_loss(batch) -> (terms, dq, dr)``. Rules: docs/losses.md.

    Raises ``ValueError`` for bad shapes, NaN/Inf, labels of the wrong length, no labels and no
    indices_tuple, indices out of range; ``TypeError`` for non-numeric or non-integer inputs.
    """

    def __new__(cls, *args, **kwargs):
        obj = super().__new__(cls)
        obj._init_args = (args, kwargs)  # for get_config()
        return obj

    def get_config(self) -> dict[str, Any]:
        """``{"type": class name, "args": {...}}``: the constructor arguments that are JSON-able
        (numbers, strings, bools, None and lists of them), and ``"dropped"``: the names of the
        others (distance, reducer, regularizer objects), which a rebuild leaves at their defaults."""
        args, kwargs = getattr(self, "_init_args", ((), {}))
        try:
            bound = inspect.signature(type(self)).bind(*args, **kwargs)
        except TypeError:  # pragma: no cover - the constructor accepted them
            return {"type": type(self).__name__, "args": {}, "dropped": ["*"]}
        out: dict[str, Any] = {}
        dropped: list[str] = []
        for name, value in bound.arguments.items():
            items = value.items() if isinstance(value, dict) and name == "kwargs" else [(name, value)]
            for k, v in items:
                (out.__setitem__(k, _jsonable(v)) if _is_jsonable(v) else dropped.append(k))
        return {"type": type(self).__name__, "args": out, "dropped": dropped}

    def __init__(
        self,
        distance: BaseDistance | None = None,
        reducer: BaseReducer | None = None,
        embedding_regularizer: BaseRegularizer | None = None,
        embedding_reg_weight=1,
        backend: str = "mantissa",
    ) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.backend = backend
        if distance is None:
            distance = self.get_default_distance()
        if not isinstance(distance, BaseDistance):
            raise TypeError(
                f"distance must be a BaseDistance (e.g. LpDistance()), got {type(distance).__name__}"
            )
        self.distance = distance
        if reducer is None:
            reducer = self.get_default_reducer()
        if not isinstance(reducer, BaseReducer):
            raise TypeError(
                f"reducer must be a BaseReducer (e.g. AvgNonZeroReducer()), got {type(reducer).__name__}"
            )
        self.reducer = reducer
        if embedding_regularizer is not None and not callable(embedding_regularizer):
            raise TypeError(
                "embedding_regularizer must be callable (embeddings -> object with .loss and .grad)"
            )
        self.embedding_regularizer = embedding_regularizer
        self.embedding_reg_weight = check_float(embedding_reg_weight, "embedding_reg_weight")
        self.stats: dict[str, Any] = {}

    # -- PML structure -------------------------------------------------------------------------
    def get_default_distance(self) -> BaseDistance:
        return LpDistance(p=2, backend=self.backend)

    def get_default_reducer(self) -> BaseReducer:
        return MeanReducer()

    def _sub_loss_names(self):
        return ["loss"]

    def sub_loss_names(self) -> list[str]:
        names = self._sub_loss_names()
        if self.embedding_regularizer is not None:
            names = names + ["embedding_reg_loss"]
        return names

    def parameters(self) -> list[Parameter]:
        """Learnable ``Parameter`` objects (none for these losses)."""
        return []

    def compute_loss(self, batch: _Batch) -> tuple[dict[str, float], np.ndarray, np.ndarray | None]:
        """Return ``(terms: dict[str, float], dq (N, D), dr (M, D) or None)`` for a validated batch."""
        raise NotImplementedError

    # -- the call --------------------------------------------------------------------------------
    def __call__(
        self,
        embeddings: ArrayLike,
        labels: ArrayLike | None = None,
        indices_tuple: IndicesTuple | None = None,
        ref_emb: ArrayLike | None = None,
        ref_labels: ArrayLike | None = None,
    ) -> LossOutput:
        batch = self._validate(embeddings, labels, indices_tuple, ref_emb, ref_labels)
        self.stats = {}
        self._unreduced: dict[str, Any] = {}
        terms, dq, dr = self.compute_loss(batch)
        terms = {k: float(v) for k, v in terms.items()}
        if self.embedding_regularizer is not None:
            out = self.embedding_regularizer(batch.emb)
            g = check_array(out.grad, "embedding_regularizer(...).grad", ndim=2, finite=False)
            if g.shape != batch.emb.shape:
                raise ValueError(
                    f"embedding_regularizer returned a gradient of shape {g.shape}, "
                    f"expected {batch.emb.shape}"
                )
            w = self.embedding_reg_weight
            terms["embedding_reg_loss"] = w * float(out.loss)
            dq = dq + np.float32(w) * g
        loss = float(sum(terms.values()))
        unreduced = None
        if self.reducer.records_unreduced:
            unreduced = dict(self._unreduced)
            for name in self.sub_loss_names():
                if name not in unreduced and self.reducer.leaf(name).records_unreduced:
                    v = terms.get(name, 0.0)
                    unreduced[name] = {
                        "losses": v if v != 0 else 0,
                        "indices": None,
                        "reduction_type": "already_reduced",
                    }
        self._unreduced = {}
        return LossOutput(
            loss=loss,
            grad=np.ascontiguousarray(dq, dtype=np.float32),
            ref_grad=None if dr is None else np.ascontiguousarray(dr, dtype=np.float32),
            terms=terms,
            unreduced=unreduced,
        )

    forward = __call__

    def _validate(self, embeddings, labels, indices_tuple, ref_emb, ref_labels):
        emb = check_array(embeddings, "embeddings", ndim=2)
        N, D = emb.shape
        if D == 0 and N > 0:
            raise ValueError(f"embeddings must have at least one column, got shape {emb.shape}")
        same_labels_obj = labels is not None and ref_labels is labels
        lab = None if labels is None else check_labels(labels, "labels", n=N)
        if ref_emb is None:
            if ref_labels is not None and not same_labels_obj:
                raise ValueError("ref_labels was given without ref_emb")
            ref, rlab, same = None, lab, True
        else:
            ref = check_array(ref_emb, "ref_emb", ndim=2)
            if ref.shape[1] != D:
                raise ValueError(f"ref_emb must have {D} columns like embeddings, got shape {ref.shape}")
            if ref_labels is None:
                rlab = None
            elif same_labels_obj:
                rlab = lab
                if ref.shape[0] != N:
                    raise ValueError(
                        f"ref_labels must have length {ref.shape[0]} (one per ref_emb row), got {N}"
                    )
            else:
                rlab = check_labels(ref_labels, "ref_labels", n=ref.shape[0])
            same = same_labels_obj
        M = N if ref is None else ref.shape[0]
        if indices_tuple is None:
            if lab is None:
                raise ValueError("labels and indices_tuple cannot both be None")
            if rlab is None:
                raise ValueError(
                    "ref_labels is required with ref_emb (to enumerate the pairs), "
                    "unless an indices_tuple is given"
                )
            it = None
        else:
            it = check_indices_tuple(indices_tuple, N, M)
        return _Batch(emb, lab, ref, rlab, same, it)

    # -- helpers for subclasses ------------------------------------------------------------------
    @property
    def engine(self):
        return get_backend(self.backend)

    def _fused_mode(self, supported=("avg_non_zero", "mean")):
        """The reducer's ``fused_mode`` when it is one of
        ``supported`` (the reductions this loss's fused path computes), else None."""
        mode = self.reducer.fused_mode()
        return mode if mode in supported else None

    def _mat(self, batch):
        return self.distance.forward_ctx(batch.emb, batch.ref, backend=self.backend, validate=False)

    def _grads(self, dmat, ctx):
        return self.distance.backward(dmat, ctx)

    def _zero_grads(self, batch):
        dq = np.zeros((batch.N, batch.D), dtype=np.float32)
        dr = None if batch.ref is None else np.zeros((batch.M, batch.D), dtype=np.float32)
        return dq, dr

    def zero_losses(self, batch):
        """(terms of zeros, zero gradients): PML's ``zero_losses``."""
        dq, dr = self._zero_grads(batch)
        return {k: 0.0 for k in self._sub_loss_names()}, dq, dr

    def _reduce_generic(self, losses, indices, reduction_type, batch, loss_name=None, divisor=None):
        """Reduce ``losses`` with ``self.reducer``: ``(value, d value / d losses)``.

        ``loss_name`` is the sub-loss (PML's loss-dict key) a MultipleReducers or DoNothingReducer
        needs; inferred when the loss has one sub-loss, or pos_loss / neg_loss for pair reductions.
        ``divisor`` goes to a DivisorReducer.
        """
        red = self.reducer
        if red.needs_loss_name:
            name = self._infer_loss_name(loss_name, reduction_type)
            red = red.leaf(name)
            if red.records_unreduced:
                if getattr(self, "_unreduced", None) is None:
                    self._unreduced = {}
                rec = losses if np.isscalar(losses) else np.array(losses, dtype=np.float64)
                if not np.isscalar(rec) and reduction_type == "already_reduced":
                    rec = rec.reshape(-1)
                self._unreduced[name] = {"losses": rec, "indices": indices, "reduction_type": reduction_type}
        value, dl = red(losses, indices, reduction_type, batch.emb, batch.labels, **red.call_kwargs(divisor))
        if dl is None:
            dl = np.zeros(np.shape(losses), dtype=np.float64)
        return value, dl

    def _infer_loss_name(self, loss_name, reduction_type):
        if loss_name is not None:
            return loss_name
        names = self._sub_loss_names()
        if len(names) == 1:
            return names[0]
        if "pos_loss" in names and "neg_loss" in names and reduction_type in ("pos_pair", "neg_pair"):
            return "pos_loss" if reduction_type == "pos_pair" else "neg_loss"
        raise ValueError(
            f"{type(self).__name__}: cannot tell which sub-loss ({names}) a "
            f"{reduction_type!r} reduction belongs to; pass loss_name to _reduce_generic"
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
