"""Recipe: alternating adversarial metric learning (``python -m docs.recipes.adversarial_metric_learning``).

After Duan et al., "Deep Adversarial Metric Learning" (CVPR 2018). Three networks:
a trunk (input -> features), an embedder (features -> embeddings) and a generator ``G`` that
maps a triplet of trunk features ``[a, p, n]`` to a synthetic negative ``s = G([a, p, n])``.
With ``u(x) = x / ||x||`` and ``e(x) = u(embedder(x))``:

- adversarial objective: the mean, over the triplets where it is positive, of
  ``max(||e(a) - e(s)|| - ||e(a) - e(p)|| - 0.2, 0)`` (0 when no triplet violates): the
  synthetic negative should be at least as close to the anchor as the positive (plus 0.2);
- hardness objective: ``mean((u(s) - u(a))**2)`` over every coordinate: ``s`` near the anchor;
- regularization objective: ``mean((u(s) - u(n))**2)``: ``s`` stays close to the real
  negative, so it keeps looking like a sample of the negative's class.

Generator step: the three objectives with weight 1 each. Trunk features are constants (no
gradient reaches the trunk); the embedder is frozen (its parameters get no update and
their ``grad`` is left exactly as it was), but the gradient still flows *through* the
embedder to ``s`` and on into ``G``. Only the generator's optimizer steps.

Metric step: ``s`` is recomputed and treated as a constant (no gradient to ``G``); the trunk
and embedder are trained with two triplet-margin losses (margin 0.2, weight 1 each): the
authentic triplets ``(a, p, n)`` and the synthetic ones ``(a, p, s)``.

The architecture (linear/ReLU layers) and the equal weights are settings of this smoke
recipe, not the paper's. The layers here have no train/eval behaviour; with stateful layers
choose the modes of each step deliberately, in addition to controlling which gradients flow.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from mantissa_embed import utils
from mantissa_embed.layers import Dense, Sequential
from mantissa_embed.losses import TripletMarginLoss
from mantissa_embed.optim import Adam
from mantissa_embed.samplers import MPerClassSampler

MARGIN = 0.2
N_CLASSES, PER_CLASS, N_INPUT = 6, 8, 10
FEATURES, EMBEDDING = 8, 4
STEPS = 10


def make_data(seed=0):
    """(X (48, 10) float32, y (48,) int64)."""
    rng = np.random.default_rng(seed)
    protos = rng.standard_normal((N_CLASSES, N_INPUT))
    y = np.repeat(np.arange(N_CLASSES), PER_CLASS)
    X = protos[y] + 0.6 * rng.standard_normal((len(y), N_INPUT))
    return X.astype(np.float32), y.astype(np.int64)


def make_models(seed=0):
    """(trunk, embedder, generator), built for the data's shapes."""
    trunk = Sequential([Dense(16, act="relu"), Dense(FEATURES)], seed=seed).build((N_INPUT,))
    embedder = Sequential([Dense(EMBEDDING)], seed=seed + 1).build((FEATURES,))
    generator = Sequential([Dense(16, act="relu"), Dense(FEATURES)], seed=seed + 2).build((3 * FEATURES,))
    return trunk, embedder, generator


@contextmanager
def frozen(model):
    """Parameters of ``model`` keep their ``grad`` unchanged inside the block (a backward
    through the model still returns the input gradient)."""
    saved = [p.grad.copy() for p in model.parameters()]
    try:
        yield model
    finally:
        for p, g in zip(model.parameters(), saved):
            np.copyto(p.grad, g)


def _unit(x):
    x = np.asarray(x, dtype=np.float64)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return x / n, n


def _unit_backward(du, u, n):
    return (du - u * np.sum(du * u, axis=1, keepdims=True)) / n


def _mse_to(s, target):
    """(mean((u(s) - u(target))**2), its gradient wrt s), float64."""
    us, ns = _unit(s)
    ut, _ = _unit(target)
    diff = us - ut
    value = float(np.mean(diff**2))
    return value, _unit_backward(2.0 * diff / diff.size, us, ns)


def generator_objective(embedder, a, p, n, s):
    """Generator-step objectives and ``dJ/ds`` for trunk features ``a, p, n`` and ``s`` (T, F).

    Returns ``(terms, ds)``: ``terms`` = adversarial, hardness, regularization, total
    (floats); ``ds`` (T, F) float32 is the gradient of the total wrt ``s``, the adversarial part
    obtained by backpropagating through the (frozen) embedder.
    """
    T = s.shape[0]
    with frozen(embedder):
        Z = embedder(np.concatenate([a, p, s]))
        r = np.arange(T)
        # [d(a, s) - d(a, p) - 0.2]+ is a triplet-margin loss with anchor a, "positive" s,
        # "negative" p and margin -0.2; its AvgNonZero reduction is the positive-violation mean.
        adv = TripletMarginLoss(margin=-MARGIN)(Z, indices_tuple=(r, 2 * T + r, T + r))
        dZ = embedder.backward(adv.grad)
    ds_adv = dZ[2 * T :].astype(np.float64)
    hard, ds_hard = _mse_to(s, a)
    reg, ds_reg = _mse_to(s, n)
    terms = dict(adversarial=adv.loss, hardness=hard, regularization=reg, total=adv.loss + hard + reg)
    return terms, (ds_adv + ds_hard + ds_reg).astype(np.float32)


def _triplet_features(trunk, generator, X, trip):
    feats = trunk(X)
    a, p, n = (feats[t] for t in trip)
    s = generator(np.concatenate([a, p, n], axis=1))
    return feats, a, p, n, s


def generator_step(trunk, embedder, generator, gen_opt, X, trip):
    """One generator update on the triplets ``trip`` = (a, p, n) indices into ``X``."""
    _, a, p, n, s = _triplet_features(trunk, generator, X, trip)  # trunk features: constants
    gen_opt.zero_grad()
    terms, ds = generator_objective(embedder, a, p, n, s)
    generator.backward(ds, need_dx=False)
    gen_opt.step()
    return terms


def metric_objective(trunk, embedder, generator, X, trip):
    """Metric-step objectives; accumulates their gradients into the trunk and embedder grads.

    Returns ``terms`` = authentic, synthetic, total.
    """
    feats, _, _, _, s = _triplet_features(trunk, generator, X, trip)
    s = s.copy()  # detached: nothing flows back into the generator
    B, T = feats.shape[0], s.shape[0]
    Z = embedder(np.concatenate([feats, s]))
    a, p, n = trip
    authentic = TripletMarginLoss(margin=MARGIN)(Z, indices_tuple=(a, p, n))
    synthetic = TripletMarginLoss(margin=MARGIN)(Z, indices_tuple=(a, p, B + np.arange(T)))
    dZ = embedder.backward(authentic.grad + synthetic.grad)
    trunk.backward(np.ascontiguousarray(dZ[:B]), need_dx=False)
    return dict(authentic=authentic.loss, synthetic=synthetic.loss, total=authentic.loss + synthetic.loss)


def metric_step(trunk, embedder, generator, metric_opt, X, trip):
    metric_opt.zero_grad()
    terms = metric_objective(trunk, embedder, generator, X, trip)
    metric_opt.step()
    return terms


def batch_triplets(sampler, y, rng):
    """(batch indices, (a, p, n) within the batch): one random triplet per anchor."""
    idx = sampler.next_batch()
    trip = utils.get_random_triplet_indices(y[idx], t_per_anchor=1, seed=rng)
    if len(trip[0]) == 0:
        raise RuntimeError("the batch has no valid triplet (needs repeated labels and several classes)")
    return idx, trip


def train(seed=0, steps=STEPS):
    """Alternate ``steps`` generator and metric updates; return the per-step history and models."""
    X, y = make_data(seed)
    trunk, embedder, generator = make_models(seed)
    gen_opt = Adam(generator.parameters(), lr=1e-2)
    metric_opt = Adam(trunk.parameters() + embedder.parameters(), lr=1e-2)
    sampler = MPerClassSampler(y, 4, batch_size=12, seed=seed)
    rng = np.random.default_rng(seed)
    history = []
    for _ in range(steps):
        idx, trip = batch_triplets(sampler, y, rng)
        g = generator_step(trunk, embedder, generator, gen_opt, X[idx], trip)
        m = metric_step(trunk, embedder, generator, metric_opt, X[idx], trip)
        history.append(dict(generator=g, metric=m, num_triplets=len(trip[0])))
    return history, (trunk, embedder, generator)


def main(seed=0, verbose=True):
    history, _ = train(seed)
    if verbose:
        for k, h in enumerate(history):
            g, m = h["generator"], h["metric"]
            print(
                f"step {k + 1:2d}: generator adv {g['adversarial']:.4f} hard {g['hardness']:.4f} "
                f"reg {g['regularization']:.4f} | metric authentic {m['authentic']:.4f} "
                f"synthetic {m['synthetic']:.4f}"
            )
        last = history[-1]
        print(
            "final objectives:",
            {
                k: round(v, 4)
                for k, v in {
                    **last["generator"],
                    **{"authentic": last["metric"]["authentic"], "synthetic": last["metric"]["synthetic"]},
                }.items()
            },
        )
    return dict(history=history)


if __name__ == "__main__":
    main()
