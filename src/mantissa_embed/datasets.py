"""Image datasets as ``(X, y)`` arrays, plus the splits metric learning needs.

Every loader returns ``X`` float32 NCHW in [0, 1] and ``y`` int64, in a deterministic order.
Nothing downloads implicitly: a missing file raises :class:`FileNotFoundError` whose message
contains the exact command (or manual step) that fixes it. The one explicit download is::

    python -m mantissa_embed.datasets download mnist [--data-dir DIR] [--url-base URL]

which fetches the four MNIST IDX files into ``DIR/mnist/`` and verifies their published
SHA-256 checksums (see :mod:`mantissa_embed._download`).

Data directory: the ``data_dir`` argument, else ``$MANTISSA_EMBED_DATA``, else
``$XDG_CACHE_HOME/mantissa-embed`` (``~/.cache/mantissa-embed``); see :func:`default_data_dir`.

Datasets
--------
``digits``
    scikit-learn's bundled 8x8 digits (1,797 images, 10 classes; the UCI "Optical
    Recognition of Handwritten Digits" test set, Alpaydin & Kaynak 1998). No network.
``mnist``
    LeCun, Cortes & Burges, "The MNIST database of handwritten digits" (1998): 60,000
    train / 10,000 test images, 28x28, read from the standard IDX files (gzipped or not).
``orl_faces``
    The ORL / AT&T face database (Olivetti Research Laboratory; Samaria & Harter 1994):
    40 subjects x 10 images, 92x112 (W x H), binary PGM, in ``s1..s40/1..10.pgm``.
"""
from __future__ import annotations

import argparse
import gzip
import os
import shlex
import sys
import zlib
from pathlib import Path

import numpy as np

from ._validation import as_generator, check_array, check_int, check_labels

__all__ = [
    "DATASETS",
    "ENV_VAR",
    "default_data_dir",
    "load",
    "read_idx",
    "read_pgm",
    "subset",
    "split_by_class",
    "pad_or_resize",
    "main",
]

DATASETS = ("digits", "mnist", "orl_faces")
ENV_VAR = "MANTISSA_EMBED_DATA"

_MNIST_SPLITS = {"train": "train", "test": "t10k"}
_ORL_SUBJECTS = 40
_ORL_IMAGES = 10
_ORL_SHAPE = (112, 92)  # (H, W)
_ORL_SUBDIRS = ("", "orl_faces", "att_faces")
_ORL_INSTRUCTIONS = (
    "The ORL / AT&T face database cannot be downloaded automatically. Get the archive "
    "(published by AT&T Laboratories Cambridge as att_faces.zip / orl_faces.tar.Z; mirrored on "
    "Kaggle as 'AT&T Database of Faces') and extract it so that "
    "{root}/orl_faces/s1/1.pgm ... {root}/orl_faces/s40/10.pgm exist, e.g.\n"
    "    mkdir -p {qroot}/orl_faces && unzip att_faces.zip -d {qroot}/orl_faces\n"
    "then call load('orl_faces', data_dir={root_repr}) (or set ${env}={qroot})."
)


# --------------------------------------------------------------------------- paths
def default_data_dir():
    """The data directory used when ``data_dir`` is None.

    ``$MANTISSA_EMBED_DATA`` when set, else ``$XDG_CACHE_HOME/mantissa-embed``
    (``~/.cache/mantissa-embed``). Returns a :class:`pathlib.Path` (not created).
    """
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return Path(cache).expanduser() / "mantissa-embed"


def _resolve_dir(data_dir):
    if data_dir is None:
        return default_data_dir()
    if not isinstance(data_dir, (str, os.PathLike)):
        raise TypeError(f"data_dir must be a str or os.PathLike, got {type(data_dir).__name__}")
    return Path(data_dir).expanduser()


def _download_command(root):
    return f"python -m mantissa_embed.datasets download mnist --data-dir {shlex.quote(str(root))}"


# --------------------------------------------------------------------------- IDX
_IDX_TYPES = {0x08: np.dtype(">u1"), 0x09: np.dtype(">i1"), 0x0B: np.dtype(">i2"),
              0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


def _read_bytes(path):
    path = Path(path)
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise ValueError(f"{path}: truncated or corrupt gzip stream ({exc})") from None
    return raw


def read_idx(path):
    """Read one IDX file (LeCun's MNIST format), gzipped or not, into a numpy array.

    The header is 2 zero bytes, a type code (0x08 = uint8, ...), the number of dimensions,
    then each dimension as a big-endian uint32; the payload must have exactly the announced
    size. Returns an array of the announced shape in native byte order.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        Wrong magic number, unknown type code, truncated or oversized payload, or a corrupt
        gzip stream; the message names the file.
    """
    path = Path(path)
    raw = _read_bytes(path)
    if len(raw) < 4:
        raise ValueError(f"{path}: not an IDX file (only {len(raw)} bytes)")
    if raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES:
        raise ValueError(f"{path}: not an IDX file (bad magic number 0x{raw[:4].hex()})")
    dtype = _IDX_TYPES[raw[2]]
    ndim = raw[3]
    header = 4 + 4 * ndim
    if ndim == 0 or len(raw) < header:
        raise ValueError(f"{path}: truncated IDX header (ndim={ndim}, {len(raw)} bytes)")
    shape = tuple(int(d) for d in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    expected = header + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) != expected:
        kind = "truncated" if len(raw) < expected else "oversized"
        raise ValueError(
            f"{path}: {kind} IDX file: header announces shape {shape} ({expected} bytes), "
            f"file has {len(raw)} bytes")
    return np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))


def _find_mnist_file(root, stem):
    for d in (root, root / "mnist"):
        for name in (stem, stem + ".gz"):
            p = d / name
            if p.is_file():
                return p
    raise FileNotFoundError(
        f"MNIST file {stem}[.gz] not found in {root} or {root / 'mnist'}. Fetch it with:\n"
        f"    {_download_command(root)}")


def _load_mnist(split, data_dir):
    if split is None:
        split = "train"
    if split not in _MNIST_SPLITS:
        raise ValueError(f"split must be 'train' or 'test' for 'mnist', got {split!r}")
    root = _resolve_dir(data_dir)
    prefix = _MNIST_SPLITS[split]
    img_path = _find_mnist_file(root, f"{prefix}-images-idx3-ubyte")
    lab_path = _find_mnist_file(root, f"{prefix}-labels-idx1-ubyte")
    images = read_idx(img_path)
    labels = read_idx(lab_path)
    if images.dtype != np.uint8 or images.ndim != 3 or images.shape[1:] != (28, 28):
        raise ValueError(
            f"{img_path}: expected uint8 images of shape (N, 28, 28), got {images.dtype} {images.shape}")
    if labels.dtype != np.uint8 or labels.ndim != 1:
        raise ValueError(f"{lab_path}: expected uint8 labels of shape (N,), got {labels.dtype} {labels.shape}")
    if labels.shape[0] != images.shape[0]:
        raise ValueError(
            f"{lab_path}: {labels.shape[0]} labels for {images.shape[0]} images in {img_path}")
    if labels.size and labels.max() > 9:
        raise ValueError(f"{lab_path}: labels must be digits 0..9, found {int(labels.max())}")
    X = images.astype(np.float32)
    X *= np.float32(1.0 / 255.0)
    return X.reshape(-1, 1, 28, 28), labels.astype(np.int64)


# --------------------------------------------------------------------------- PGM
def _pgm_tokens(raw, path, count):
    """Parse ``count`` ASCII integers after the magic, skipping whitespace and # comments."""
    pos, vals, n = 2, [], len(raw)
    ws = b" \t\n\r\x0b\x0c"
    while len(vals) < count:
        while pos < n and (raw[pos] in ws or raw[pos] == ord("#")):
            if raw[pos] == ord("#"):
                while pos < n and raw[pos] not in b"\n\r":
                    pos += 1
            else:
                pos += 1
        start = pos
        while pos < n and 48 <= raw[pos] <= 57:
            pos += 1
        if start == pos:
            raise ValueError(f"{path}: malformed PGM header (expected width, height, maxval)")
        vals.append(int(raw[start:pos]))
    if pos >= n or raw[pos] not in ws:
        raise ValueError(f"{path}: malformed PGM header (no whitespace after maxval)")
    return vals, pos + 1


def read_pgm(path):
    """Read a binary PGM (``P5``) image into a float32 ``(H, W)`` array in [0, 1].

    Netpbm format: ``P5``, width, height, maxval as ASCII decimals separated by whitespace,
    with ``#`` comments allowed in the header, one whitespace byte, then H*W samples of 1 byte
    (maxval < 256) or 2 big-endian bytes. Samples are divided by maxval.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        Not a binary PGM (e.g. ``P2`` or another format), a malformed header, maxval outside
        1..65535, a sample above maxval, or a truncated raster; the message names the file.
    """
    path = Path(path)
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] != b"P5":
        raise ValueError(f"{path}: not a binary PGM file (magic {raw[:2]!r}, expected b'P5')")
    (w, h, maxval), start = _pgm_tokens(raw, path, 3)
    if w <= 0 or h <= 0:
        raise ValueError(f"{path}: invalid PGM size {w}x{h}")
    if not 1 <= maxval <= 65535:
        raise ValueError(f"{path}: PGM maxval must be in 1..65535, got {maxval}")
    dtype = np.dtype("u1") if maxval < 256 else np.dtype(">u2")
    need = w * h * dtype.itemsize
    if len(raw) - start < need:
        raise ValueError(f"{path}: truncated PGM raster ({len(raw) - start} of {need} bytes)")
    img = np.frombuffer(raw, dtype=dtype, count=w * h, offset=start).reshape(h, w)
    if int(img.max()) > maxval:
        raise ValueError(f"{path}: PGM sample {int(img.max())} exceeds maxval {maxval}")
    out = img.astype(np.float32)
    out *= np.float32(1.0 / maxval)
    return out


def _find_orl_root(root):
    for sub in _ORL_SUBDIRS:
        d = root / sub if sub else root
        if (d / "s1").is_dir():
            return d
    return None


def _orl_missing(root, what):
    qroot = shlex.quote(str(root))
    return FileNotFoundError(
        f"ORL faces: {what}.\n" + _ORL_INSTRUCTIONS.format(
            root=root, qroot=qroot, root_repr=repr(str(root)), env=ENV_VAR))


def _load_orl(split, data_dir):
    if split is not None:
        raise ValueError(f"split must be None for 'orl_faces' (it has no predefined split), got {split!r}")
    root = _resolve_dir(data_dir)
    base = _find_orl_root(root)
    if base is None:
        raise _orl_missing(root, f"no s1/ folder in {root} or {root / 'orl_faces'}")
    X = np.empty((_ORL_SUBJECTS * _ORL_IMAGES, 1) + _ORL_SHAPE, dtype=np.float32)
    y = np.repeat(np.arange(_ORL_SUBJECTS, dtype=np.int64), _ORL_IMAGES)
    for s in range(_ORL_SUBJECTS):
        for i in range(_ORL_IMAGES):
            p = base / f"s{s + 1}" / f"{i + 1}.pgm"
            if not p.is_file():
                raise _orl_missing(root, f"missing file {p}")
            img = read_pgm(p)
            if img.shape != _ORL_SHAPE:
                raise ValueError(f"{p}: expected a 92x112 (W x H) image, got {img.shape[1]}x{img.shape[0]}")
            X[s * _ORL_IMAGES + i, 0] = img
    return X, y


# --------------------------------------------------------------------------- digits
def _load_digits(split):
    if split is not None:
        raise ValueError(f"split must be None for 'digits' (it has no predefined split), got {split!r}")
    from sklearn.datasets import load_digits

    d = load_digits()
    X = d.images.astype(np.float32).reshape(-1, 1, 8, 8)
    X *= np.float32(1.0 / 16.0)
    return np.ascontiguousarray(X), d.target.astype(np.int64)


# --------------------------------------------------------------------------- load
def load(name, split=None, data_dir=None, *, size=None):
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
        Default :func:`default_data_dir` (``$MANTISSA_EMBED_DATA`` when set).
    size : int or (int, int), optional
        Resize every image to ``(h, w)``: area averaging (exact block averaging for integer
        factors) when shrinking both sides, bilinear otherwise; see :func:`pad_or_resize`.

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
        X, y = _load_digits(split)
    elif key == "mnist":
        X, y = _load_mnist(split, data_dir)
    elif key in ("orl_faces", "orl", "att_faces"):
        X, y = _load_orl(split, data_dir)
    else:
        raise ValueError(f"name must be one of {DATASETS}, got {name!r}")
    if size is not None:
        h, w = _check_size(size)
        shrink = h <= X.shape[2] and w <= X.shape[3]
        X = pad_or_resize(X, (h, w), mode="area" if shrink else "bilinear")
    return X, y


# --------------------------------------------------------------------------- splits
def _check_xy(X, y):
    if isinstance(X, (str, bytes)) or X is None:
        raise TypeError(f"X must be an array, got {type(X).__name__}")
    X = np.asarray(X)
    if X.ndim < 1:
        raise ValueError(f"X must have at least 1 dimension, got shape {X.shape}")
    y = check_labels(y, "y", n=X.shape[0])
    return X, y


def subset(X, y, n, seed=0):
    """A stratified random subset of ``n`` samples, deterministic for a given ``seed``.

    Each class gets ``floor(n * count / N)`` samples, and the remaining ones go to the classes
    with the largest fractional parts (ties to the smaller label) -- the largest-remainder
    method, so class proportions are kept as closely as integers allow. Within a class the
    samples are drawn without replacement; the result keeps the original order.

    Parameters
    ----------
    X : array_like, shape (N, ...)
    y : array_like of int, shape (N,)
    n : int, 1 <= n <= N
    seed : int or numpy.random.Generator, default 0

    Returns
    -------
    X_sub : ndarray, shape (n, ...), same dtype as X
    y_sub : ndarray, int64, shape (n,)

    Raises
    ------
    ValueError
        ``n`` < 1 or ``n`` > N, or ``y`` of the wrong length.
    TypeError
        Non-integer ``n`` or labels.
    """
    X, y = _check_xy(X, y)
    n = check_int(n, "n", minimum=1)
    N = y.shape[0]
    if n > N:
        raise ValueError(f"n must be <= the number of samples ({N}), got {n}")
    rng = as_generator(seed)
    classes, inverse, counts = np.unique(y, return_inverse=True, return_counts=True)
    quota = counts * (n / N)
    take = np.floor(quota).astype(np.int64)
    rest = n - int(take.sum())
    if rest > 0:
        order = np.argsort(-(quota - take), kind="stable")
        take[order[:rest]] += 1
    chosen = []
    for c in range(classes.shape[0]):
        if take[c]:
            idx = np.flatnonzero(inverse == c)
            chosen.append(rng.choice(idx, size=int(take[c]), replace=False))
    sel = np.sort(np.concatenate(chosen))
    return np.ascontiguousarray(X[sel]), y[sel]


def split_by_class(X, y, classes):
    """Split into the samples whose label is in ``classes`` and the others (class-disjoint).

    Used for unseen-class evaluation: train on ``(X_in, y_in)``, evaluate retrieval on
    ``(X_out, y_out)``, whose classes never appear in training. Order and labels are kept.

    Parameters
    ----------
    X : array_like, shape (N, ...)
    y : array_like of int, shape (N,)
    classes : int or sequence of int, non-empty; every class must occur in ``y``.

    Returns
    -------
    X_in, y_in, X_out, y_out : ndarrays (``y_*`` int64)

    Raises
    ------
    ValueError
        Empty ``classes``, a class absent from ``y``, or ``y`` of the wrong length.
    TypeError
        Non-integer ``classes`` or labels.
    """
    X, y = _check_xy(X, y)
    cls = np.atleast_1d(np.asarray(classes))
    if cls.ndim != 1 or cls.size == 0:
        raise ValueError(f"classes must be a non-empty 1-D sequence of ints, got shape {cls.shape}")
    if cls.dtype.kind not in "iu":
        raise TypeError(f"classes must be integers, got dtype {cls.dtype}")
    missing = np.setdiff1d(cls, y)
    if missing.size:
        raise ValueError(f"classes {missing.tolist()} do not occur in y (labels present: {np.unique(y).tolist()})")
    mask = np.isin(y, cls)
    return (np.ascontiguousarray(X[mask]), y[mask], np.ascontiguousarray(X[~mask]), y[~mask])


# --------------------------------------------------------------------------- resize
_RESIZE_MODES = ("bilinear", "nearest", "area", "pad")


def _check_size(size):
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
        size = (size, size)
    if not isinstance(size, (tuple, list)) or len(size) != 2:
        raise TypeError(f"size must be an int or a pair (h, w), got {size!r}")
    h = check_int(size[0], "size[0]", minimum=1)
    w = check_int(size[1], "size[1]", minimum=1)
    return h, w


def _interp_matrix(n_out, n_in, mode):
    """(n_out, n_in) float64 matrix mapping a 1-D signal of length n_in to n_out."""
    A = np.zeros((n_out, n_in), dtype=np.float64)
    j = np.arange(n_out)
    scale = n_in / n_out
    if mode == "nearest":
        src = np.minimum(np.floor((j + 0.5) * scale).astype(np.int64), n_in - 1)
        A[j, src] = 1.0
    elif mode == "bilinear":  # half-pixel centres, edges clamped (align_corners=False)
        src = np.clip((j + 0.5) * scale - 0.5, 0.0, n_in - 1)
        i0 = np.floor(src).astype(np.int64)
        i1 = np.minimum(i0 + 1, n_in - 1)
        frac = src - i0
        np.add.at(A, (j, i0), 1.0 - frac)
        np.add.at(A, (j, i1), frac)
    else:  # area: overlap of input pixel [p, p+1) with output cell [j*s, (j+1)*s)
        lo, hi = j * scale, (j + 1) * scale
        p = np.arange(n_in)
        overlap = np.clip(np.minimum(hi[:, None], p[None, :] + 1) - np.maximum(lo[:, None], p[None, :]), 0.0, None)
        A = overlap / scale
    return A


def pad_or_resize(X, size, mode="bilinear"):
    """Resize a batch of images to ``size`` by a separable linear map, or zero-pad it.

    Useful to feed the 8x8 digits to a network designed for 28x28 inputs.

    Parameters
    ----------
    X : array_like, shape (N, C, H, W) or (N, H, W)
    size : int or (int, int)
        Target ``(h, w)``.
    mode : {"bilinear", "nearest", "area", "pad"}, default "bilinear"
        ``"bilinear"``: half-pixel centres, clamped edges (as ``align_corners=False``).
        ``"nearest"``: nearest source pixel. ``"area"``: average of the covered source area
        (exact block averaging for integer factors; the right choice to shrink).
        ``"pad"``: centre the image in a zero canvas (requires ``h >= H`` and ``w >= W``;
        an odd margin puts the extra pixel at the bottom/right).

    Returns
    -------
    ndarray, float32, shape (N, C, h, w) (or (N, h, w)), C-contiguous. Interpolated values
    are convex combinations of input pixels, clipped to the input's [min, max].

    Raises
    ------
    ValueError
        Wrong ndim, NaN/Inf, unknown ``mode``, a ``"pad"`` target smaller than the image, or
        empty (0-pixel) images to interpolate.
    TypeError
        Non-numeric ``X`` or a malformed ``size``.
    """
    X = check_array(X, "X", ndim=(3, 4))
    if mode not in _RESIZE_MODES:
        raise ValueError(f"mode must be one of {_RESIZE_MODES}, got {mode!r}")
    h, w = _check_size(size)
    H, W = X.shape[-2:]
    if mode == "pad":
        if h < H or w < W:
            raise ValueError(f"size {(h, w)} is smaller than the images ({H}, {W}); mode='pad' cannot crop")
        out = np.zeros(X.shape[:-2] + (h, w), dtype=np.float32)
        top, left = (h - H) // 2, (w - W) // 2
        out[..., top:top + H, left:left + W] = X
        return out
    if (h, w) == (H, W):
        return X.copy()
    if H == 0 or W == 0:
        raise ValueError(f"X must have images of at least 1x1 pixel to interpolate, got shape {X.shape}")
    Ah = _interp_matrix(h, H, mode).astype(np.float32)
    Aw = _interp_matrix(w, W, mode).astype(np.float32)
    out = np.matmul(np.matmul(Ah, X), Aw.T)
    if X.size:
        np.clip(out, X.min(), X.max(), out=out)
    return np.ascontiguousarray(out, dtype=np.float32)


# --------------------------------------------------------------------------- CLI
def main(argv=None):
    """Command line: ``python -m mantissa_embed.datasets download mnist [--data-dir DIR] [--url-base URL] [--force]``.

    Returns the process exit code (0 on success, 1 on a failed download or checksum, 2 for
    a dataset that must be fetched by hand).
    """
    from . import _download

    parser = argparse.ArgumentParser(prog="python -m mantissa_embed.datasets",
                                     description="Fetch datasets explicitly (nothing downloads implicitly).")
    sub = parser.add_subparsers(dest="command", required=True)
    dl = sub.add_parser("download", help="download and verify a dataset")
    dl.add_argument("name", choices=["mnist", "orl_faces"])
    dl.add_argument("--data-dir", default=None,
                    help=f"root data directory (default: ${ENV_VAR} or ~/.cache/mantissa-embed); "
                         "MNIST lands in DIR/mnist/")
    dl.add_argument("--url-base", default=None,
                    help=f"base URL of the four .gz files (default: {_download.DEFAULT_URL_BASE}, "
                         "then the other known mirrors); file:// works")
    dl.add_argument("--force", action="store_true", help="download again even if present and valid")
    args = parser.parse_args(argv)
    root = _resolve_dir(args.data_dir)
    if args.name == "orl_faces":
        print(_ORL_INSTRUCTIONS.format(root=root, qroot=shlex.quote(str(root)),
                                       root_repr=repr(str(root)), env=ENV_VAR), file=sys.stderr)
        return 2
    try:
        _download.download_mnist(root, args.url_base, force=args.force)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        if isinstance(exc, OSError):
            print("hint: --url-base URL fetches from another mirror (or a local directory as "
                  "file:///path/to/dir/)", file=sys.stderr)
        return 1
    print(f"MNIST ready in {root / 'mnist'}; load it with "
          f"mantissa_embed.datasets.load('mnist', split='train', data_dir={str(root)!r})")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
