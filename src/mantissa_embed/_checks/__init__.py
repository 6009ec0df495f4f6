"""Argument checks of the engine entry points, one module per kernel family, shared by the
engine wrappers (:mod:`mantissa_embed._engine`) and the numpy twin (:mod:`mantissa_embed._reference`)."""
