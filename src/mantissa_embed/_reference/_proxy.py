"""numpy twins of src/engine_c/proxy_losses.c (proxy and classifier losses (P2SGrad, NormalizedSoftmax, ArcFace, ...))."""
__all__ = []
