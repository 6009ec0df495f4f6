"""numpy twins of src/engine_c/tuple_losses.c (Angular / Margin / TupletMargin / IntraPairVariance / VICReg)."""
__all__ = []
