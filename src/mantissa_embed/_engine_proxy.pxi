# proxy and classifier losses (P2SGrad, NormalizedSoftmax, ArcFace, ...): wrappers of src/engine_c/proxy_losses.c. numpy twin: mantissa_embed/_reference/_proxy.py
# Declare the C functions here in a `cdef extern from "engine.h" nogil:` block.
