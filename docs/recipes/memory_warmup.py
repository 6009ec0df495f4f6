"""Recipe: caller-controlled warmup before a cross-batch memory (``python -m docs.recipes.memory_warmup``).

Cross-batch memory (Wang et al., CVPR 2020) compares each batch with embeddings computed at
earlier steps. Early in training the features move fast, so those stored embeddings are stale;
the paper therefore starts using the memory only after a warmup. ``CrossBatchMemory`` has no
epoch counter or hook for that: the training loop decides. This recipe

1. trains for ``WARMUP_STEPS = 2`` steps on the current batch alone (``loss(embeddings, labels)``),
   never touching the queue;
2. then trains for ``MEMORY_STEPS = 4`` steps through ``xbm(embeddings, labels)``, which
   enqueues a copy of each batch and compares the batch against everything stored.

Sizes: batch 12, embedding size 4, memory 32. Four enqueued batches are 48 rows, so the ring
buffer wraps once: at the end it is full and its cursor is ``48 mod 32 = 16``. The numbers
keep the run short; they are not the paper's schedule or memory size.
"""

from __future__ import annotations

import numpy as np

from mantissa_embed.layers import Dense, Sequential
from mantissa_embed.losses import ContrastiveLoss, CrossBatchMemory
from mantissa_embed.optim import Adam
from mantissa_embed.samplers import MPerClassSampler

BATCH_SIZE = 12
EMBEDDING_SIZE = 4
MEMORY_SIZE = 32
WARMUP_STEPS = 2
MEMORY_STEPS = 4
N_CLASSES, PER_CLASS, N_FEATURES = 6, 10, 8


def make_data(seed=0):
    """(X (60, 8) float32, y (60,) int64): noisy copies of one prototype per class."""
    rng = np.random.default_rng(seed)
    protos = rng.standard_normal((N_CLASSES, N_FEATURES))
    y = np.repeat(np.arange(N_CLASSES), PER_CLASS)
    X = protos[y] + 0.5 * rng.standard_normal((len(y), N_FEATURES))
    return X.astype(np.float32), y.astype(np.int64)


def make_model(seed=0):
    return Sequential([Dense(16, act="relu"), Dense(EMBEDDING_SIZE)], seed=seed)


def train(seed=0, warmup_steps=WARMUP_STEPS, memory_steps=MEMORY_STEPS):
    """Run the schedule; return ``(history, xbm, model)``.

    ``history`` has one dict per step: ``step``, ``phase`` ("warmup" or "memory"), ``loss``,
    ``queue_idx`` and ``has_been_filled`` after the step, ``memory_rows`` (rows of the memory
    the step compared against: 0 during warmup) and ``batch_embeddings`` (the batch's
    embeddings at that step, a copy).
    """
    X, y = make_data(seed)
    model = make_model(seed)
    loss_func = ContrastiveLoss()
    xbm = CrossBatchMemory(ContrastiveLoss(), EMBEDDING_SIZE, memory_size=MEMORY_SIZE)
    model.build(X.shape[1:])
    opt = Adam(model.parameters(), lr=1e-2)
    batches = iter(
        MPerClassSampler(y, 4, batch_size=BATCH_SIZE, length_before_new_iter=10 * BATCH_SIZE, seed=seed)
    )
    history = []
    for step in range(warmup_steps + memory_steps):
        idx = next(batches)
        opt.zero_grad()
        emb = model(X[idx])
        if step < warmup_steps:
            out = loss_func(emb, y[idx])  # the batch alone: the queue stays empty
            phase, rows = "warmup", 0
        else:
            out = xbm(emb, y[idx])  # enqueue (a copy of) this batch, compare with the memory
            phase, rows = "memory", xbm.num_stored
        model.backward(out.grad, need_dx=False)
        opt.step()
        history.append(
            dict(
                step=step,
                phase=phase,
                loss=out.loss,
                queue_idx=xbm.queue_idx,
                has_been_filled=xbm.has_been_filled,
                memory_rows=rows,
                batch_embeddings=emb.copy(),
            )
        )
    return history, xbm, model


def main(seed=0, verbose=True):
    history, xbm, _ = train(seed)
    if verbose:
        print(f"batch {BATCH_SIZE}, embedding size {EMBEDDING_SIZE}, memory {MEMORY_SIZE}")
        for h in history:
            print(
                f"step {h['step']} [{h['phase']:>6}] loss {h['loss']:.4f}  compared with "
                f"{h['memory_rows']:2d} memory rows  queue_idx {h['queue_idx']:2d}  "
                f"full {h['has_been_filled']}"
            )
        print(f"final: queue full = {xbm.has_been_filled}, cursor = {xbm.queue_idx}")
    return dict(history=history, queue_idx=xbm.queue_idx, has_been_filled=xbm.has_been_filled)


if __name__ == "__main__":
    main()
