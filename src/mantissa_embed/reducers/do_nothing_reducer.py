"""DoNothingReducer (pytorch-metric-learning), for a library without autograd."""
from __future__ import annotations

import numpy as np

from .base_reducer import BaseReducer


class DoNothingReducer(BaseReducer):
    """Leave the per-element losses unreduced.

    In PML, ``loss_func(...)`` with this reducer returns the loss dict itself
    (``{name: {"losses", "indices", "reduction_type"}}``) and the user reduces (and
    back-propagates) it. Here a loss must return a value *and* its gradient, so:

    - inside a loss, the :class:`~mantissa_embed.losses.LossOutput` gets ``unreduced`` = PML's loss
      dict (the per-element losses of every sub-loss, float64 arrays, with their indices and
      reduction type; a sub-loss with nothing to reduce is ``{"losses": 0, "indices": None,
      "reduction_type": "already_reduced"}``, as PML's ``zero_loss``). ``out.loss`` is the *sum* of
      all those per-element losses, ``out.terms[name]`` the sum of each sub-loss, and
      ``out.grad`` the gradient of that sum (``d value / d losses = 1``). For another reduction
      with its exact gradient, write a :class:`BaseReducer` subclass (``element_reduction``
      returning ``(value, dlosses)``) instead of reducing ``out.unreduced`` by hand.
    - called directly with PML's loss dict, ``r(loss_dict, embeddings=None, labels=None)``
      returns the dict unchanged (PML's behaviour);
    - called with one sub-loss, ``r(losses, indices, reduction_type, embeddings, labels)``
      returns ``(sum(losses), ones)`` (the BaseReducer contract).

    Inside :class:`MultipleReducers`, only the sub-losses mapped to a DoNothingReducer are summed
    unreduced and appear in ``out.unreduced``.

    Source: pytorch-metric-learning ``reducers/do_nothing_reducer.py``.
    """

    needs_loss_name = True
    records_unreduced = True

    def forward(self, losses, *args, **kwargs):
        if isinstance(losses, dict):
            if len(args) > 2:
                raise TypeError("a loss-dict call takes (loss_dict, embeddings=None, labels=None)")
            return losses
        return super().forward(losses, *args, **kwargs)

    __call__ = forward

    def element_reduction(self, losses, indices, embeddings, labels):
        return float(np.sum(losses, dtype=np.float64)), np.ones(losses.shape[0], dtype=np.float64)
