"""Metric losses (pytorch-metric-learning's names, arguments and defaults), with explicit gradients.

``out = loss_func(embeddings, labels=None, indices_tuple=None, ref_emb=None, ref_labels=None)``
returns a :class:`LossOutput` ``(loss, grad, ref_grad, terms)``.
"""
from .base import BaseMetricLossFunction, LossOutput
from .contrastive_loss import ContrastiveLoss
from .generic_pair_loss import GenericPairLoss
from .triplet_margin_loss import TripletMarginLoss

__all__ = ["LossOutput", "BaseMetricLossFunction", "GenericPairLoss", "ContrastiveLoss", "TripletMarginLoss"]

# --- group softmax (NTXent, SupCon, NPairs, NCA, Instance, SelfSupervised) ---
# --- end softmax ---

# --- group pairw (MultiSimilarity, Circle, LiftedStructure, GeneralizedLiftedStructure, SNRContrastive) ---
# --- end pairw ---

# --- group tuple (Angular, Margin, TupletMargin, IntraPairVariance, VICReg, MultipleLosses) ---
# --- end tuple ---

# --- group ranking (FastAP, Histogram, PNP, RankedList, DynamicSoftMargin, ThresholdConsistentMargin, Manifold) ---
# --- end ranking ---

# --- group proxy (P2SGrad, NormalizedSoftmax, ProxyNCA, ProxyAnchor, SoftTriple, LargeMarginSoftmax, ArcFace, SubCenterArcFace, CosFace, SphereFace, CrossEntropy) ---
# --- end proxy ---

# --- group xbm (CrossBatchMemory) ---
# --- end xbm ---
