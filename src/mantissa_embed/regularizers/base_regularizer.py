"""BaseRegularizer: a penalty on embeddings or on a weight matrix, with its explicit gradient."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._typing import ArrayLike
from .._validation import check_array
from ..distances import BaseDistance, CosineSimilarity, LpDistance
from ..losses.base_metric_loss_function import LossOutput
from ..reducers import BaseReducer, MeanReducer


class BaseRegularizer:
    """Base class of regularizers (PML's ``BaseRegularizer``, with an explicit backward).

    ``reg(x (N, D))`` returns a ``LossOutput`` (``loss``, ``grad`` (N, D)
    float32, ``terms={"loss"}``); ``forward64(x)`` gives ``(value, grad)`` in float64. Subclasses
    implement ``compute_loss(x) -> (losses, indices, reduction_type, backward, extra)``, ``extra``
    ``{"divisor": ...}`` or None; the losses are reduced by ``reducer`` (default MeanReducer) with
    labels ``arange(N)``.

    Raises ``TypeError`` for a bad distance or reducer or non-numeric ``x``; ``ValueError`` for ``x``
    not 2-D or with NaN/Inf.
    """

    def __init__(self, distance: BaseDistance | None = None, reducer: BaseReducer | None = None) -> None:
        if distance is None:
            distance = self.get_default_distance()
        if not isinstance(distance, BaseDistance):
            raise TypeError(f"distance must be a BaseDistance, got {type(distance).__name__}")
        if reducer is None:
            reducer = self.get_default_reducer()
        if not isinstance(reducer, BaseReducer):
            raise TypeError(f"reducer must be a BaseReducer, got {type(reducer).__name__}")
        self.distance, self.reducer = distance, reducer
        self.stats: dict[str, Any] = {}

    def get_default_distance(self) -> BaseDistance:
        return LpDistance()

    def get_default_reducer(self) -> BaseReducer:
        return MeanReducer()

    def compute_loss(self, x):
        raise NotImplementedError

    def forward64(self, x: ArrayLike) -> tuple[float, np.ndarray]:
        """``(value, grad)`` in float64 for a float64 ``x`` (N, D): the computation of ``__call__``."""
        x = np.asarray(x, dtype=np.float64)
        self.stats = {}
        losses, indices, rtype, backward, extra = self.compute_loss(x)
        if losses.shape[0] == 0:
            return 0.0, np.zeros_like(x)
        kw = self.reducer.call_kwargs(extra["divisor"]) if extra else {}
        value, dl = self.reducer(losses, indices, rtype, x, np.arange(x.shape[0]), **kw)
        if dl is None:
            return float(value), np.zeros_like(x)
        return float(value), backward(np.asarray(dl, dtype=np.float64))

    def __call__(self, x: ArrayLike) -> LossOutput:
        arr = check_array(x, "x", ndim=2, dtype=np.float64)
        value, grad = self.forward64(arr)
        return LossOutput(
            loss=value, grad=np.ascontiguousarray(grad, dtype=np.float32), terms={"loss": value}
        )

    forward = __call__

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _lp_norm(x, p):
    """Row norms ``||x_i||_p`` (N,) and their backward ``(dnorm (N,)) -> dx``; gradient 0 at a zero row."""
    a = np.abs(x)
    if p == np.inf:
        nrm = a.max(axis=1, initial=0.0)
        hit = (a == nrm[:, None]) & (nrm[:, None] > 0)
        cnt = np.maximum(hit.sum(axis=1, keepdims=True), 1)
        jac = np.sign(x) * hit / cnt
    elif p == 1:
        nrm = a.sum(axis=1)
        jac = np.sign(x)
    else:
        nrm = np.sum(a**p, axis=1) ** (1.0 / p)
        safe = np.where(nrm > 0, nrm, 1.0)
        jac = np.sign(x) * (a / safe[:, None]) ** (p - 1)
        jac[nrm == 0] = 0.0
    return nrm, (lambda dn: dn[:, None] * jac)


def _check_cosine(distance, name):
    if type(distance) is not CosineSimilarity or distance.power != 1 or distance.p != 2:
        raise ValueError(f"{name} requires distance=CosineSimilarity() (p=2, power=1), got {distance!r}")
