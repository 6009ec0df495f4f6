"""Miners (pytorch-metric-learning's names and defaults): pick informative pairs or triplets.

``indices_tuple = miner(embeddings, labels, ref_emb=None, ref_labels=None)``.
"""
from .base_miner import BaseMiner
from .batch_hard_miner import BatchHardMiner
from .pair_margin_miner import PairMarginMiner
from .triplet_margin_miner import TripletMarginMiner
from .multi_similarity_miner import MultiSimilarityMiner
from .hdc_miner import HDCMiner
from .angular_miner import AngularMiner
from .batch_easy_hard_miner import BatchEasyHardMiner
from .embeddings_already_packaged_as_triplets import EmbeddingsAlreadyPackagedAsTriplets
from .distance_weighted_miner import DistanceWeightedMiner
from .uniform_histogram_miner import UniformHistogramMiner
from .maximum_loss_miner import MaximumLossMiner

__all__ = ["BaseMiner", "TripletMarginMiner", "BatchHardMiner", "PairMarginMiner",
           "MultiSimilarityMiner", "HDCMiner", "AngularMiner", "BatchEasyHardMiner",
           "EmbeddingsAlreadyPackagedAsTriplets", "DistanceWeightedMiner",
           "UniformHistogramMiner", "MaximumLossMiner"]
