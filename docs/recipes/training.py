"""Recipe: four ways to train an embedding model (``python -m docs.recipes.training``).

- :func:`train_metric`: a pair miner plus a contrastive loss, optionally with a classifier
  head trained by cross-entropy on the same embeddings (classifier-assisted training).
- :func:`train_proxy`: a normalized-softmax loss whose class proxies are learned together
  with the model (or kept fixed by leaving them out of the optimizer).
- :func:`train_two_stream`: two distinct models, one for queries and one for references,
  trained through one loss over query x reference pairs.

The functions take the caller's models and float32 arrays as they are: they never call
``train()`` / ``eval()`` and never convert dtypes (a non-float32 input raises ``TypeError``),
so mode and placement stay the application's decisions. They build the optimizer (Adam)
over exactly the parameters that should learn and return the objective before the first
update and after the last one. Every step uses the whole (small) fixture as one batch, so
the objective is the same function of the parameters at the start and at the end.

The fixtures are tiny synthetic problems: a decreasing objective here shows the pieces are
wired correctly (gradients reach every intended parameter), not that a training setup is good.
"""

from __future__ import annotations

import numpy as np

from mantissa_embed.layers import Dense, Sequential
from mantissa_embed.losses import ContrastiveLoss, CrossEntropyLoss, NormalizedSoftmaxLoss
from mantissa_embed.miners import PairMarginMiner
from mantissa_embed.optim import Adam

POS_MARGIN, NEG_MARGIN = 0.0, 1.4  # the miner: positives farther than 0, negatives closer than 1.4
PROXY_TEMPERATURE = 0.1
CLASSIFIER_WEIGHT = 1.0
N_CLASSES, PER_CLASS, N_FEATURES, EMBEDDING = 4, 10, 8, 4
STEPS, LR = 30, 1e-2


# -- fixtures ------------------------------------------------------------------------------------
def make_data(seed=0, per_class=PER_CLASS):
    """(X (N, 8) float32, y (N,) int64 in 0..3): noisy copies of one prototype per class."""
    rng = np.random.default_rng(seed)
    protos = rng.standard_normal((N_CLASSES, N_FEATURES))
    y = np.repeat(np.arange(N_CLASSES), per_class)
    X = protos[y] + 0.8 * rng.standard_normal((len(y), N_FEATURES))
    return X.astype(np.float32), y.astype(np.int64)


def make_model(seed=0):
    """An unbuilt Dense/ReLU embedding model: 8 -> 16 -> 4."""
    return Sequential([Dense(16, act="relu"), Dense(EMBEDDING)], seed=seed)


# -- input checks ----------------------------------------------------------------------------------
def _check_xy(X, y, xname="X", yname="y"):
    if not isinstance(X, np.ndarray) or X.dtype != np.float32:
        raise TypeError(
            f"{xname} must be a float32 numpy array (the caller owns dtype placement), "
            f"got {getattr(X, 'dtype', type(X).__name__)}"
        )
    y = np.asarray(y)
    if y.dtype.kind not in "iu" or y.ndim != 1:
        raise TypeError(f"{yname} must be a 1-D integer array")
    if len(y) != len(X):
        raise ValueError(f"{yname} must have one label per row of {xname}: {len(y)} vs {len(X)}")
    return X, y


def _build(model, shape):
    if not model.built:
        model.build(shape)
    return model


def _zero(params):
    for p in params:
        p.zero_grad()


# -- metric (+ classifier) ------------------------------------------------------------------------
def metric_objective(model, X, y, miner, loss_func, classifier=None, xent=None):
    """Forward and backward of the metric objective (+ weight-1 cross-entropy); returns terms.

    Accumulates gradients into the model's (and classifier's) parameters.
    """
    E = model(X)
    pairs = miner(E, y)
    out = loss_func(E, y, indices_tuple=pairs)
    terms = dict(contrastive=out.loss, pos_pairs=len(pairs[0]), neg_pairs=len(pairs[2]))
    dE = out.grad
    total = out.loss
    if classifier is not None:
        logits = classifier(E)
        ce = xent(logits, y)
        dE = dE + np.float32(CLASSIFIER_WEIGHT) * classifier.backward(ce.grad)
        terms["cross_entropy"] = ce.loss
        total += CLASSIFIER_WEIGHT * ce.loss
    model.backward(np.ascontiguousarray(dE, dtype=np.float32), need_dx=False)
    terms["total"] = total
    return terms


def train_metric(model, X, y, *, classifier=None, steps=STEPS, lr=LR):
    """Train ``model`` with PairMarginMiner(0, 1.4) + ContrastiveLoss (+ a classifier head).

    Parameters
    ----------
    model : Sequential (or anything with forward/backward/parameters) -> (N, D) embeddings.
    X : (N, ...) float32; y : (N,) int.
    classifier : optional model mapping (N, D) embeddings to (N, C) logits; then ``y`` must be
        the contiguous class indices ``0..C-1`` and the cross-entropy is added with weight 1.

    The contrastive loss keeps PML's defaults (pos_margin 0, neg_margin 1, AvgNonZeroReducer):
    the mean over the active (non-zero) positive-pair terms plus the mean over the active
    negative-pair terms. Returns ``dict(initial, final, history)`` (objective totals).
    """
    X, y = _check_xy(X, y)
    miner = PairMarginMiner(pos_margin=POS_MARGIN, neg_margin=NEG_MARGIN)
    loss_func = ContrastiveLoss()
    xent = None
    params = list(_build(model, X.shape[1:]).parameters())
    if classifier is not None:
        D = model.output_shape()[0]
        _build(classifier, (D,))
        C = classifier.output_shape()[0]
        if len(y) and (y.min() < 0 or y.max() >= C):
            raise ValueError(
                f"with a classifier, y must hold class indices 0..{C - 1}, "
                f"got values in [{y.min()}, {y.max()}]"
            )
        xent = CrossEntropyLoss()
        params += classifier.parameters()
    opt = Adam(params, lr=lr)
    history = []
    for _ in range(steps):
        opt.zero_grad()
        history.append(metric_objective(model, X, y, miner, loss_func, classifier, xent))
        opt.step()
    final = metric_objective(model, X, y, miner, loss_func, classifier, xent)
    _zero(params)  # the evaluation's gradients are not left behind
    return dict(initial=history[0]["total"], final=final["total"], history=history)


# -- proxies ----------------------------------------------------------------------------------------
def train_proxy(model, X, y, *, loss_func=None, optimize_proxies=True, steps=STEPS, lr=LR, seed=0):
    """Train ``model`` with NormalizedSoftmaxLoss(temperature=0.1) and learned class proxies.

    ``y`` must hold the class indices ``0..C-1``. ``loss_func`` (optional) is the
    NormalizedSoftmaxLoss to use (its ``W`` are the proxies); by default one is created with
    ``num_classes = y.max() + 1`` and the model's embedding size. The optimizer owns the model's
    parameters and, when ``optimize_proxies`` is True, ``loss_func.parameters()``; left out,
    the proxies stay fixed (their ``grad`` is cleared at each step, never applied).
    Returns ``dict(initial, final, history, loss_func)``.
    """
    X, y = _check_xy(X, y)
    params = list(_build(model, X.shape[1:]).parameters())
    if loss_func is None:
        loss_func = NormalizedSoftmaxLoss(
            int(y.max()) + 1, model.output_shape()[0], temperature=PROXY_TEMPERATURE, seed=seed
        )
    proxies = loss_func.parameters()
    opt = Adam(params + (proxies if optimize_proxies else []), lr=lr)

    def objective():
        E = model(X)
        out = loss_func(E, y)
        model.backward(out.grad, need_dx=False)
        return out.loss

    history = []
    for _ in range(steps):
        opt.zero_grad()
        _zero(proxies)
        history.append(objective())
        opt.step()
    final = objective()
    _zero(params + proxies)
    return dict(initial=history[0], final=final, history=history, loss_func=loss_func)


# -- two streams ------------------------------------------------------------------------------------
def two_stream_objective(query_model, ref_model, Xq, yq, Xr, yr, loss_func):
    """Loss of query embeddings against reference embeddings; backward into both models.

    The reference labels are passed as a *copy*, so the loss never treats position i of the
    query stream and position i of the reference stream as the same item (PML excludes
    "self" pairs only when ``ref_labels is labels``), even when both streams have the same
    length and labels. With one shared model, both streams go through one forward/backward.
    """
    ref_labels = np.array(yr, copy=True)
    if query_model is ref_model:
        E = query_model(np.concatenate([Xq, Xr]))
        Eq, Er = E[: len(Xq)], E[len(Xq) :]
        out = loss_func(Eq, yq, ref_emb=Er, ref_labels=ref_labels)
        query_model.backward(np.concatenate([out.grad, out.ref_grad]), need_dx=False)
    else:
        Eq, Er = query_model(Xq), ref_model(Xr)
        out = loss_func(Eq, yq, ref_emb=Er, ref_labels=ref_labels)
        query_model.backward(out.grad, need_dx=False)
        ref_model.backward(out.ref_grad, need_dx=False)
    return out.loss


def train_two_stream(query_model, ref_model, Xq, yq, Xr, yr, *, steps=STEPS, lr=LR):
    """Train a query model and a reference model (distinct, or the same object) together.

    ``Xq`` (Nq, ...) / ``Xr`` (Nr, ...) float32 may have different lengths; the labels share
    one class space. ContrastiveLoss over every query x reference pair. A shared model's
    parameters enter the optimizer once. Returns ``dict(initial, final, history)``.
    """
    Xq, yq = _check_xy(Xq, yq, "Xq", "yq")
    Xr, yr = _check_xy(Xr, yr, "Xr", "yr")
    params = list(_build(query_model, Xq.shape[1:]).parameters())
    if ref_model is not query_model:
        params += _build(ref_model, Xr.shape[1:]).parameters()
    opt = Adam(params, lr=lr)
    loss_func = ContrastiveLoss()
    history = []
    for _ in range(steps):
        opt.zero_grad()
        history.append(two_stream_objective(query_model, ref_model, Xq, yq, Xr, yr, loss_func))
        opt.step()
    final = two_stream_objective(query_model, ref_model, Xq, yq, Xr, yr, loss_func)
    _zero(params)
    return dict(initial=history[0], final=final, history=history)


# -- the command ------------------------------------------------------------------------------------
def run(seed=0):
    """The four integrations on fresh models; returns their results."""
    X, y = make_data(seed)
    results = {}
    results["metric"] = train_metric(make_model(seed), X, y)
    results["metric+classifier"] = train_metric(
        make_model(seed), X, y, classifier=Sequential([Dense(N_CLASSES)], seed=seed + 1)
    )
    results["proxy"] = train_proxy(make_model(seed), X, y, seed=seed)
    Xr, yr = make_data(seed + 1, per_class=6)  # a reference stream of another length
    results["two_stream"] = train_two_stream(make_model(seed), make_model(seed + 2), X, y, Xr, yr)
    return results


def main(seed=0, verbose=True):
    results = run(seed)
    if verbose:
        for name, r in results.items():
            print(f"{name:>18}: initial objective {r['initial']:.4f} -> final {r['final']:.4f}")
    return results


if __name__ == "__main__":
    main()
