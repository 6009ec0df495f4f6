# FastAP / Histogram / PNP / RankedList / DynamicSoftMargin / ThresholdConsistentMargin / Manifold: wrappers of src/engine_c/ranking_losses.c. numpy twin: mantissa_embed/_reference/_ranking.py
# Declare the C functions here in a `cdef extern from "engine.h" nogil:` block.
