"""DoNothingReducer (pytorch-metric-learning), for a library without autograd."""

from __future__ import annotations

import numpy as np

from .base_reducer import BaseReducer


class DoNothingReducer(BaseReducer):
    """Leave the losses unreduced (PML's ``DoNothingReducer``).

    Inside a loss, ``LossOutput.unreduced`` gets PML's loss dict and ``loss`` / ``grad`` are the sum
    of the per-element losses and its gradient. Called with a loss dict it returns the dict; with
    one array, ``(sum(losses), ones)``. Details: docs/reducers.md.
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
