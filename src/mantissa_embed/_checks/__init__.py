"""Argument checks of the engine entry points, one module per kernel family, shared by the
engine wrappers (``mantissa_embed._engine``) and the numpy twin (``mantissa_embed._reference``)."""
