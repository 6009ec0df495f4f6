"""The demo on any image folder: ``python -m mantissa_embed demo --dataset folder --data-dir DIR``.

``DIR`` is an ``ImageFolder`` (one sub-folder per class). The last quarter of the classes in
natural order (at least two; ``s31`` .. ``s40`` of ``s1`` .. ``s40``) are the unseen classes;
the others train, with 20% of each held out. The images are streamed from the files (never loaded as one array), at ``--image-size``
(default 112: shorter side resized, central square) with ``--channels`` (default 3).
Reported as the other demos: precision@1, R-precision and MAP@R of the trained embedding and
of the untrained network on the unseen classes and on the held-out images, and raw pixels
when the set has at most ``RAW_PIXELS_MAX`` images.
"""

from __future__ import annotations

import os
import re
import sys
import time

import numpy as np
from sklearn.model_selection import train_test_split

from . import datasets, engine, models, viz
from .datasets._stream import eval_batches
from .embedder import Embedder
from .embedder._inference import l2_normalize
from .evaluation import retrieval_metrics

__all__ = [
    "UNSEEN_FRACTION",
    "RAW_PIXELS_MAX",
    "split_folder",
    "fit_saying_epochs",
    "gallery_neighbours",
    "run_folder_demo",
]

#: the fraction of the classes (the last ones in sorted order, at least two) kept unseen
UNSEEN_FRACTION = 0.25
#: raw pixels are scored on a set of at most this many images (they are loaded as one array)
RAW_PIXELS_MAX = 4000


def _natural_key(name):
    """``"s10"`` after ``"s9"``: digit runs compare as numbers."""
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.findall(r"\d+|\D+", name)]


def split_folder(ds, seed, held_out):
    """``(fit, held, unseen)`` subsets of the ImageFolder ``ds``: the last ``UNSEEN_FRACTION``
    of the classes in natural order (``s31`` .. ``s40`` of ``s1`` .. ``s40``) are unseen."""
    n_classes = len(ds.classes)
    n_unseen = max(2, int(round(UNSEEN_FRACTION * n_classes)))
    if n_classes - n_unseen < 2:
        raise ValueError(f"the folder needs at least 4 classes (2 to train, 2 unseen), got {n_classes}")
    order = sorted(range(n_classes), key=lambda c: _natural_key(ds.classes[c]))
    seen = np.isin(ds.labels, order[: n_classes - n_unseen])
    idx = np.flatnonzero(seen)
    fit_i, held_i = train_test_split(idx, test_size=held_out, stratify=ds.labels[idx], random_state=seed)
    return ds.subset(np.sort(fit_i)), ds.subset(np.sort(held_i)), ds.subset(~seen)


def fit_saying_epochs(emb, say, *data, epochs, **fit_kw):
    """``emb.fit(*data, epochs=epochs, **fit_kw)``, saying each epoch's loss and time; the
    seconds it took, or None after printing a ValueError (the demo then exits with 2)."""
    t0 = time.perf_counter()

    def on_epoch(epoch, loss) -> None:
        say(f"  epoch {epoch + 1:>2}/{epochs}  loss {loss:.4f}  ({time.perf_counter() - t0:.1f}s)")

    try:
        emb.fit(*data, epochs=epochs, callback=on_epoch, **fit_kw)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None
    return time.perf_counter() - t0


def gallery_neighbours(emb, Z, q, n=5):
    """The ``n`` nearest items of each query ``q`` among the rows of ``Z``, itself left out:
    (len(q), n) int64 (fewer columns when ``Z`` is small)."""
    idx, _ = emb.retrieve(Z[q], Z, k=min(n + 1, Z.shape[0]))
    return np.array([[j for j in row if j != qi][:n] for qi, row in zip(q, idx)], dtype=np.int64)


def _untrained(net, ds):
    Z = np.concatenate([net.forward(net.normalize_input(xb)) for _, xb in eval_batches(ds, 256)])
    return l2_normalize(Z)


def run_folder_demo(args, say, fmt, held_out) -> int:
    """The folder demo for parsed ``args``; returns the exit code."""
    try:
        ds = datasets.ImageFolder(
            args.data_dir, size=args.image_size, channels=args.channels, skip_bad=args.skip_bad
        )
        fit_ds, held_ds, unseen_ds = split_folder(ds, args.seed, held_out)
    except (FileNotFoundError, NotADirectoryError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    epochs = 20 if args.epochs is None else args.epochs
    batch = 64 if args.batch_size is None else args.batch_size
    say(
        f"mantissa-embed demo: image folder {args.data_dir!r}, {len(ds)} images, {len(ds.classes)} classes, "
        f"at {ds.image_shape} (streamed from the files on {ds.workers()} decode threads)"
    )
    say(
        f"  train: {len(fit_ds)} images of {len(np.unique(fit_ds.labels))} classes "
        f"({100 * held_out:.0f}% of each held out: {len(held_ds)}) | unseen: {len(unseen_ds)} images of "
        f"{len(np.unique(unseen_ds.labels))} classes ({', '.join(unseen_ds.classes[c] for c in np.unique(unseen_ds.labels)[:3])}, ...)"
    )

    def trunk():
        return models.cnn_embedder(args.embed_dim, seed=args.seed, backend=args.backend).build(ds.image_shape)

    emb = Embedder(trunk(), loss=args.loss, seed=args.seed, backend=args.backend)
    untrained = trunk().eval()
    say(
        f"  model: cnn_embedder(embed_dim={args.embed_dim}), {emb.net.num_parameters():,} parameters; "
        f"{epochs} epochs, batch {batch}, train transform {ds.train_transform!r}"
    )
    fit_s = fit_saying_epochs(emb, say, fit_ds, epochs=epochs, batch_size=batch, lr=args.lr)
    if fit_s is None:
        return 2
    Z = emb.embed(unseen_ds)
    for title, part, Ze in (
        ("unseen classes", unseen_ds, Z),
        ("held-out images of the training classes", held_ds, emb.embed(held_ds)),
    ):
        rows = [("trained embedding", Ze), ("untrained network", _untrained(untrained, part))]
        if len(part) <= RAW_PIXELS_MAX:
            rows.append(("raw pixels", part.load_all().reshape(len(part), -1)))
        say(f"{title} ({len(part)} images, each querying the others, self excluded):")
        for label, F in rows:
            say(
                f"  {label + ' (' + str(F.shape[1]) + '-D):':<36}"
                f"{fmt(retrieval_metrics(F, part.labels, backend=args.backend))}"
            )
    say(
        f"  (fit {fit_s:.1f}s, {len(fit_ds) * epochs / fit_s:.0f} images/s; CPU features {engine.cpu_features()})"
    )
    try:
        os.makedirs(args.out, exist_ok=True)
        p1 = viz.plot_embedding_manifold(
            Z,
            unseen_ds.labels,
            os.path.join(args.out, "embedding_manifold.png"),
            title=f"unseen classes: 2-D PCA of the {Z.shape[1]}-D embeddings",
        )
        rng = np.random.default_rng(args.seed)
        q = np.array(
            [int(rng.choice(np.flatnonzero(unseen_ds.labels == c))) for c in np.unique(unseen_ds.labels)[:5]],
            dtype=np.int64,
        )
        nbrs = gallery_neighbours(emb, Z, q)
        shown = np.unique(np.concatenate([q, nbrs.ravel()]))
        X = np.stack([unseen_ds[int(i)] for i in shown])  # only the pictured images are decoded
        remap = {int(i): k for k, i in enumerate(shown)}
        yk = unseen_ds.labels[shown]
        p2 = viz.plot_retrieval_gallery(
            X,
            yk,
            np.array([remap[int(i)] for i in q]),
            np.vectorize(lambda i: remap[int(i)])(nbrs),
            os.path.join(args.out, "retrieval_gallery.png"),
        )
    except ImportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    say(f"wrote {p1}")
    say(f"wrote {p2}")
    return 0
