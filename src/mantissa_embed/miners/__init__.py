"""Miners (pytorch-metric-learning's names and defaults): pick informative pairs or triplets.

``indices_tuple = miner(embeddings, labels, ref_emb=None, ref_labels=None)``.
"""
from .base_miner import BaseMiner
from .batch_hard_miner import BatchHardMiner
from .pair_margin_miner import PairMarginMiner
from .triplet_margin_miner import TripletMarginMiner

__all__ = ["BaseMiner", "TripletMarginMiner", "BatchHardMiner", "PairMarginMiner"]
