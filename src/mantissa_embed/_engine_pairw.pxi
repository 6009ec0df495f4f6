# MultiSimilarity / Circle / LiftedStructure / GeneralizedLifted / SNRContrastive: wrappers of src/engine_c/pair_weighting.c. numpy twin: mantissa_embed/_reference/_pairw.py
# Declare the C functions here in a `cdef extern from "engine.h" nogil:` block.
