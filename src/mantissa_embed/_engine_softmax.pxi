# NTXent / SupCon / NPairs / NCA / Instance (softmax over pairs): wrappers of src/engine_c/softmax_losses.c. numpy twin: mantissa_embed/_reference/_softmax.py
# Declare the C functions here in a `cdef extern from "engine.h" nogil:` block.
