"""The engine's typed Cython modules, one per kernel family; the public namespace is
``mantissa_embed.engine``."""
