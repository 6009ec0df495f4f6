"""PyTorch + pytorch-metric-learning reference for the mantissa-embed benchmarks.

Shared by ``benchmarks/compare_torch_fit.py`` (speed) and the recipe exploration
(accuracy).  Nothing here is imported by the library itself; torch and
pytorch-metric-learning are imported lazily so that ``load_mnist`` and the samplers
work without them.

Contents
--------
load_mnist(data_dir, split="test") -> (X float32 (N, 1, 28, 28) in [0, 1], y int64 (N,))
    reads the standard IDX files (gzipped or not) with gzip + numpy.
stratified_first(X, y, n) -> (X[:k], y[:k]) style stratified subset (deterministic).
batch_indices(y, batch_size, rng, sampler="random", m=None) -> list of int64 arrays
    one epoch of batches; "random" (shuffle, keep the last partial batch, like a
    DataLoader with shuffle=True) or "mperclass" (m samples of batch_size // m random
    classes, ceil(N / batch_size) batches per epoch as in ``Embedder.fit``; inside a class
    the samples are drawn without replacement, cycling through a fresh permutation).
small_cnn_embedder(embed_dim=16) -> torch.nn.Sequential with 52,528 parameters for 16.
Recipe (dataclass) / train(model, X, y, recipe, seed) / embed(model, X) / evaluate(Z, y)
Trainer(model, X, y, recipe, seed): train's setup / warm_up() / epoch(), for the timings
"""

from __future__ import annotations

import dataclasses
import gzip
import os
import time

import numpy as np

MNIST_FILES = {
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
}
DEFAULT_MNIST_DIR = os.environ.get("MANTISSA_EMBED_DATA", "/work/shared/data/mnist")


# --------------------------------------------------------------------------- data
def _read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    ndim = data[3]
    dims = np.frombuffer(data, dtype=">u4", count=ndim, offset=4).astype(np.int64)
    arr = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if arr.size != int(np.prod(dims)):
        raise ValueError(f"{path}: truncated IDX file")
    return arr.reshape(tuple(dims))


def _find(data_dir, stem):
    for name in (stem + ".gz", stem):
        p = os.path.join(data_dir, name)
        if os.path.exists(p):
            return p
    raise FileNotFoundError(
        f"{stem}[.gz] not found in {data_dir!r}; fetch it with "
        "`python -m mantissa_embed.datasets download mnist` or pass --data-dir"
    )


def load_mnist(data_dir=None, split="test"):
    """MNIST split as (X float32 (N, 1, 28, 28) in [0, 1], y int64 (N,))."""
    data_dir = DEFAULT_MNIST_DIR if data_dir is None else data_dir
    img_stem, lab_stem = MNIST_FILES[split]
    images = _read_idx(_find(data_dir, img_stem))
    labels = _read_idx(_find(data_dir, lab_stem))
    X = (images.astype(np.float32) / np.float32(255.0))[:, None, :, :]
    return np.ascontiguousarray(X), labels.astype(np.int64)


def stratified_first(X, y, n):
    """The first ``n * share_c`` images of every class c (share_c = class frequency),
    topped up in file order to exactly ``n``; order of the file is kept.  Deterministic."""
    classes, counts = np.unique(y, return_counts=True)
    quota = np.floor(counts * (n / len(y))).astype(np.int64)
    keep = np.zeros(len(y), dtype=bool)
    for c, q in zip(classes, quota):
        keep[np.flatnonzero(y == c)[:q]] = True
    missing = n - int(keep.sum())
    if missing > 0:
        keep[np.flatnonzero(~keep)[:missing]] = True
    idx = np.flatnonzero(keep)
    return np.ascontiguousarray(X[idx]), np.ascontiguousarray(y[idx])


def default_m(batch_size, n_classes):
    """``Embedder``'s rule for m_per_class=None: the smallest divisor m >= 2 of batch_size
    with m * n_classes >= batch_size and at least two classes per batch."""
    for d in range(2, batch_size + 1):
        if batch_size % d == 0 and d * n_classes >= batch_size and batch_size // d >= 2:
            return d
    return batch_size


def split_by_class(X, y, classes):
    mask = np.isin(y, np.asarray(classes))
    return X[mask], y[mask]


# --------------------------------------------------------------------------- batches
def batch_indices(y, batch_size, rng, sampler="random", m=None):
    """One epoch of batches (list of int64 index arrays)."""
    n = len(y)
    if sampler == "random":
        perm = rng.permutation(n)
        return [perm[i : i + batch_size] for i in range(0, n, batch_size)]
    if sampler != "mperclass":
        raise ValueError(f"sampler must be 'random' or 'mperclass', got {sampler!r}")
    classes = np.unique(y)
    m = int(m)
    k = batch_size // m
    if k < 2 or k * m != batch_size or k > len(classes):
        raise ValueError(
            f"mperclass needs batch_size % m == 0 and 2 <= batch_size // m <= "
            f"{len(classes)} classes; got batch_size={batch_size}, m={m}"
        )
    pools = {c: np.flatnonzero(y == c) for c in classes}
    queues = {c: rng.permutation(pools[c]) for c in classes}
    pos = {c: 0 for c in classes}

    def draw(c, count):
        out = []
        while count > 0:
            if pos[c] >= len(queues[c]):
                queues[c] = rng.permutation(pools[c])
                pos[c] = 0
            take = min(count, len(queues[c]) - pos[c])
            out.append(queues[c][pos[c] : pos[c] + take])
            pos[c] += take
            count -= take
        return np.concatenate(out)

    batches = []
    for _ in range(-(-n // batch_size)):
        chosen = rng.choice(classes, size=k, replace=False)
        batches.append(np.concatenate([draw(c, m) for c in chosen]).astype(np.int64))
    return batches


# --------------------------------------------------------------------------- model
def small_cnn_embedder(embed_dim=16):
    """Conv(1,8,3,p1)+ReLU, Pool2, Conv(8,16,3,p1)+ReLU, Pool2, Flatten,
    Linear(784,64)+ReLU, Linear(64,embed_dim) -- torch default init."""
    import torch.nn as nn

    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 7 * 7, 64),
        nn.ReLU(),
        nn.Linear(64, embed_dim),
    )


# --------------------------------------------------------------------------- recipe
@dataclasses.dataclass
class Recipe:
    loss: str = "triplet"  # "triplet" | "contrastive"
    margin: float = 0.05  # triplet margin
    pos_margin: float = 0.0  # contrastive
    neg_margin: float = 1.0  # contrastive
    miner: str | None = "semihard"  # semihard|hard|all|easy (TripletMarginMiner), batchhard,
    # pairmargin, or None (every pair/triplet of the batch)
    miner_margin: float | None = None  # TripletMarginMiner margin (default: the loss margin)
    sampler: str = "random"  # random | mperclass
    m: int | None = None
    momentum: float = 0.0
    normalize_input: bool = False  # (x - 0.1307) / 0.3081
    epochs: int = 8
    batch_size: int = 64
    lr: float = 0.05

    def label(self):
        if self.loss == "triplet":
            s = f"triplet m={self.margin:g}"
        else:
            s = f"contrastive pos={self.pos_margin:g} neg={self.neg_margin:g}"
        miner = self.miner or "none"
        if self.miner_margin is not None:
            miner += f"({self.miner_margin:g})"
        s += f" | miner={miner}"
        s += " | " + (self.sampler if self.sampler == "random" else f"m/class={self.m}")
        s += f" | mom={self.momentum:g}"
        if self.normalize_input:
            s += " | norm"
        return s


def build_loss_and_miner(recipe):
    from pytorch_metric_learning import losses, miners

    if recipe.loss == "triplet":
        loss = losses.TripletMarginLoss(margin=recipe.margin)
    elif recipe.loss == "contrastive":
        loss = losses.ContrastiveLoss(pos_margin=recipe.pos_margin, neg_margin=recipe.neg_margin)
    else:
        raise ValueError(recipe.loss)
    mm = recipe.miner_margin if recipe.miner_margin is not None else recipe.margin
    if recipe.miner in ("semihard", "hard", "all", "easy"):
        miner = miners.TripletMarginMiner(margin=mm, type_of_triplets=recipe.miner)
    elif recipe.miner == "batchhard":
        miner = miners.BatchHardMiner()
    elif recipe.miner == "pairmargin":
        miner = miners.PairMarginMiner(pos_margin=recipe.pos_margin, neg_margin=recipe.neg_margin)
    elif recipe.miner is None:
        miner = None
    else:
        raise ValueError(recipe.miner)
    return loss, miner


def _prep(X, recipe):
    import torch

    t = torch.from_numpy(np.ascontiguousarray(X, dtype=np.float32))
    if recipe is not None and recipe.normalize_input:
        t = (t - 0.1307) / 0.3081
    return t


class Trainer:
    """``train`` split into its phases, so that a benchmark times only the epochs.

    ``Trainer(model, X, y, recipe, seed)`` is the one-time setup: it imports
    pytorch-metric-learning, builds the loss, the miner and ``torch.optim.SGD`` (the first
    optimizer of a process imports ``torch._dynamo``: seconds), and converts the data to tensors.
    ``warm_up()`` runs one untimed step (forward, miner, loss, backward, SGD step) on every batch
    size an epoch has (the full batch, and the last partial batch of the "random" sampler), on
    batches drawn from a separate generator, so the epochs' batches are those of an un-warmed
    ``train`` with the same seed. ``epoch()`` runs one epoch and returns its mean loss."""

    def __init__(self, model, X, y, recipe, seed=0):
        import torch

        self.torch = torch
        self.model, self.recipe, self.seed = model, recipe, seed
        self.loss_fn, self.miner = build_loss_and_miner(recipe)
        self.opt = torch.optim.SGD(model.parameters(), lr=recipe.lr, momentum=recipe.momentum)
        self.Xt = _prep(X, recipe)
        self.y = np.asarray(y, dtype=np.int64)
        self.yt = torch.from_numpy(self.y)
        self.rng = np.random.default_rng(seed)
        model.train()

    def step(self, idx):
        """One batch: forward, miner, loss, backward, optimizer step; the loss as a float."""
        it = self.torch.from_numpy(idx)
        xb, yb = self.Xt[it], self.yt[it]
        emb = self.model(xb)
        tup = self.miner(emb, yb) if self.miner is not None else None
        loss = self.loss_fn(emb, yb, tup)
        self.opt.zero_grad(set_to_none=False)
        loss.backward()
        self.opt.step()
        return float(loss.detach())

    def batches(self, rng):
        r = self.recipe
        return batch_indices(self.y, r.batch_size, rng, r.sampler, r.m)

    def warm_up(self):
        """One untimed step per batch size of an epoch (see the class docstring)."""
        sizes = sorted(
            {len(b) for b in self.batches(np.random.default_rng(self.seed + 1_000_003)) if len(b) >= 2},
            reverse=True,
        )
        pool = self.batches(np.random.default_rng(self.seed + 2_000_003))[0]
        for n in sizes:
            self.step(pool[:n])
        return sizes

    def epoch(self):
        total, nb = 0.0, 0
        for idx in self.batches(self.rng):
            if len(idx) < 2:
                continue
            total += self.step(idx)
            nb += 1
        return total / max(nb, 1)


def train(model, X, y, recipe, seed=0, epochs=None, log=None):
    """SGD training of ``model`` on (X, y) with ``recipe``; returns per-epoch mean losses.
    The caller seeds torch (init) beforehand; batches come from numpy Generator(seed).
    No warm-up: for timing, build a ``Trainer``, call ``warm_up()``, then time ``epoch()``."""
    trainer = Trainer(model, X, y, recipe, seed)
    history = []
    for ep in range(recipe.epochs if epochs is None else epochs):
        history.append(trainer.epoch())
        if log is not None:
            log(f"  epoch {ep + 1}: loss {history[-1]:.4f}")
    return history


def embed(model, X, recipe=None, batch_size=1000):
    import torch

    model.eval()
    out = []
    with torch.no_grad():
        Xt = _prep(X, recipe)
        for i in range(0, len(Xt), batch_size):
            out.append(model(Xt[i : i + batch_size]))
    model.train()
    return torch.cat(out).numpy()


def evaluate(Z, y):
    """precision@1 and MAP@R, self excluded, Euclidean distance on L2-normalized
    embeddings (pytorch-metric-learning AccuracyCalculator with CustomKNN(LpDistance()))."""
    import torch
    from pytorch_metric_learning.distances import LpDistance
    from pytorch_metric_learning.utils.accuracy_calculator import AccuracyCalculator
    from pytorch_metric_learning.utils.inference import CustomKNN

    calc = AccuracyCalculator(
        include=("precision_at_1", "mean_average_precision_at_r", "r_precision"),
        k="max_bin_count",
        device=torch.device("cpu"),
        knn_func=CustomKNN(LpDistance(normalize_embeddings=True)),
    )
    res = calc.get_accuracy(torch.from_numpy(Z), torch.from_numpy(y))
    return {
        "p@1": res["precision_at_1"],
        "MAP@R": res["mean_average_precision_at_r"],
        "R-prec": res["r_precision"],
    }


def run_recipe(recipe, seed, data_dir=None, train_classes=(0, 1, 2, 3, 4), test_classes=(5, 6, 7, 8, 9)):
    """The seed recipe's full protocol: train on digits 0-4 of the MNIST test set, evaluate on 5-9."""
    import torch

    X, y = load_mnist(data_dir, "test")
    Xtr, ytr = split_by_class(X, y, train_classes)
    Xte, yte = split_by_class(X, y, test_classes)
    torch.manual_seed(seed)
    model = small_cnn_embedder(16)
    t0 = time.perf_counter()
    hist = train(model, Xtr, ytr, recipe, seed=seed)
    t1 = time.perf_counter()
    res = evaluate(embed(model, Xte, recipe), yte)
    res["train_s"] = t1 - t0
    res["final_loss"] = hist[-1]
    return res
