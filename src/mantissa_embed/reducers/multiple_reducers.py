"""MultipleReducers (pytorch-metric-learning)."""

from __future__ import annotations

import numpy as np

from .base_reducer import BaseReducer
from .mean_reducer import MeanReducer


class MultipleReducers(BaseReducer):
    """One reducer per sub-loss name (default ``MeanReducer()``), the results summed.

    ``MultipleReducers(reducers, default_reducer=None)``. Called with PML's loss dict it returns
    ``(value, {name: dlosses})``; with one sub-loss it needs ``loss_name=``. Inside a loss each
    sub-loss is reduced by the reducer of its name (nested MultipleReducers followed).

    Raises ``TypeError`` for ``reducers`` not a dict of str -> BaseReducer or a bad
    ``default_reducer``; ``ValueError`` for a one-sub-loss call without ``loss_name``.
    """

    def __init__(self, reducers, default_reducer=None) -> None:
        if not isinstance(reducers, dict):
            raise TypeError(
                f"reducers must be a dict of sub-loss name -> BaseReducer, got {type(reducers).__name__}"
            )
        for k, v in reducers.items():
            if not isinstance(k, str) or not isinstance(v, BaseReducer):
                raise TypeError("reducers must be a dict of sub-loss name (str) -> BaseReducer")
        if default_reducer is None:
            default_reducer = MeanReducer()
        if not isinstance(default_reducer, BaseReducer):
            raise TypeError(f"default_reducer must be a BaseReducer, got {type(default_reducer).__name__}")
        self.reducers = dict(reducers)
        self.default_reducer = default_reducer

    needs_loss_name = True

    def _get(self, name):
        return self.reducers.get(name, self.default_reducer)

    def leaf(self, name):
        return self._get(name).leaf(name)

    @property
    def records_unreduced(self):
        return any(r.records_unreduced for r in [*self.reducers.values(), self.default_reducer])

    def call_kwargs(self, divisor):
        return {"divisor": divisor}

    def forward(self, losses, *args, loss_name=None, **kwargs):
        if isinstance(losses, dict):  # PML's call: (loss_dict, embeddings, labels)
            names = ("embeddings", "labels")
            if len(args) > 2:
                raise TypeError("a loss-dict call takes (loss_dict, embeddings=None, labels=None)")
            kw = dict(zip(names, args))
            for k, v in kwargs.items():
                if k not in names or k in kw:
                    raise TypeError(f"unexpected argument {k!r} for a loss-dict call")
                kw[k] = v
            return self.reduce_loss_dict(losses, kw.get("embeddings"), kw.get("labels"))
        if loss_name is None:
            raise ValueError(
                "MultipleReducers needs the sub-loss name (loss_name=...) to pick a reducer; "
                "call it with a loss dict, or give a loss a single reducer"
            )
        return self._get(loss_name)(losses, *args, **kwargs)

    __call__ = forward

    def reduce_loss_dict(self, loss_dict, embeddings=None, labels=None):
        """``(sum of the reduced sub-losses, {name: d value / d losses})`` for a PML loss dict."""
        if not isinstance(loss_dict, dict):
            raise TypeError(f"loss_dict must be a dict, got {type(loss_dict).__name__}")
        total, grads = 0.0, {}
        for name, info in loss_dict.items():
            try:
                losses, indices, rtype = info["losses"], info["indices"], info["reduction_type"]
            except (TypeError, KeyError):
                raise ValueError(
                    f"loss_dict[{name!r}] must have keys 'losses', 'indices', 'reduction_type'"
                ) from None
            red = self._get(name)
            extra = red.call_kwargs(info["divisor"]) if "divisor" in info else {}
            value, d = red(losses, indices, rtype, embeddings, labels, **extra)
            total += float(value)
            grads[name] = None if d is None else np.asarray(d, dtype=np.float64)
        return total, grads

    def __repr__(self) -> str:
        return f"MultipleReducers(reducers={self.reducers!r}, default_reducer={self.default_reducer!r})"
