"""MultipleLosses (pytorch-metric-learning): a weighted sum of losses, each with its own miner."""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np

from .._typing import ArrayLike, IndicesTuple
from .base_metric_loss_function import LossOutput


class MultipleLosses:
    """Weighted sum of several losses on the same batch.

    ``MultipleLosses(losses, miners=None, weights=None)``: ``losses`` a list or dict of losses,
    ``miners`` / ``weights`` lists of the same length or dicts on the same keys. The output sums
    ``w_i loss_i`` and the gradients; ``terms`` are keyed ``"{key}/{term}"``. ``ref_emb`` /
    ``ref_labels`` (an addition to PML) go to every loss and miner.

    Raises ``TypeError`` for containers of the wrong type or non-callable losses; ``ValueError`` for
    length or key mismatches, or an ``indices_tuple`` together with miners.
    Source: PML ``losses/multiple_losses.py``.
    """

    def __init__(
        self, losses, miners=None, weights: Sequence[float] | dict[str, float] | None = None
    ) -> None:
        self.is_dict = isinstance(losses, dict)
        if not self.is_dict and not isinstance(losses, (list, tuple)):
            raise TypeError(f"losses must be a list or a dict of losses, got {type(losses).__name__}")
        if len(losses) == 0:
            raise ValueError("losses must not be empty")
        self.losses = dict(losses) if self.is_dict else list(losses)
        for k, f in self._items(self.losses):
            if not callable(f):
                raise TypeError(f"losses[{k!r}] must be a callable loss, got {type(f).__name__}")
        if miners is not None:
            self._check_container(miners, "miners", match_all_keys=False)
            miners = dict(miners) if self.is_dict else list(miners)
            for k, m in self._items(miners):
                if m is not None and not callable(m):
                    raise TypeError(f"miners[{k!r}] must be a callable miner or None, got {type(m).__name__}")
        self.miners = miners
        if weights is None:
            weights = {k: 1 for k in self.losses} if self.is_dict else [1] * len(self.losses)
        else:
            self._check_container(weights, "weights", match_all_keys=True)
        for k, w in self._items(weights):
            if isinstance(w, bool) or not isinstance(w, numbers.Real) or not np.isfinite(float(w)):
                raise TypeError(f"weights[{k!r}] must be a finite number, got {w!r}")
        self.weights = dict(weights) if self.is_dict else list(weights)  # type: ignore[arg-type]  # is_dict tells which

    @staticmethod
    def _items(x):
        return x.items() if isinstance(x, dict) else enumerate(x)

    def _check_container(self, x, name, match_all_keys):
        if self.is_dict:
            if not isinstance(x, dict):
                raise TypeError(f"{name} must be a dict like losses, got {type(x).__name__}")
            keys, lkeys = set(x), set(self.losses)
            if match_all_keys and keys != lkeys:
                raise ValueError(f"{name} must have exactly the keys of losses {sorted(map(str, lkeys))}")
            if not match_all_keys and not keys <= lkeys:
                raise ValueError(f"{name} has keys that are not in losses: {sorted(map(str, keys - lkeys))}")
        else:
            if not isinstance(x, (list, tuple)):
                raise TypeError(f"{name} must be a list like losses, got {type(x).__name__}")
            if len(x) != len(self.losses):
                raise ValueError(f"{name} must have {len(self.losses)} entries (one per loss), got {len(x)}")

    def parameters(self):
        """The learnable Parameters of every loss (in order, without duplicates)."""
        out, seen = [], set()
        for _, f in self._items(self.losses):
            for p in f.parameters() if hasattr(f, "parameters") else []:
                if id(p) not in seen:
                    seen.add(id(p))
                    out.append(p)
        return out

    def _miner(self, k):
        if not self.miners:
            return None
        if self.is_dict:
            return self.miners.get(k)
        return self.miners[k]

    def __call__(
        self,
        embeddings: ArrayLike,
        labels: ArrayLike | None = None,
        indices_tuple: IndicesTuple | None = None,
        *,
        ref_emb: ArrayLike | None = None,
        ref_labels: ArrayLike | None = None,
    ):
        if self.miners and indices_tuple is not None:
            raise ValueError("indices_tuple must be None when MultipleLosses has miners")
        total, grad, ref_grad, terms, unreduced = 0.0, None, None, {}, None
        for k, f in self._items(self.losses):
            w = float(self.weights[k])
            it = indices_tuple
            miner = self._miner(k)
            if miner is not None:
                it = miner(embeddings, labels, ref_emb, ref_labels)
            params = f.parameters() if hasattr(f, "parameters") else []
            before = [p.grad.copy() for p in params]
            kw = (
                {}
                if ref_emb is None and ref_labels is None
                else {"ref_emb": ref_emb, "ref_labels": ref_labels}
            )
            out = f(embeddings, labels, it, **kw)
            for p, b in zip(params, before):
                if w != 1.0:
                    p.grad[...] = b + np.float32(w) * (p.grad - b)
            total += w * float(out.loss)
            g = np.float32(w) * out.grad
            grad = g if grad is None else grad + g
            if out.ref_grad is not None:
                rg = np.float32(w) * out.ref_grad
                ref_grad = rg if ref_grad is None else ref_grad + rg
            for name, v in out.terms.items():
                terms[f"{k}/{name}"] = w * float(v)
            if getattr(out, "unreduced", None) is not None:
                unreduced = unreduced or {}
                for name, v in out.unreduced.items():
                    unreduced[f"{k}/{name}"] = v
        return LossOutput(
            loss=total,
            grad=np.ascontiguousarray(grad, dtype=np.float32),
            ref_grad=None if ref_grad is None else np.ascontiguousarray(ref_grad, dtype=np.float32),
            terms=terms,
            unreduced=unreduced,
        )

    forward = __call__

    def __repr__(self) -> str:
        return f"MultipleLosses(losses={self.losses!r}, weights={self.weights!r})"
