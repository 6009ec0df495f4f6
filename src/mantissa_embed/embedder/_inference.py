"""Embedding, retrieval and verification with a fitted Embedder (the bodies of
``Embedder.embed``, ``retrieve`` and ``verify``)."""

from __future__ import annotations

import numpy as np

from .._checks.distance import l2_normalize_rows
from .._validation import check_array, check_float, check_int
from ..datasets._stream import eval_batches
from ..datasets.image_dataset import ImageDataset
from ..index import Index
from ._exact_knn import exact_knn
from ._threads import AdaptiveThreads

__all__ = [
    "EMBED_BUDGET",
    "l2_normalize",
    "labels_for",
    "check_dataset_input",
    "embed",
    "as_embeddings",
    "retrieve",
    "verify",
]

_EPS = 1e-12  # torch.nn.functional.normalize's eps, used by PML's LpDistance
#: bytes of network buffers an ``embed`` chunk may take (``Sequential.max_batch_for``); the
#: decode ring of a dataset holds ``prefetch + 1`` chunks of images on top
EMBED_BUDGET = 512 << 20


def l2_normalize(Z):
    """Rows of Z (n, D) float32 divided by max(||row||, 1e-12), in place; returns Z."""
    return l2_normalize_rows(Z, _EPS, out=Z)[0]


def _check_images(emb, X, name, batched):
    """Type/shape checks without converting the whole array (embed converts per chunk)."""
    if isinstance(X, (str, bytes)) or X is None:
        raise TypeError(f"{name} must be an array of numbers, got {type(X).__name__}")
    arr = np.asarray(X)
    if arr.dtype == object or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}")
    want = (len(emb.input_shape_) + 1) if batched else len(emb.input_shape_)
    if arr.ndim != want or tuple(arr.shape[-len(emb.input_shape_) :]) != emb.input_shape_:
        shape = ", ".join(map(str, emb.input_shape_))
        exp = f"(n, {shape})" if batched else f"({shape})"
        raise ValueError(f"{name} must have shape {exp}, got {arr.shape}")
    return arr


def _check_output(Z, name, start, single):
    """ValueError naming the first image of the chunk ``Z`` (rows ``start``, ...) whose
    embedding is not finite although the image was."""
    if np.isfinite(Z).all():
        return
    i = start + int(np.flatnonzero(~np.isfinite(Z).all(axis=1))[0])
    what = name if single else f"{name}[{i}]"
    raise ValueError(
        f"the embedding of {what} is not finite: the network overflowed float32 on a finite input; "
        "rescale the images"
    )


def _array_chunks(X, name, batch_size):
    """``(start, chunk)`` of an input array, each chunk converted and checked (finite; the
    shape was checked by ``_check_images``) once, here."""
    for s in range(0, X.shape[0], batch_size):
        yield s, check_array(X[s : s + batch_size], name, ndim=X.ndim)


def _dataset_chunks(ds, batch_size, progress):
    """``(start, chunk)`` of an ``ImageDataset`` in eval mode, decoded on its threads while the
    previous chunk is embedded."""
    for idx, xb in eval_batches(ds, batch_size, progress=progress):
        yield int(idx[0]), xb


def labels_for(X, labels, name):
    """The labels that go with ``X``: a dataset's own (``labels`` must be None), else
    ``labels`` (required: TypeError when None), unchecked."""
    if isinstance(X, ImageDataset):
        if labels is not None:
            raise ValueError(
                f"{name} must be None when X is a dataset: its labels are the dataset's (X.labels)"
            )
        return X.labels
    if labels is None:
        raise TypeError(f"{name} must be an integer array of labels (None only when X is an ImageDataset)")
    return labels


def check_dataset_input(emb, ds, name):
    """ValueError unless the dataset ``ds`` gives images of ``emb.input_shape_``."""
    if tuple(ds.image_shape) != tuple(emb.input_shape_):
        shape = ", ".join(map(str, emb.input_shape_))
        raise ValueError(
            f"{name} gives images of shape {tuple(ds.image_shape)}; the Embedder takes ({shape}) "
            "(set the dataset's size= and channels= to match)"
        )


def embed(
    emb, X, name, batch_size=256, normalize: bool = True, *, single: bool = False, progress: bool = False
):
    """``emb``'s trunk on inputs X (n, *input_shape_): images (n, C, H, W) or feature vectors
    (n, F), or an ``ImageDataset`` streamed in eval mode, in chunks of
    ``min(batch_size, net.max_batch_for(EMBED_BUDGET))`` (a function of the model and the
    input shape only, so the chunks, and the bits, are the same for arrays and datasets): (n, D)
    float32. ValueError naming the image (``name[i]``, or ``name`` when ``single``) whose
    embedding overflowed; numpy's overflow warnings of the numpy backend are not shown (the
    error is). ``progress``: a tqdm bar (datasets only)."""
    net = emb.net
    if net.built:  # chunks bounded in bytes as well: large images run a few at a time
        batch_size = min(batch_size, net.max_batch_for(EMBED_BUDGET, emb.input_shape_))
    if isinstance(X, ImageDataset):
        check_dataset_input(emb, X, name)
        n = len(X)
        chunks = _dataset_chunks(X, batch_size, progress)
    else:
        X = _check_images(emb, X, name, batched=True)
        n = X.shape[0]
        chunks = _array_chunks(X, name, batch_size)
    out = np.empty((n, emb.embed_dim_), dtype=np.float32)
    net.eval()
    try:
        with AdaptiveThreads() as threads, np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            for s, chunk in chunks:
                threads.step()
                chunk = net.normalize_input(chunk)
                out[s : s + chunk.shape[0]] = net._forward_valid(chunk) if net.built else net.forward(chunk)
                _check_output(out[s : s + chunk.shape[0]], name, s, single)
    finally:
        chunks.close()
    if normalize and emb._normalizes() and n:
        l2_normalize(out)
    return out


def as_embeddings(emb, a, name, allow_single: bool = True, batch_size=256):
    """Inputs (embedded ``batch_size`` at a time) or embeddings -> (float32 (n, D) normalized as
    trained, was_single).

    Inputs are arrays of shape ``(n, *input_shape_)`` (or ``input_shape_`` for one); any other
    2-D ``(n, D)`` (1-D ``(D,)``) array is embeddings. For an image trunk a 2-D array is always
    embeddings. For a feature trunk (``input_shape_ == (F,)``) an array of width ``F`` is
    inputs, so when ``F == embed_dim_`` every such array is inputs (inputs win); embeddings of
    that width are searched with an ``Index`` of them (``Index.add`` / ``Index.search``)."""
    emb._check_fitted()
    if isinstance(a, ImageDataset):
        return embed(emb, a, name, batch_size), False
    if isinstance(a, (str, bytes)) or a is None:
        raise TypeError(f"{name} must be an array of numbers, got {type(a).__name__}")
    arr = np.asarray(a)
    if arr.dtype == object or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}")
    D = emb.embed_dim_
    img_nd = len(emb.input_shape_)
    img_ok = tuple(arr.shape[-img_nd:]) == emb.input_shape_
    if arr.ndim == img_nd + 1 and img_ok:
        return embed(emb, arr, name, batch_size), False
    if arr.ndim == img_nd and allow_single and img_ok:
        return embed(emb, arr[None], name, single=True), True
    # (n, D) / (D,) embeddings; for a feature trunk a width that is neither F nor D falls to the error below
    if (arr.ndim == 2 or (arr.ndim == 1 and allow_single)) and (img_nd != 1 or arr.shape[-1] == D):
        single = arr.ndim == 1
        Z = check_array(arr.reshape(1, -1) if single else arr, name, ndim=2)
        if Z.shape[1] != D:
            raise ValueError(
                f"{name} embeddings must have {D} columns (the embedding size), got shape {arr.shape}"
            )
        Z = np.array(Z, dtype=np.float32, copy=True)  # never normalize the caller's array in place
        if emb._normalizes() and Z.shape[0]:
            l2_normalize(Z)
        return Z, single
    shape = ", ".join(map(str, emb.input_shape_))
    kind = "feature vector" if img_nd == 1 else "image"
    forms = f"{kind}s (n, {shape}), embeddings (n, {D})"
    if allow_single:
        forms = f"one {kind} ({shape}), " + forms + f" or one embedding ({D},)"
    raise ValueError(f"{name} must be {forms}; got shape {arr.shape}")


def retrieve(emb, query, gallery, k):
    """The ``k`` nearest gallery items of each query: ``(indices, distances)`` (an
    ``Index`` gallery: ``(ids, distances)``)."""
    emb._check_fitted()
    k = check_int(k, "k", minimum=1)
    if isinstance(gallery, Index):
        if gallery.dim != emb.embed_dim_:
            raise ValueError(
                f"the index holds {gallery.dim}-D vectors, the Embedder embeds in {emb.embed_dim_}-D"
            )
        Q, single = as_embeddings(emb, query, "query")
        ids, dist = gallery.search(Q, k)
        return (ids[0], dist[0]) if single else (ids, dist)
    Q, single = as_embeddings(emb, query, "query")
    G, _ = as_embeddings(emb, gallery, "gallery", allow_single=False)
    if k > G.shape[0]:
        raise ValueError(f"k must be <= the number of gallery items ({G.shape[0]}), got k={k}")
    idx, dist = exact_knn(Q, G, k, backend=emb.backend)
    if single:
        return idx[0], dist[0]
    return idx, dist


def verify(emb, a, b, threshold):
    """Distances between ``a`` and ``b`` (or ``distance <= threshold``)."""
    emb._check_fitted()
    if threshold is not None:
        threshold = check_float(threshold, "threshold", minimum=0.0)
    Za, sa = as_embeddings(emb, a, "a")
    Zb, sb = as_embeddings(emb, b, "b")
    if not (sa or sb) and Za.shape[0] != Zb.shape[0]:
        raise ValueError(f"a and b must have the same number of items, got {Za.shape[0]} and {Zb.shape[0]}")
    diff = Za.astype(np.float64) - Zb.astype(np.float64)
    d = np.sqrt(np.einsum("ij,ij->i", diff, diff)).astype(np.float32)
    if sa and sb:
        return bool(d[0] <= threshold) if threshold is not None else float(d[0])
    return d <= threshold if threshold is not None else d
