"""``load(name)``: one entry point for every dataset, as ``(X, y)`` float32 NCHW / int64 arrays."""

from __future__ import annotations

import os

from .._typing import Float32Array, Int64Array
from .digits import load_digits
from .mnist import load_mnist
from .orl_faces import load_orl
from .resize import check_size, pad_or_resize

DATASETS = ("digits", "mnist", "orl_faces")
"""The dataset names ``load`` accepts."""


def load(
    name: str,
    split: str | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    *,
    size: int | tuple[int, int] | None = None,
) -> tuple[Float32Array, Int64Array]:
    """Load a dataset as ``(X, y)``.

    Parameters
    ----------
    name : {"digits", "mnist", "orl_faces"}
        ``"digits"``: scikit-learn's bundled 8x8 digits, X (1797, 1, 8, 8) (pixel values
        0..16 divided by 16), no network. ``"mnist"``: X (60000 or 10000, 1, 28, 28), read from
        ``{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]`` in ``data_dir`` or its
        ``mnist/`` subfolder. ``"orl_faces"``: X (400, 1, 112, 92), y the subject index 0..39
        (``s1`` -> 0), ordered by subject then image number, read from ``s1..s40/1..10.pgm`` in
        ``data_dir`` or its ``orl_faces/`` (or ``att_faces/``) subfolder.
    split : {"train", "test"} or None
        MNIST only (None means ``"train"``); must be None for the other datasets.
    data_dir : str or os.PathLike, optional
        Default ``default_data_dir`` (``$MANTISSA_EMBED_DATA`` when set).
    size : int or (int, int), optional
        Resize every image to ``(h, w)``: area averaging (exact block averaging for integer
        factors) when shrinking both sides, bilinear otherwise; see ``pad_or_resize``.

    Returns
    -------
    X : ndarray, float32, shape (N, 1, H, W), values in [0, 1], C-contiguous
    y : ndarray, int64, shape (N,)

    Raises
    ------
    ValueError
        Unknown ``name`` or ``split``; a truncated, corrupt or foreign file (the message names it).
    TypeError
        ``data_dir`` is not a path.
    FileNotFoundError
        A file is missing; the message contains the command that fetches it
        (``python -m mantissa_embed.datasets download mnist --data-dir DIR``) or, for ORL, the
        manual step. Nothing is downloaded implicitly.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    key = name.lower()
    if key == "digits":
        X, y = load_digits(split)
    elif key == "mnist":
        X, y = load_mnist(split, data_dir)
    elif key in ("orl_faces", "orl", "att_faces"):
        X, y = load_orl(split, data_dir)
    else:
        raise ValueError(f"name must be one of {DATASETS}, got {name!r}")
    if size is not None:
        h, w = check_size(size)
        shrink = h <= X.shape[2] and w <= X.shape[3]
        X = pad_or_resize(X, (h, w), mode="area" if shrink else "bilinear")
    return X, y
