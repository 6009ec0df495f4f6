"""numpy twins of src/engine_c/pair_weighting.c (MultiSimilarity / Circle / LiftedStructure / GeneralizedLifted / SNRContrastive)."""
__all__ = []
