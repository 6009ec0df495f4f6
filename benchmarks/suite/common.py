"""Seeded synthetic data shared by the asv benchmarks (no downloads)."""

from __future__ import annotations

import inspect

import numpy as np

#: the threads the engine uses in the benchmarks that do not take a thread parameter
#: (None: the engine's default, i.e. MANTISSA_EMBED_NUM_THREADS or every available CPU)
DEFAULT_THREADS = None


def synthetic_mnist(n=6000, n_classes=10, seed=0):
    """MNIST-sized images: (n, 1, 28, 28) float32 in [0, 1], int64 labels 0..n_classes-1.

    Each class is a fixed random blurred template plus per-image noise, so a trunk can learn
    something (timings do not depend on it, but the loss does not collapse to 0)."""
    rng = np.random.default_rng(seed)
    templates = rng.random((n_classes, 1, 28, 28), dtype=np.float32)
    # cheap 3x3 box blur so neighbouring pixels correlate as in real digits
    t = np.pad(templates, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="edge")
    templates = sum(t[:, :, i : i + 28, j : j + 28] for i in range(3) for j in range(3)) / 9.0
    y = np.arange(n, dtype=np.int64) % n_classes
    rng.shuffle(y)
    X = templates[y] + 0.3 * rng.standard_normal((n, 1, 28, 28)).astype(np.float32)
    np.clip(X, 0.0, 1.0, out=X)
    return np.ascontiguousarray(X, dtype=np.float32), y


def embeddings(n, d=128, n_classes=16, seed=0):
    """(n, d) float32 standard-normal embeddings and int64 labels in 0..n_classes-1."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    y = rng.integers(0, n_classes, n).astype(np.int64)
    return x, y


def _is_public_class(obj, base):
    return inspect.isclass(obj) and issubclass(obj, base) and not inspect.isabstract(obj)


def discover(module_name, base_name, skip_prefixes=("Base", "Generic")):
    """Names in ``module.__all__`` that are concrete subclasses of ``module.<base_name>``.

    Read at import so that losses and miners added later appear automatically."""
    import importlib

    mod = importlib.import_module(module_name)
    base = getattr(mod, base_name, None)
    names = []
    for name in getattr(mod, "__all__", []):
        obj = getattr(mod, name, None)
        if base is None or not _is_public_class(obj, base):
            continue
        if name.startswith(skip_prefixes):
            continue
        names.append(name)
    return names


def construct(cls, d=128, n_classes=16):
    """An instance of ``cls`` with its defaults; required arguments get obvious values.

    Raises NotImplementedError (asv: "skipped") when a required argument is unknown."""
    from mantissa_embed import losses

    fill = {
        "num_classes": lambda: n_classes,
        "embedding_size": lambda: d,
        "memory_size": lambda: 1024,
        "loss": lambda: losses.TripletMarginLoss(),
        "losses": lambda: [losses.ContrastiveLoss(), losses.TripletMarginLoss()],
        "miner": lambda: None,
        "margin": lambda: 0.4,  # RankedListLoss(margin, Tn): values of PML's docs example
        "Tn": lambda: 1.0,
        "l": lambda: d,  # ManifoldLoss(l): the embedding size
    }
    kwargs = {}
    for p in inspect.signature(cls).parameters.values():
        if p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name not in fill:
            raise NotImplementedError(f"{cls.__name__} needs argument {p.name!r}")
        kwargs[p.name] = fill[p.name]()
    return cls(**kwargs)
