"""Metric losses (pytorch-metric-learning's names, arguments and defaults), with explicit gradients.

``out = loss_func(embeddings, labels=None, indices_tuple=None, ref_emb=None, ref_labels=None)``
returns a :class:`LossOutput` ``(loss, grad, ref_grad, terms)``.
"""
from .base import BaseMetricLossFunction, LossOutput
from .contrastive_loss import ContrastiveLoss
from .generic_pair_loss import GenericPairLoss
from .triplet_margin_loss import TripletMarginLoss

__all__ = ["LossOutput", "BaseMetricLossFunction", "GenericPairLoss", "ContrastiveLoss", "TripletMarginLoss"]
