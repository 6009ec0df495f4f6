"""Plots of embeddings and retrievals (matplotlib, optional: ``pip install "mantissa-embed[viz]"``).

matplotlib is imported lazily, only when a plot is drawn, and only through its object-oriented
API with the Agg canvas: no pyplot state, no global backend switch, never a window. Every
file is written to a temporary file in the destination directory and renamed into place, so a
reader never sees a half-written image.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from sklearn.decomposition import PCA

from ._io import atomic_write
from ._typing import ArrayLike
from ._validation import check_array, check_int, check_labels

__all__ = [
    "plot_embedding_manifold",
    "plot_retrieval_gallery",
    "gallery_layout",
    "plot_roc",
    "GREEN",
    "RED",
    "QUERY_COLOR",
]

#: Border colours of ``plot_retrieval_gallery`` (RGB, 0..255).
GREEN = (0, 170, 0)
RED = (220, 0, 0)
QUERY_COLOR = (40, 90, 200)
_BACKGROUND = (255, 255, 255)


#: The message of the ImportError raised when matplotlib is missing (also used by the demo).
MATPLOTLIB_MISSING = (
    'mantissa_embed.viz needs matplotlib; install it with: pip install "mantissa-embed[viz]" '
    '(or pip install ".[viz]" from a clone of the repository)'
)


def _import_matplotlib():
    try:
        import matplotlib  # noqa: F401
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - exercised with a monkeypatched import
        raise ImportError(MATPLOTLIB_MISSING) from exc
    return Figure, FigureCanvasAgg


def _check_path(path):
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    path = Path(path)
    if path.suffix.lower() != ".png":
        raise ValueError(f"path must end with .png, got {str(path)!r}")
    if not path.parent.exists():
        raise FileNotFoundError(f"the directory of path does not exist: {path.parent}")
    return path


def _pca_2d(Z):
    if Z.shape[1] >= 2:
        P = PCA(n_components=2, svd_solver="full").fit_transform(Z.astype(np.float64))
    else:
        P = np.concatenate([Z - Z.mean(axis=0), np.zeros_like(Z)], axis=1).astype(np.float64)
    return P


def plot_embedding_manifold(Z, y, path, title=None, *, figsize=(6.4, 5.6), dpi=100):
    """Scatter the 2-D PCA projection of embeddings, coloured by class, with a legend.

    Parameters
    ----------
    Z : array_like, float, shape (n, D), n >= 2
        Embeddings (projected with scikit-learn's ``PCA(n_components=2)``; D == 1 is drawn
        on a line).
    y : array_like of int, shape (n,)
        Class of each point (colour only; ``tab10``/``tab20`` palettes, ``hsv`` beyond 20).
    path : str or os.PathLike
        Destination ``.png`` (its directory must exist); written atomically.
    title : str, optional
    figsize : (float, float), default (6.4, 5.6)
        Inches; the PNG is ``round(figsize * dpi)`` pixels (640 x 560 by default).
    dpi : int, default 100

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ImportError
        matplotlib missing (``pip install "mantissa-embed[viz]"``).
    ValueError
        Fewer than 2 points, NaN/Inf, wrong ndim, labels of the wrong length, a path not
        ending in ``.png``. ``FileNotFoundError`` when the directory does not exist.
    """
    Z = check_array(Z, "Z", ndim=2)
    if Z.shape[0] < 2 or Z.shape[1] < 1:
        raise ValueError(f"Z must have at least 2 rows and 1 column, got shape {Z.shape}")
    y = check_labels(y, "y", n=Z.shape[0])
    path = _check_path(path)
    dpi = check_int(dpi, "dpi", minimum=1)
    if title is not None and not isinstance(title, str):
        raise TypeError(f"title must be a str, got {type(title).__name__}")
    Figure, FigureCanvasAgg = _import_matplotlib()
    import matplotlib

    P = _pca_2d(Z)
    classes = np.unique(y)
    nc = len(classes)
    if nc <= 10:
        colors = matplotlib.colormaps["tab10"](np.arange(nc))
    elif nc <= 20:
        colors = matplotlib.colormaps["tab20"](np.arange(nc))
    else:
        colors = matplotlib.colormaps["hsv"](np.linspace(0, 1, nc, endpoint=False))

    fig = Figure(figsize=figsize, dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    size = float(np.clip(20000.0 / Z.shape[0], 4.0, 30.0))  # marker area, points^2
    for c, col in zip(classes, colors):
        m = y == c
        ax.scatter(P[m, 0], P[m, 1], s=size, color=col, label=str(int(c)), alpha=0.75, linewidths=0)
    ax.set_xlabel("PC 1")
    ax.set_ylabel("PC 2")
    if title:
        ax.set_title(title)
    ax.legend(
        title="class",
        loc="best",
        fontsize="small",
        markerscale=max(1.0, (40.0 / size) ** 0.5),
        ncol=1 if nc <= 12 else 2,
        frameon=True,
    )
    fig.tight_layout()
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=dpi), suffix=".png")
    return path


def _to_rgb_images(images):
    X = check_array(images, "images", ndim=(3, 4))
    if X.ndim == 4:
        if X.shape[1] == 1:
            X = X[:, 0]
        elif X.shape[1] == 3:
            X = np.moveaxis(X, 1, -1)
        else:
            raise ValueError(f"images must have 1 or 3 channels (N, C, H, W), got shape {X.shape}")
    if X.size and (X.min() < 0.0 or X.max() > 1.0):
        lo = X.min(axis=tuple(range(1, X.ndim)), keepdims=True)
        hi = X.max(axis=tuple(range(1, X.ndim)), keepdims=True)
        X = (X - lo) / np.where(hi > lo, hi - lo, 1.0)
    if X.ndim == 3:
        X = np.repeat(X[..., None], 3, axis=-1)
    return np.ascontiguousarray(np.round(X * 255.0).astype(np.uint8))


def gallery_layout(n_queries, k: int, height, width, scale, border, gap):
    """Pixel layout of ``plot_retrieval_gallery``: ``(canvas_h, canvas_w, cell_h, cell_w)``.

    Each cell is the image scaled by ``scale`` plus a ``border`` on every side; cells are
    separated (and the canvas framed) by ``gap`` pixels, with an extra ``2 * gap`` between
    the query column and its neighbours.
    """
    cell_h = height * scale + 2 * border
    cell_w = width * scale + 2 * border
    canvas_h = n_queries * cell_h + (n_queries + 1) * gap
    canvas_w = (k + 1) * cell_w + (k + 2) * gap + 2 * gap
    return canvas_h, canvas_w, cell_h, cell_w


def _cell_origin(row, col, cell_h, cell_w, gap):
    top = gap + row * (cell_h + gap)
    left = gap + col * (cell_w + gap) + (2 * gap if col > 0 else 0)
    return top, left


def plot_retrieval_gallery(
    images: ArrayLike, labels: ArrayLike, query_idx, neighbor_idx, path, *, scale=None, border=None, gap=None
):
    """One row per query: the query, then its k neighbours, framed green (same label) or red.

    The picture is composed pixel by pixel in numpy (no axes, no text) and saved as an RGB PNG
    of exactly the size given by ``gallery_layout``, so colours are exact: the query frame
    is ``QUERY_COLOR``, a neighbour frame ``GREEN`` when ``labels[neighbour] ==
    labels[query]`` and ``RED`` otherwise, on a white background.

    Parameters
    ----------
    images : array_like, shape (N, 1, H, W), (N, 3, H, W) or (N, H, W)
        Values in [0, 1] are drawn as they are; otherwise each image is min-max scaled.
    labels : array_like of int, shape (N,)
    query_idx : array_like of int, shape (q,)
        Rows of ``images`` used as queries (q >= 1).
    neighbor_idx : array_like of int, shape (q, k)
        Their neighbours, nearest first, as rows of ``images`` (e.g. from
        ``mantissa_embed.evaluation.knn``; with a separate gallery, stack it after the
        queries and offset the indices).
    path : str or os.PathLike
        Destination ``.png`` (its directory must exist); written atomically.
    scale : int, optional
        Integer upscaling of each image (nearest); default ``ceil(64 / max(H, W))``.
    border : int, optional
        Frame width in pixels; default ``max(2, round(0.06 * max(H, W) * scale))``.
    gap : int, optional
        White space between cells; default ``border``.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ImportError
        matplotlib missing (``pip install "mantissa-embed[viz]"``).
    ValueError
        Bad shapes, NaN/Inf, indices out of range, a path not ending in ``.png``.
    TypeError
        Non-integer indices or labels.
    """
    rgb = _to_rgb_images(images)
    N, H, W = rgb.shape[:3]
    labels = check_labels(labels, "labels", n=N)
    q = check_labels(query_idx, "query_idx")
    nb = np.asarray(neighbor_idx)
    if nb.dtype.kind not in "iu":
        raise TypeError(f"neighbor_idx must have an integer dtype, got {nb.dtype}")
    if q.shape[0] == 0:
        raise ValueError("query_idx must not be empty")
    if nb.ndim != 2 or nb.shape[0] != q.shape[0] or nb.shape[1] == 0:
        raise ValueError(f"neighbor_idx must have shape ({q.shape[0]}, k) with k >= 1, got {nb.shape}")
    nb = nb.astype(np.int64)
    for name, arr in (("query_idx", q), ("neighbor_idx", nb)):
        if arr.min() < 0 or arr.max() >= N:
            raise ValueError(
                f"{name} must index images (0..{N - 1}), got values in [{arr.min()}, {arr.max()}]"
            )
    path = _check_path(path)
    if scale is None:
        scale = max(1, int(np.ceil(64 / max(H, W))))
    scale = check_int(scale, "scale", minimum=1)
    if border is None:
        border = max(2, int(round(0.06 * max(H, W) * scale)))
    border = check_int(border, "border", minimum=1)
    gap = border if gap is None else check_int(gap, "gap", minimum=0)
    _import_matplotlib()
    from matplotlib.image import imsave

    n_q, k = nb.shape
    canvas_h, canvas_w, cell_h, cell_w = gallery_layout(n_q, k, H, W, scale, border, gap)
    canvas = np.empty((canvas_h, canvas_w, 3), dtype=np.uint8)
    canvas[...] = _BACKGROUND
    for row in range(n_q):
        qi = q[row]
        cells = [(0, qi, QUERY_COLOR)] + [
            (j + 1, nb[row, j], GREEN if labels[nb[row, j]] == labels[qi] else RED) for j in range(k)
        ]
        for col, idx, color in cells:
            top, left = _cell_origin(row, col, cell_h, cell_w, gap)
            canvas[top : top + cell_h, left : left + cell_w] = color
            img = np.repeat(np.repeat(rgb[idx], scale, axis=0), scale, axis=1)
            canvas[top + border : top + border + H * scale, left + border : left + border + W * scale] = img
    atomic_write(path, lambda f: imsave(f, canvas, format="png"), suffix=".png")
    return path


def plot_roc(fpr, tpr, path, title=None, mark_far=(1e-3, 1e-2), *, label=None, figsize=(5.6, 4.8), dpi=100):
    """Draw a ROC curve (TAR against FAR) with a logarithmic FAR axis, and save it as a PNG.

    Parameters
    ----------
    fpr, tpr : array_like, float, shape (m,) or a sequence of such arrays
        False and true accept rates in [0, 1], e.g. ``verification_metrics(...)["fpr"]`` /
        ``["tpr"]``. Several curves: pass equal-length lists of arrays (with ``label``).
        Points with FAR 0 cannot be drawn on the log axis; the axis starts at
        ``min(mark_far + smallest positive FAR) / 2``.
    path : str or os.PathLike
        Destination ``.png`` (its directory must exist); written atomically.
    title : str, optional
    mark_far : sequence of float in (0, 1], default (1e-3, 1e-2)
        FAR levels drawn as dotted vertical lines, with the TAR of each curve at the largest
        FAR <= that level marked (the ``tar_at_far_*`` convention of
        ``mantissa_embed.evaluation.verification.verification_metrics``). ``()``: none.
    label : str or sequence of str, optional
        Legend entry per curve.
    figsize : (float, float), default (5.6, 4.8)
    dpi : int, default 100

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ImportError
        matplotlib missing (``pip install "mantissa-embed[viz]"``).
    ValueError
        Rates outside [0, 1], NaN, not 1-D, ``fpr`` and ``tpr`` of different lengths, fewer
        than 2 points, a ``mark_far`` value outside (0, 1], a label count that differs from
        the curve count, a path not ending in ``.png``. ``FileNotFoundError`` when the
        directory does not exist. ``TypeError`` for a non-str title or label.
    """

    def _curves(v, name):
        if isinstance(v, (list, tuple)) and v and np.ndim(v[0]) == 1:
            return [check_array(c, f"{name}[{i}]", ndim=1, dtype=np.float64) for i, c in enumerate(v)]
        return [check_array(v, name, ndim=1, dtype=np.float64)]

    F, T = _curves(fpr, "fpr"), _curves(tpr, "tpr")
    if len(F) != len(T):
        raise ValueError(f"fpr and tpr must hold the same number of curves, got {len(F)} and {len(T)}")
    for i, (f, t) in enumerate(zip(F, T)):
        if f.shape != t.shape or f.shape[0] < 2:
            raise ValueError(
                f"fpr and tpr must have the same length >= 2, got {f.shape} and {t.shape} (curve {i})"
            )
        for name, a in (("fpr", f), ("tpr", t)):
            if a.min() < 0.0 or a.max() > 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got values in [{a.min()}, {a.max()}]")
    marks = tuple(float(m) for m in mark_far)
    if any(not (0.0 < m <= 1.0) for m in marks):
        raise ValueError(f"mark_far values must lie in (0, 1], got {mark_far!r}")
    labels = [label] if isinstance(label, str) or label is None else list(label)
    if label is None:
        labels = [None] * len(F)
    if any(lab is not None and not isinstance(lab, str) for lab in labels):
        raise TypeError(f"label must be a str or a sequence of str, got {label!r}")
    if len(labels) != len(F):
        raise ValueError(f"label must hold one str per curve ({len(F)}), got {len(labels)}")
    if title is not None and not isinstance(title, str):
        raise TypeError(f"title must be a str, got {type(title).__name__}")
    path = _check_path(path)
    dpi = check_int(dpi, "dpi", minimum=1)
    Figure, FigureCanvasAgg = _import_matplotlib()

    positive = [f[f > 0].min() for f in F if (f > 0).any()]
    lo = min(marks + tuple(positive) + (1.0,)) / 2.0
    fig = Figure(figsize=figsize, dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    ax.set_xscale("log")
    for i, (f, t, lab) in enumerate(zip(F, T, labels)):
        (line,) = ax.plot(np.maximum(f, lo), t, drawstyle="steps-post", lw=1.6, label=lab)
        for m in marks:
            ok = np.flatnonzero(f <= m)
            if ok.size:
                ax.plot([m], [t[ok[-1]]], marker="o", ms=4, color=line.get_color())
    for m in marks:
        ax.axvline(m, color="0.5", ls=":", lw=1.0)
        ax.text(m, 0.99, f"FAR={m:g} ", rotation=90, va="top", ha="right", fontsize="x-small", color="0.35")
    ax.plot([lo, 1.0], [lo, 1.0], color="0.7", lw=0.8, ls="--")  # chance
    ax.set_xlim(lo, 1.0)
    ax.set_ylim(0.0, 1.01)
    ax.set_xlabel("false accept rate (FAR, log scale)")
    ax.set_ylabel("true accept rate (TAR)")
    ax.grid(True, which="major", alpha=0.3)
    if title:
        ax.set_title(title)
    if any(lab is not None for lab in labels):
        ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=dpi), suffix=".png")
    return path
