"""Ready-made trunks (embedding networks) built from :mod:`mantissa_embed.layers`."""
from __future__ import annotations

from ._validation import check_int
from .layers import Conv2D, Dense, Flatten, MaxPool2D, Sequential

__all__ = ["small_cnn_embedder", "mlp_embedder"]


def small_cnn_embedder(embed_dim=16, *, seed=0, backend="mantissa"):
    """The small CNN trunk of the mantissa-embed README.

    ``Conv2D(8, 3, pad=1, act="relu") -> MaxPool2D(2) -> Conv2D(16, 3, pad=1, act="relu")
    -> MaxPool2D(2) -> Flatten() -> Dense(64, act="relu") -> Dense(embed_dim)``.

    Parameters
    ----------
    embed_dim : int >= 1, default 16
        Size of the embedding (the last Dense layer, no activation).
    seed : int >= 0 or numpy.random.Generator, default 0
        Initialization seed (see :class:`~mantissa_embed.layers.Sequential`).
    backend : {"mantissa", "numpy"}, default "mantissa"

    Returns
    -------
    Sequential
        Unbuilt: shapes are inferred at the first forward. Input (N, C, H, W) float32 with
        H, W >= 4 (two 2x2 poolings); on 1x28x28 images with ``embed_dim=16`` it has exactly
        52,528 parameters (80 + 1,168 + 50,240 + 1,040). 8x8 images (scikit-learn digits)
        also work as they are (flatten size 64), or padded/upsampled to 28x28.

    Raises TypeError / ValueError for a bad ``embed_dim``, ``seed`` or ``backend``.
    """
    embed_dim = check_int(embed_dim, "embed_dim", minimum=1)
    return Sequential([
        Conv2D(8, 3, pad=1, act="relu"),
        MaxPool2D(2),
        Conv2D(16, 3, pad=1, act="relu"),
        MaxPool2D(2),
        Flatten(),
        Dense(64, act="relu"),
        Dense(embed_dim),
    ], seed=seed, backend=backend)


def mlp_embedder(embed_dim=16, hidden=(64,), *, seed=0, backend="mantissa"):
    """A fully connected trunk: ``Flatten() -> Dense(h, act="relu") for h in hidden -> Dense(embed_dim)``.

    A baseline for small inputs (e.g. 8x8 digits) and for tests. ``hidden``: a sequence of
    positive ints (may be empty). Returns an unbuilt :class:`~mantissa_embed.layers.Sequential`.
    """
    embed_dim = check_int(embed_dim, "embed_dim", minimum=1)
    if isinstance(hidden, (str, bytes)):
        raise TypeError("hidden must be a sequence of ints")
    hidden = [check_int(h, f"hidden[{i}]", minimum=1) for i, h in enumerate(hidden)]
    return Sequential([Flatten()] + [Dense(h, act="relu") for h in hidden] + [Dense(embed_dim)],
                      seed=seed, backend=backend)
