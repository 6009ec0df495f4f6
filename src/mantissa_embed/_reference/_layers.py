"""See mantissa_embed._reference."""
__all__ = []
