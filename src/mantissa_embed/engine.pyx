# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, language_level=3
"""Typed wrappers around the mantissa C engine (``src/engine_c/engine.h``).

One Python function per C entry point. Inputs are validated once here (dtype float32,
C-contiguous, shapes); the engine call runs with the GIL released. Every function has
a pure-numpy twin with the same signature in :mod:`mantissa_embed._reference`.
"""
import numpy as np

include "_engine_decl.pxi"
include "_engine_core.pxi"
include "_engine_layers.pxi"
include "_engine_losses.pxi"
include "_engine_knn.pxi"
include "_engine_softmax.pxi"
include "_engine_pairw.pxi"
include "_engine_tuple.pxi"
include "_engine_ranking.pxi"
include "_engine_proxy.pxi"
include "_engine_mining.pxi"
