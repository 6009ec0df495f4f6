"""numpy twins of src/engine_c/ranking_losses.c (FastAP / Histogram / PNP / RankedList / DynamicSoftMargin / ThresholdConsistentMargin / Manifold)."""
__all__ = []
