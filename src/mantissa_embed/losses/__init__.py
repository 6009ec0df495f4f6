"""Metric losses (pytorch-metric-learning's names, arguments and defaults), with explicit gradients.

``out = loss_func(embeddings, labels=None, indices_tuple=None, ref_emb=None, ref_labels=None)``
returns a :class:`LossOutput` ``(loss, grad, ref_grad, terms)``.
"""
from .base_metric_loss_function import BaseMetricLossFunction, LossOutput
from .contrastive_loss import ContrastiveLoss
from .generic_pair_loss import GenericPairLoss
from .triplet_margin_loss import TripletMarginLoss

__all__ = ["LossOutput", "BaseMetricLossFunction", "GenericPairLoss", "ContrastiveLoss", "TripletMarginLoss"]

# --- group softmax (NTXent, SupCon, NPairs, NCA, Instance, SelfSupervised) ---
from .instance_loss import InstanceLoss
from .nca_loss import NCALoss
from .npairs_loss import NPairsLoss
from .ntxent_loss import NTXentLoss
from .self_supervised_loss import SelfSupervisedLoss
from .supcon_loss import SupConLoss

__all__ += ["NTXentLoss", "SupConLoss", "NPairsLoss", "NCALoss", "InstanceLoss", "SelfSupervisedLoss"]
# --- end softmax ---

# --- group pairw (MultiSimilarity, Circle, LiftedStructure, GeneralizedLiftedStructure, SNRContrastive) ---
from .circle_loss import CircleLoss
from .generalized_lifted_structure_loss import GeneralizedLiftedStructureLoss
from .lifted_structure_loss import LiftedStructureLoss
from .multi_similarity_loss import MultiSimilarityLoss
from .signal_to_noise_ratio_contrastive_loss import SignalToNoiseRatioContrastiveLoss

__all__ += ["MultiSimilarityLoss", "CircleLoss", "LiftedStructureLoss", "GeneralizedLiftedStructureLoss",
            "SignalToNoiseRatioContrastiveLoss"]
# --- end pairw ---

# --- group tuple (Angular, Margin, TupletMargin, IntraPairVariance, VICReg, MultipleLosses) ---
from .angular_loss import AngularLoss
from .intra_pair_variance_loss import IntraPairVarianceLoss
from .margin_loss import MarginLoss
from .multiple_losses import MultipleLosses
from .tuplet_margin_loss import TupletMarginLoss
from .vicreg_loss import VICRegLoss

__all__ += ["AngularLoss", "MarginLoss", "TupletMarginLoss", "IntraPairVarianceLoss", "VICRegLoss", "MultipleLosses"]
# --- end tuple ---

# --- group ranking (FastAP, Histogram, PNP, RankedList, DynamicSoftMargin, ThresholdConsistentMargin, Manifold) ---
from .fast_ap_loss import FastAPLoss
from .histogram_loss import HistogramLoss
from .pnp_loss import PNPLoss
from .ranked_list_loss import RankedListLoss
from .threshold_consistent_margin_loss import ThresholdConsistentMarginLoss
from .dynamic_soft_margin_loss import DynamicSoftMarginLoss
from .manifold_loss import ManifoldLoss

__all__ += ["FastAPLoss", "HistogramLoss", "PNPLoss", "RankedListLoss", "ThresholdConsistentMarginLoss",
            "DynamicSoftMarginLoss", "ManifoldLoss"]
# --- end ranking ---

# --- group proxy (P2SGrad, NormalizedSoftmax, ProxyNCA, ProxyAnchor, SoftTriple, LargeMarginSoftmax, ArcFace, SubCenterArcFace, CosFace, SphereFace, CrossEntropy) ---
from .cross_entropy_loss import CrossEntropyLoss
from .normalized_softmax_loss import NormalizedSoftmaxLoss
from .p2sgrad_loss import P2SGradLoss

from .proxy_anchor_loss import ProxyAnchorLoss
from .proxy_nca_loss import ProxyNCALoss
from .soft_triple_loss import SoftTripleLoss
from .large_margin_softmax_loss import LargeMarginSoftmaxLoss
from .arcface_loss import ArcFaceLoss
from .sub_center_arcface_loss import SubCenterArcFaceLoss
from .cosface_loss import CosFaceLoss
from .sphereface_loss import SphereFaceLoss
from .weight_regularizer_mixin import BaseProxyLoss, WeightRegularizerMixin

__all__ += ["P2SGradLoss", "NormalizedSoftmaxLoss", "CrossEntropyLoss", "ProxyAnchorLoss", "ProxyNCALoss",
            "SoftTripleLoss", "LargeMarginSoftmaxLoss", "ArcFaceLoss", "SubCenterArcFaceLoss", "CosFaceLoss",
            "SphereFaceLoss"]
# --- end proxy ---

# --- group xbm (CrossBatchMemory) ---
from .cross_batch_memory import CrossBatchMemory

__all__ += ["CrossBatchMemory"]
# --- end xbm ---
