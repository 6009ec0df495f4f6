"""BaseProxyLoss: the base of the losses that own a class-weight Parameter."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._typing import ArrayLike, IndicesTuple
from .._validation import as_generator, check_array, check_int
from ..parameter import Parameter
from ..utils import _miner_weights, check_indices_tuple
from ._class_weights import check_class_batch, normal_init, place_parameter
from ._proxy_math import check_distance64, similarity64, xent_in_scratch
from ._scratch import using_workspace
from .base_metric_loss_function import BaseMetricLossFunction, _Batch
from .mixins import WeightRegularizerMixin

if TYPE_CHECKING:
    from .._typing import Seed
    from ..regularizers import BaseRegularizer


class BaseProxyLoss(WeightRegularizerMixin, BaseMetricLossFunction):
    """Base of the losses that own a class-weight ``Parameter``.

    Subclasses create the weight with ``_make_weight`` and implement ``_forward64(x, labels,
    miner_weights, W) -> (entries, backward)``, ``entries`` a list of ``(name, losses, indices,
    reduction_type, divisor)`` and ``backward(dlosses list) -> (dx, dW)``. ``W`` is float64; ``x`` is
    float64 in ``compute64`` and float32 on the call path. Keyword arguments, call and errors:
    docs/losses.md, "Losses that own class weights".
    """

    #: name of the Parameter attribute; True when it is stored (embedding_size, K) (rows = columns)
    _weight_attr = "W"
    _transposed = True
    _uses_ref_weights = False  # convert_to_weights(using_ref=...)

    def __init__(
        self,
        num_classes: int,
        embedding_size: int,
        weight_regularizer: BaseRegularizer | None = None,
        weight_reg_weight=1,
        weight_init_func=None,
        seed: Seed = None,
        **kwargs,
    ) -> None:
        self.num_classes = check_int(num_classes, "num_classes", minimum=1)
        self.embedding_size = check_int(embedding_size, "embedding_size", minimum=1)
        self._init_weight_regularizer(weight_regularizer, weight_reg_weight)
        super().__init__(**kwargs)
        self._check_distance()
        if weight_init_func is not None and not callable(weight_init_func):
            raise TypeError(
                f"weight_init_func must be callable (shape, rng) -> array, "
                f"got {type(weight_init_func).__name__}"
            )
        self.weight_init_func = (
            weight_init_func if weight_init_func is not None else self.get_default_weight_init_func()
        )
        self._rng = as_generator(seed)

    def _check_distance(self) -> None:
        check_distance64(self.distance)

    def get_default_weight_init_func(self):
        return normal_init

    def _make_weight(self, shape, name):
        w = check_array(
            self.weight_init_func(tuple(shape), self._rng), "weight_init_func(...)", dtype=np.float64
        )
        if w.shape != tuple(shape):
            raise ValueError(f"weight_init_func returned shape {w.shape}, expected {tuple(shape)}")
        self._weight_shape = tuple(shape)
        return Parameter(w, name=name)

    @property
    def _weight(self):
        return getattr(self, self._weight_attr)

    def parameters(self):
        """``[weight Parameter]``: give it to an optimizer to train the class weights."""
        return [self._weight]

    def _sub_loss_names(self):
        return ["loss"]

    def sub_loss_names(self):
        names = self._sub_loss_names() + self.regularization_loss_names()
        if self.embedding_regularizer is not None:
            names = names + ["embedding_reg_loss"]
        return names

    # -- validation -------------------------------------------------------------------------
    def _validate_inputs(self, embeddings, labels, indices_tuple=None, ref_emb=None, ref_labels=None):
        if ref_emb is not None and ref_emb is not embeddings:
            raise ValueError(f"ref_emb is not supported by {type(self).__name__}")
        if ref_labels is not None and ref_labels is not labels:
            raise ValueError(f"ref_labels is not supported by {type(self).__name__}")
        emb, lab = check_class_batch(self, embeddings, labels)
        N = emb.shape[0]
        it = None if indices_tuple is None else check_indices_tuple(indices_tuple, N, N)
        return emb, lab, it

    # -- the float64 computation ---------------------------------------------------------------
    def _rows(self, W):
        return W.T if self._transposed else W

    def _reduce(self, name, losses, indices, rtype, divisor, emb, labels):
        """Reduce one sub-loss with ``self.reducer`` through the shared ``_reduce_generic`` (so
        MultipleReducers / DoNothingReducer / DivisorReducer behave as for every loss)."""
        losses = np.asarray(losses, dtype=np.float64)
        value, dl = self._reduce_generic(
            losses,
            indices,
            rtype,
            _Batch(emb, labels, None, labels, True, None),
            loss_name=name,
            divisor=divisor,
        )
        return float(value), np.asarray(dl, dtype=np.float64).reshape(losses.shape)

    # -- the two precisions: float64 embeddings give the reference, float32 ones the call path ----
    def _similarity(self, X, R):
        """``self.distance(X, R)`` (N, M) and ``backward(dmat) -> (dX, dR)`` in the dtype of ``X``:
        float64 through numpy, float32 through the engine's SGEMM (``dR`` float64).
        """
        if X.dtype != np.float32:
            return similarity64(self.distance, X, R)
        R32 = np.ascontiguousarray(R, dtype=np.float32)
        mat, back = similarity64(self.distance, X, R32, gemm=self.engine.sgemm)

        def backward(dmat):
            with np.errstate(over="ignore"):
                dm = dmat.astype(np.float32, copy=False)
            dX, dR = back(dm)
            return dX, dR.astype(np.float64)

        return mat, backward

    def _xent(self, z, labels):
        """Row softmax cross-entropy of logits ``z`` (N, C): ``(losses (N,) float64, backward)``; float32
        ``z`` runs the engine's fast row softmax NLL.
        """
        if z.dtype != np.float32:
            return xent_in_scratch(z, labels)
        eng, cols = self.engine, np.arange(z.shape[1])
        z = np.ascontiguousarray(z)
        losses, lse, valid = eng.softmax_nll_fast_forward(z, labels, cols)
        # a row is invalid only when its target logit is -inf (an overflow): its loss is +inf
        losses = np.where(valid, losses.astype(np.float64), np.inf)

        def backward(dl):
            return eng.softmax_nll_fast_backward(z, labels, cols, lse, dl.astype(np.float32))

        return losses, backward

    def _compute(self, x, labels, indices_tuple, W):
        """``(terms, dx, dW)`` for embeddings ``x`` (float64: the reference; float32: the call path,
        see ``_similarity``) and the float64 weight ``W``."""
        names = self._sub_loss_names() + self.regularization_loss_names()
        if x.shape[0] == 0:
            return {k: 0.0 for k in names}, np.zeros_like(x), np.zeros_like(W)
        mw = _miner_weights(indices_tuple, labels, dtype=np.float64, using_ref=self._uses_ref_weights)
        entries, backward = self._forward64(x, labels, mw, W)
        terms, dls = {}, []
        for name, losses, indices, rtype, divisor in entries:
            v, dl = self._reduce(name, losses, indices, rtype, divisor, x, labels)
            terms[name] = v
            dls.append(dl)
        dx, dW = backward(dls)
        if self.weight_regularizer is not None:
            v, g = self.weight_regularization64(self._rows(W))
            terms["weight_reg_loss"] = v
            dW = dW + (g.T if self._transposed else g)
        return terms, dx, dW

    def compute64(self, x, labels: ArrayLike, indices_tuple: IndicesTuple | None = None, W=None):
        """The loss in float64: ``(terms, dx (N, D), dW)`` for float64 embeddings ``x`` and weight
        ``W`` (default: the current weight). No embedding regularizer, no state change."""
        W = self._weight.data.astype(np.float64) if W is None else np.asarray(W, dtype=np.float64)
        return self._compute(np.asarray(x, dtype=np.float64), labels, indices_tuple, W)

    # -- hooks of BaseMetricLossFunction.__call__ ----------------------------------------------
    def _validate(self, embeddings, labels, indices_tuple, ref_emb, ref_labels):
        emb, lab, it = self._validate_inputs(embeddings, labels, indices_tuple, ref_emb, ref_labels)
        place_parameter(self._weight, getattr(self, "_weight_shape", None))
        return _Batch(emb, lab, None, lab, True, it)

    #: hyperparameters that scale the logits (named in the overflow error)
    _SCALE_NAMES = ("temperature", "softmax_scale", "alpha", "la", "gamma", "scale", "margin")

    def compute_loss(self, batch):
        """Terms and dL/d embeddings; adds dL/d weight to the weight's ``grad``. ``ValueError`` (naming
        the scale hyperparameters, ``grad`` unchanged) when the loss or a gradient overflows float32.
        """
        # float32 embeddings: the (N, D) x (D, M) contractions run in float32 (see _similarity);
        # rows whose squared norm over- or underflows float32 take the float64 route instead.
        # An overflow (float32 logits, casts) gives inf / NaN, reported below as a ValueError.
        x = batch.emb
        sq = np.einsum("ij,ij->i", x, x)
        if not (np.isfinite(sq).all() and np.all((sq == 0) | (sq >= 1e-30))):
            x = x.astype(np.float64)
        with using_workspace(self), np.errstate(over="ignore", invalid="ignore"):  # reused temporaries
            W = self._weight.data.astype(np.float64)
            terms, dx, dW = self._compute(x, batch.labels, batch.indices_tuple, W)
            dx32, dW32 = dx.astype(np.float32), dW.astype(np.float32)  # copies (dx may be a scratch array)
            ok = (
                all(np.isfinite(np.float32(v)) for v in terms.values())
                and np.isfinite(dx32).all()
                and np.isfinite(dW32).all()
            )
        if not ok:
            hyper = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._SCALE_NAMES if hasattr(self, k))
            raise ValueError(
                f"{type(self).__name__}: the loss or its gradient is not finite in float32 "
                f"(overflow); reduce the scale hyperparameters ({hyper}) or the embedding norms"
            )
        self._weight.grad += dW32
        return terms, dx32, None

    def _logits_input(self, embeddings):
        emb = check_array(embeddings, "embeddings", ndim=2)
        if emb.shape[1] != self.embedding_size:
            raise ValueError(
                f"embeddings must have embedding_size={self.embedding_size} columns, got shape {emb.shape}"
            )
        place_parameter(self._weight, getattr(self, "_weight_shape", None))
        return emb.astype(np.float64)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_classes={self.num_classes}, embedding_size={self.embedding_size})"
