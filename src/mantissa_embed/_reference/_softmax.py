"""numpy twins of src/engine_c/softmax_losses.c (NTXent / SupCon / NPairs / NCA / Instance (softmax over pairs))."""
__all__ = []
