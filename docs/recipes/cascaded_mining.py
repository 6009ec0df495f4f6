"""Recipe: cascaded hard-pair mining over embedding slices (``python -m docs.recipes.cascaded_mining``).

After Yuan et al., "Hard-Aware Deeply Cascaded Embedding" (ICCV 2017): the embedding (N, D)
is split into slices whose sizes sum to D, and each slice has its own ``HDCMiner`` and loss.
Stage 1 starts from every pair of the batch; stage k receives stage k-1's pairs as its
candidates (``indices_tuple=``) and keeps the hardest fraction of them, so a pair rejected
at one stage never comes back. The total loss is the sum of the stages' contrastive losses,
and the gradient of each stage lands on its own slice.

The fixture is 12 embeddings of 4 classes (3 each), so the batch has 4 * 3 * 2 = 24 ordered
positive pairs; fractions (1, 0.5, 0.5) keep 24, then 12, then 6 of them. This applies the
paper's progressive filtering to arbitrary slices; it does not reproduce its architecture.
"""

from __future__ import annotations

import numpy as np

from mantissa_embed.losses import ContrastiveLoss
from mantissa_embed.miners import HDCMiner

SLICE_SIZES = (4, 4, 8)
FRACTIONS = (1.0, 0.5, 0.5)
N_CLASSES, PER_CLASS = 4, 3


def make_embeddings(seed=0):
    """(E (12, 16) float32, y (12,) int64)."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(N_CLASSES), PER_CLASS)
    E = rng.standard_normal((N_CLASSES, sum(SLICE_SIZES)))[y] + 0.7 * rng.standard_normal(
        (len(y), sum(SLICE_SIZES))
    )
    return E.astype(np.float32), y.astype(np.int64)


def cascaded_loss(embeddings, labels, sizes, miners, loss_funcs):
    """Sum of the stages' losses over consecutive slices of ``embeddings``.

    Parameters
    ----------
    embeddings : (N, D) float32
    labels : (N,) int
    sizes : sequence of int, summing to D
    miners : one HDCMiner-like miner per slice (called with ``indices_tuple=`` the previous pairs)
    loss_funcs : one pair loss per slice

    Returns ``(loss, grad (N, D) float32, stages)`` where ``stages`` lists, per stage, the mined
    pairs ``(a1, p, a2, n)`` and the stage's loss.

    Raises ValueError when the sizes do not sum to D or the numbers of slices, miners and
    losses differ.
    """
    E = np.asarray(embeddings, dtype=np.float32)
    sizes = [int(s) for s in sizes]
    if sum(sizes) != E.shape[1] or any(s < 1 for s in sizes):
        raise ValueError(
            f"slice sizes {sizes} must be positive and sum to the embedding dimension {E.shape[1]}"
        )
    if not (len(sizes) == len(miners) == len(loss_funcs)):
        raise ValueError(
            f"need one miner and one loss per slice: {len(sizes)} slices, "
            f"{len(miners)} miners, {len(loss_funcs)} losses"
        )
    bounds = np.cumsum([0] + sizes)
    grad = np.zeros_like(E)
    total, stages, pairs = 0.0, [], None
    for (lo, hi), miner, loss_func in zip(zip(bounds[:-1], bounds[1:]), miners, loss_funcs, strict=True):
        part = np.ascontiguousarray(E[:, lo:hi])
        pairs = miner(part, labels, indices_tuple=pairs)  # candidates: the previous stage's pairs
        out = loss_func(part, labels, indices_tuple=pairs)
        grad[:, lo:hi] = out.grad
        total += out.loss
        stages.append(dict(pairs=pairs, loss=out.loss))
    return total, grad, stages


def main(seed=0, verbose=True):
    E, y = make_embeddings(seed)
    miners = [HDCMiner(filter_percentage=f) for f in FRACTIONS]
    losses = [ContrastiveLoss() for _ in SLICE_SIZES]
    loss, grad, stages = cascaded_loss(E, y, SLICE_SIZES, miners, losses)
    counts = [len(s["pairs"][0]) for s in stages]
    if verbose:
        print(f"slices {SLICE_SIZES}, fractions {FRACTIONS}")
        for k, s in enumerate(stages):
            print(
                f"stage {k + 1}: {len(s['pairs'][0])} positive pairs, {len(s['pairs'][2])} negative pairs, "
                f"loss {s['loss']:.4f}"
            )
        print(f"total loss {loss:.4f} (finite: {np.isfinite(loss)}); positive-pair counts {counts}")
    return dict(loss=loss, grad=grad, stages=stages, positive_counts=counts)


if __name__ == "__main__":
    main()
