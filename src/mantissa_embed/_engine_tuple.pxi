# Angular / Margin / TupletMargin / IntraPairVariance / VICReg: wrappers of src/engine_c/tuple_losses.c. numpy twin: mantissa_embed/_reference/_tuple.py
# Declare the C functions here in a `cdef extern from "engine.h" nogil:` block.
