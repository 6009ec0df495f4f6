"""P2SGradLoss (Zhang et al. 2019, "P2SGrad: Refined Gradients for Optimizing Deep Face Models")."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._checks.distance import l2_normalize_rows
from .._checks.proxy_losses import p2sgrad64
from .._typing import ArrayLike, IndicesTuple
from .._validation import as_generator, check_array, check_int
from ..backend import get_backend
from ..parameter import Parameter
from ._class_weights import check_class_batch, place_parameter
from .base_metric_loss_function import BaseMetricLossFunction, LossOutput

if TYPE_CHECKING:
    from .._typing import Seed
    from ..regularizers import BaseRegularizer

__all__ = ["P2SGradLoss"]


class P2SGradLoss(BaseMetricLossFunction):
    """P2SGrad: the mean squared error between cosines and one-hot class targets.

    ``P2SGradLoss(num_classes, embedding_size, *, embedding_regularizer=None,
    embedding_reg_weight=1.0, seed=None, backend="mantissa")``: ``L = mean_ij (cos theta_ij - [j =
    y_i])^2``, the cosines clamped to [-1, 1]. ``weight`` (num_classes, embedding_size) is
    renormalized in place before each call; ``weight.grad`` accumulates dL/d weight.

    Raises ``TypeError`` for ``distance`` / ``reducer`` or unknown keywords; ``ValueError`` for bad
    labels, ``indices_tuple``, ``ref_emb`` or ``ref_labels``.
    Source: X. Zhang et al., "P2SGrad", CVPR 2019 (arXiv:1905.02479).
    """

    def __init__(
        self,
        num_classes: int,
        embedding_size: int,
        *,
        embedding_regularizer: BaseRegularizer | None = None,
        embedding_reg_weight: float = 1.0,
        seed: Seed = None,
        backend: str = "mantissa",
        **kwargs,
    ) -> None:
        for bad in ("distance", "reducer"):
            if bad in kwargs:
                raise TypeError(
                    f"P2SGradLoss has no {bad} option (it computes cosines and reduces "
                    f"its own value); do not pass {bad}="
                )
        if kwargs:
            raise TypeError(f"P2SGradLoss got unexpected keyword argument(s) {sorted(kwargs)}")
        super().__init__(
            embedding_regularizer=embedding_regularizer,
            embedding_reg_weight=embedding_reg_weight,
            backend=backend,
        )
        self.distance = None  # type: ignore[assignment]  # P2SGrad has neither: its closed form
        self.reducer = None  # type: ignore[assignment]
        self.num_classes = check_int(num_classes, "num_classes", minimum=1)
        self.embedding_size = check_int(embedding_size, "embedding_size", minimum=1)
        rng = as_generator(seed)
        w = rng.uniform(-1.0, 1.0, (self.num_classes, self.embedding_size))
        self.weight = Parameter(l2_normalize_rows(w, eps=0.0)[0], name="weight")

    def parameters(self):
        """``[weight]``."""
        return [self.weight]

    def renormalize_(self) -> None:
        """Rescale every row of ``weight.data`` to unit L2 norm, in place (zero rows stay zero)."""
        l2_normalize_rows(self.weight.data, eps=0.0, out=self.weight.data)

    def compute64(self, x, labels: ArrayLike, W=None):
        """float64 ``(loss, dx, dW)`` for embeddings x (N, D), labels, weight W (default the current
        one, used as given: no renormalization)."""
        W = self.weight.data.astype(np.float64) if W is None else np.asarray(W, np.float64)
        return p2sgrad64(np.asarray(x, np.float64), W, np.asarray(labels, np.int64))

    def __call__(
        self,
        embeddings: ArrayLike,
        labels: ArrayLike | None = None,
        indices_tuple: IndicesTuple | None = None,
        ref_emb: ArrayLike | None = None,
        ref_labels: ArrayLike | None = None,
    ):
        if indices_tuple is not None:
            raise ValueError("indices_tuple is not supported by P2SGradLoss")
        if ref_emb is not None:
            raise ValueError("ref_emb is not supported by P2SGradLoss")
        if ref_labels is not None:
            raise ValueError("ref_labels is not supported by P2SGradLoss")
        emb, lab = check_class_batch(self, embeddings, labels)
        N, D = emb.shape
        self.stats = {}
        place_parameter(self.weight, (self.num_classes, self.embedding_size))
        self.renormalize_()
        terms = {"loss": 0.0}
        if N == 0:
            dq = np.zeros((0, D), dtype=np.float32)
        else:
            eng = get_backend(self.backend)
            loss, dq, dw = eng.p2sgrad_forward_backward(emb, self.weight.data, lab)
            terms["loss"] = float(loss)
            self.weight.grad += dw
        if self.embedding_regularizer is not None:
            if N:
                out = self.embedding_regularizer(emb)
                g = check_array(out.grad, "embedding_regularizer(...).grad", ndim=2, finite=False)
                if g.shape != emb.shape:
                    raise ValueError(
                        f"embedding_regularizer returned a gradient of shape {g.shape}, expected {emb.shape}"
                    )
                terms["embedding_reg_loss"] = self.embedding_reg_weight * float(out.loss)
                dq = dq + np.float32(self.embedding_reg_weight) * g
            else:
                terms["embedding_reg_loss"] = 0.0
        return LossOutput(
            loss=float(sum(terms.values())),
            grad=np.ascontiguousarray(dq, dtype=np.float32),
            ref_grad=None,
            terms=terms,
        )

    forward = __call__

    def __repr__(self) -> str:
        return f"P2SGradLoss(num_classes={self.num_classes}, embedding_size={self.embedding_size})"
