"""Embedder: fit / embed / retrieve / verify semantics, backends, and end to end on digits."""

import numpy as np
import pytest

from mantissa_embed import Embedder, datasets, models
from mantissa_embed.evaluation import retrieval_metrics


def _toy(n=96, seed=0, classes=4, hw=8):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 1, hw, hw), dtype=np.float32)
    y = np.arange(n, dtype=np.int64) % classes
    return X, y


@pytest.fixture(scope="module")
def toy_fitted():
    X, y = _toy()
    return Embedder(models.small_cnn_embedder(5), seed=1, loss="triplet").fit(X, y, epochs=2, batch_size=16)


def _numpy_batch_hard_loss(Z, y, margin):
    """The default objective, computed independently in numpy: for every anchor, its farthest
    positive and nearest negative (batch hard), [d_ap - d_an + margin]+, averaged over the
    non-zero terms (PML's AvgNonZeroReducer); d Euclidean on L2-normalized rows."""
    Z = Z.astype(np.float64)
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    D = np.linalg.norm(Z[:, None] - Z[None], axis=2)
    same = y[:, None] == y[None]
    pos = same & ~np.eye(len(y), dtype=bool)
    hardest_pos = np.where(pos, D, -np.inf).max(axis=1)
    hardest_neg = np.where(~same, D, np.inf).min(axis=1)
    terms = np.maximum(hardest_pos - hardest_neg + margin, 0.0)[pos.any(axis=1) & (~same).any(axis=1)]
    return float(terms[terms > 0].mean()) if (terms > 0).any() else 0.0


# ------------------------------------------------------------------------ embed
def test_embed_shapes_normalization_and_chunking(toy_fitted):
    X, _ = _toy(37, seed=5)
    Z = toy_fitted.embed(X)
    assert Z.dtype == np.float32 and Z.shape == (37, 5) and Z.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(Z, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(toy_fitted.embed(X, batch_size=4), Z, rtol=1e-6, atol=1e-6)
    raw = toy_fitted.embed(X, normalize=False)
    np.testing.assert_allclose(raw, toy_fitted.net.forward(X), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(raw / np.linalg.norm(raw, axis=1, keepdims=True), Z, rtol=1e-5, atol=1e-6)
    assert toy_fitted.embed(X) is not toy_fitted.embed(X)  # fresh arrays
    # float64 and uint8-like inputs are converted chunk by chunk
    np.testing.assert_allclose(toy_fitted.embed(X.astype(np.float64), batch_size=10), Z, atol=1e-6)
    assert toy_fitted.embed(X[:0]).shape == (0, 5)


# --------------------------------------------------------------------- retrieve
def test_retrieve_forms_and_order(toy_fitted):
    X, _ = _toy(40, seed=6)
    G = toy_fitted.embed(X)
    # independent brute force on the embeddings
    D = np.linalg.norm(G[:, None, :].astype(np.float64) - G[None].astype(np.float64), axis=2)
    idx, dist = toy_fitted.retrieve(X[3], X, k=7)
    assert idx.shape == (7,) and dist.shape == (7,) and idx.dtype == np.int64 and dist.dtype == np.float32
    np.testing.assert_array_equal(idx, np.argsort(D[3], kind="stable")[:7])
    np.testing.assert_allclose(dist, np.sort(D[3])[:7], atol=1e-5)
    assert idx[0] == 3 and dist[0] == 0.0 and np.all(np.diff(dist) >= 0)
    # image or embedding query, image or embedding gallery: the same answer
    for q, g in ((G[3], G), (X[3], G), (G[3], X)):
        i2, d2 = toy_fitted.retrieve(q, g, k=7)
        np.testing.assert_array_equal(i2, idx)
        np.testing.assert_allclose(d2, dist, atol=1e-5)
    # batches give 2-D outputs
    ib, db = toy_fitted.retrieve(X[[3, 8]], G, k=40)
    assert ib.shape == (2, 40) and db.shape == (2, 40)
    np.testing.assert_array_equal(ib[1], np.argsort(D[8], kind="stable"))
    ie, _ = toy_fitted.retrieve(G[[3, 8]], X, k=5)
    np.testing.assert_array_equal(ie, ib[:, :5])


def test_retrieve_normalizes_raw_embeddings(toy_fitted):
    X, _ = _toy(20, seed=7)
    raw = toy_fitted.embed(X, normalize=False)
    before = raw.copy()
    i1, d1 = toy_fitted.retrieve(raw[0] * 3.0, raw, k=5)
    i2, d2 = toy_fitted.retrieve(X[0], X, k=5)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_allclose(d1, d2, atol=1e-5)
    np.testing.assert_array_equal(raw, before)  # caller's arrays are not modified


# ----------------------------------------------------------------------- verify
def test_verify(toy_fitted):
    X, _ = _toy(10, seed=8)
    Z = toy_fitted.embed(X)
    ref = float(np.linalg.norm(Z[0].astype(np.float64) - Z[1]))
    d = toy_fitted.verify(X[0], X[1])
    assert isinstance(d, float) and d == pytest.approx(ref, abs=1e-5)
    assert toy_fitted.verify(Z[0], X[1]) == pytest.approx(ref, abs=1e-5)
    assert toy_fitted.verify(X[0], X[0]) == pytest.approx(0.0, abs=1e-6)
    same = toy_fitted.verify(X[0], X[1], threshold=ref + 1e-3)
    assert same is True and toy_fitted.verify(X[0], X[1], threshold=ref - 1e-3) is False
    # batches: pairwise; single vs batch: broadcast
    pair = toy_fitted.verify(X[:4], X[4:8])
    np.testing.assert_allclose(pair, np.linalg.norm(Z[:4] - Z[4:8], axis=1), atol=1e-5)
    bc = toy_fitted.verify(X[0], Z[:4])
    assert bc.shape == (4,) and bc[0] == pytest.approx(0.0, abs=1e-6)
    flags = toy_fitted.verify(X[:4], X[4:8], threshold=float(np.median(pair)))
    assert flags.dtype == bool and flags.shape == (4,)
    np.testing.assert_array_equal(flags, pair <= float(np.median(pair)))


# ------------------------------------------------------------------ the fit loop
def test_parameters_and_summary(toy_fitted):
    assert [id(p) for p in toy_fitted.parameters()] == [id(p) for p in toy_fitted.net.parameters()]
    s = toy_fitted.summary()
    assert "Total params" in s and "TripletMarginLoss" in s and "Miner: None" in s and "Optimizer: AdamW" in s
    emb = Embedder(models.small_cnn_embedder(16))
    assert "not built" in emb.summary()
    emb.net.build((1, 28, 28))
    assert "Total params: 52,528" in emb.summary()


def test_history_callback_and_batches_are_class_balanced():
    X, y = _toy(100, classes=5)
    seen = []

    class SpyMiner:
        def __call__(self, embeddings, labels):
            seen.append(np.asarray(labels).copy())
            return None

    calls = []
    emb = Embedder(models.small_cnn_embedder(4), miner=SpyMiner())
    emb.fit(X, y, epochs=3, batch_size=20, callback=lambda e, loss: calls.append((e, loss)))
    assert len(emb.history_["loss"]) == 3 and [c[0] for c in calls] == [0, 1, 2]
    assert [c[1] for c in calls] == emb.history_["loss"]
    assert len(seen) == 3 * 5  # ceil(100 / 20) batches per epoch
    for labels in seen:
        # auto m: smallest divisor m >= 2 of 20 with 5 * m >= 20 -> m = 4, five classes of 4
        _, counts = np.unique(labels, return_counts=True)
        assert labels.shape == (20,) and (counts == 4).all()
    assert emb.sampler_.m_per_class == 4


@pytest.mark.parametrize(
    "batch_size, n_classes, m", [(64, 5, 16), (64, 40, 2), (30, 3, 10), (6, 5, 2), (12, 2, 6)]
)
def test_auto_m_per_class(batch_size, n_classes, m):
    assert Embedder(models.small_cnn_embedder(2))._choose_m(batch_size, n_classes) == m


def test_seeded_reproducible():
    X, y = _toy()
    Za = Embedder(models.small_cnn_embedder(4, seed=2), seed=2).fit(X, y, batch_size=16).embed(X)
    Zb = Embedder(models.small_cnn_embedder(4, seed=2), seed=2).fit(X, y, batch_size=16).embed(X)
    Zc = Embedder(models.small_cnn_embedder(4, seed=2), seed=3).fit(X, y, batch_size=16).embed(X)
    np.testing.assert_array_equal(Za, Zb)
    assert not np.array_equal(Za, Zc)  # other batches


def test_list_of_layers_is_wrapped():
    from mantissa_embed.layers import Dense, Flatten

    X, y = _toy(40)
    emb = Embedder([Flatten(), Dense(8, act="relu"), Dense(3)], seed=4, backend="numpy")
    emb.fit(X, y, batch_size=8)
    assert emb.net.backend == "numpy" and emb.embed(X).shape == (40, 3)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(loss="contrastive"),
        dict(loss="contrastive", miner="pair_margin", margin=0.7),
        dict(miner=None),
        dict(miner="hard"),
        dict(miner="batch_hard"),
        dict(optimizer="adam"),
        dict(m_per_class=8),
    ],
)
def test_recipes_run_and_change_weights(kwargs):
    X, y = _toy(64)
    emb = Embedder(models.small_cnn_embedder(4), **kwargs)
    emb.net.build(X.shape[1:])
    before = [p.data.copy() for p in emb.parameters()]
    emb.fit(X, y, batch_size=16, lr=0.01 if kwargs.get("optimizer") == "adam" else 0.05)
    assert np.isfinite(emb.history_["loss"]).all()
    assert any(not np.array_equal(b, p.data) for b, p in zip(before, emb.parameters()))


def test_loss_object_and_optimizer_factory():
    from mantissa_embed import losses, miners, optim

    X, y = _toy(64)
    made = []

    def factory(params, lr):
        made.append(lr)
        return optim.SGD(params, lr=lr, momentum=0.5)

    loss = losses.TripletMarginLoss(margin=0.3)
    miner = miners.TripletMarginMiner(margin=0.3, type_of_triplets="semihard")
    emb = Embedder(models.small_cnn_embedder(4), loss=loss, miner=miner, optimizer=factory)
    emb.fit(X, y, batch_size=16, lr=0.02)
    assert made == [0.02] and emb.loss_func is loss and emb.miner_func is miner
    assert emb.optimizer_.momentum == 0.5


def test_default_recipe_objects():
    from mantissa_embed import losses, miners, optim
    from mantissa_embed.embedder import DEFAULTS

    emb = Embedder(models.small_cnn_embedder(4))
    assert emb._loss_spec == DEFAULTS["loss"] == "proxy_anchor" and emb.loss_func is None  # built at fit
    assert emb.miner_func is None and emb.optimizer == "default" and DEFAULTS["optimizer"] == "adamw"
    assert emb.weight_decay is None and emb.loss_lr_factor == 100.0
    emb.fit(*_toy(), epochs=1, batch_size=16)
    assert isinstance(emb.loss_func, losses.ProxyAnchorLoss)
    assert (emb.loss_func.num_classes, emb.loss_func.embedding_size) == (4, 4) and emb.loss_func.margin == 0.1
    assert isinstance(emb.optimizer_, optim.AdamW) and emb.optimizer_.param_groups[0]["weight_decay"] == 1e-4
    assert [g["lr"] for g in emb.optimizer_.param_groups] == pytest.approx([0.0, 0.0])  # cosine: 0 at the end
    t = Embedder(models.small_cnn_embedder(4), loss="triplet")
    assert isinstance(t.loss_func, losses.TripletMarginLoss)
    assert t.loss_func.margin == DEFAULTS["triplet_margin"] == t.margin
    assert DEFAULTS["triplet_miner"] is None and t.miner_func is None  # every triplet, as PML without a miner
    assert t.momentum == DEFAULTS["momentum"] == 0.0
    ms = Embedder(models.small_cnn_embedder(4), loss="multi_similarity")
    assert isinstance(ms.loss_func, losses.MultiSimilarityLoss) and isinstance(
        ms.miner_func, miners.MultiSimilarityMiner
    )
    semi = Embedder(models.small_cnn_embedder(4), margin=0.2, miner="semihard")
    assert isinstance(semi.miner_func, miners.TripletMarginMiner)
    assert semi.miner_func.type_of_triplets == "semihard" and semi.miner_func.margin == 0.2
    c = Embedder(models.small_cnn_embedder(4), loss="contrastive", margin=0.6)
    assert isinstance(c.loss_func, losses.ContrastiveLoss)
    assert c.loss_func.neg_margin == 0.6 and c.loss_func.pos_margin == 0.0
    assert Embedder(models.small_cnn_embedder(4), loss="contrastive").loss_func.neg_margin == 1.0


@pytest.mark.parametrize(
    "optimizer, lr, want, wd",
    [
        ("default", None, "AdamW", 1e-4),  # the default recipe: AdamW at 1e-3
        ("default", 1e-3, "AdamW", 1e-4),  # README: fit(lr=1e-3) is AdamW's
        ("default", 0.0099, "AdamW", 1e-4),
        ("default", 0.01, "SGD", 0.0),  # an SGD step size (the seed's lr=0.05) runs SGD
        ("default", np.float32(0.01), "SGD", 0.0),  # 0.01 rounded to float32 is still the threshold
        ("default", 0.05, "SGD", 0.0),
        ("adamw", 0.05, "AdamW", 1e-4),  # a named optimizer is used as given
        ("sgd", 1e-3, "SGD", 0.0),
    ],
)
def test_default_optimizer_follows_lr(optimizer, lr, want, wd):
    from mantissa_embed import optim
    from mantissa_embed.embedder import DEFAULTS

    emb = Embedder(models.small_cnn_embedder(4), loss="triplet", optimizer=optimizer)
    emb.fit(*_toy(), epochs=1, batch_size=16, lr=lr, schedule=None)
    opt = emb.optimizer_
    assert type(opt) is getattr(optim, want)
    g = opt.param_groups[0]
    assert g["lr"] == (lr if lr is not None else DEFAULTS["lr"][want.lower()]) and g["weight_decay"] == wd
    assert emb.train_state_["optimizer"] == want.lower() and f"Optimizer: {want}(" in emb.summary()


def test_resume_runs_the_optimizer_the_lr_chose(tmp_path):
    """A fit whose lr chose SGD, saved mid-way, resumes with SGD and its state (not AdamW's)."""
    from mantissa_embed import optim

    X, y = _toy()
    full = Embedder(models.small_cnn_embedder(4), loss="triplet", seed=3).fit(
        X, y, epochs=2, batch_size=16, lr=0.05
    )
    part = Embedder(models.small_cnn_embedder(4), loss="triplet", seed=3)
    part.fit(X, y, epochs=2, batch_size=16, lr=0.05, callbacks=[_StopAfterFirstEpoch()])
    part.save(tmp_path / "ckpt.npz")
    resumed = Embedder.load(tmp_path / "ckpt.npz")
    assert isinstance(resumed.optimizer_, optim.SGD)
    resumed.fit(X, y, epochs=2, batch_size=16, lr=0.05, resume=True)
    for a, b in zip(full.net.parameters(), resumed.net.parameters()):
        np.testing.assert_array_equal(a.data, b.data)


@pytest.mark.parametrize("loss", ["triplet", "default"])
def test_custom_optimizer_saves_and_loads(tmp_path, loss):
    """An optimizer callable cannot be saved: the file loads (with a warning), embeds as the
    fitted model did, trains on with the default optimizer, and refuses resume=True."""
    from mantissa_embed import optim

    X, y = _toy()
    emb = Embedder(
        models.small_cnn_embedder(4), loss=loss, optimizer=lambda p, lr: optim.SGD(p, lr=lr, momentum=0.9)
    )
    emb.fit(X, y, epochs=2, batch_size=16, lr=0.05, callbacks=[_StopAfterFirstEpoch()])
    emb.save(tmp_path / "custom.npz")
    with pytest.warns(UserWarning, match="optimizer callable"):
        loaded = Embedder.load(tmp_path / "custom.npz")
    np.testing.assert_array_equal(loaded.embed(X), emb.embed(X))
    assert loaded.optimizer == "default" and loaded.optimizer_ is None
    with pytest.raises(ValueError, match="resume=True needs a checkpoint"):
        loaded.fit(X, y, epochs=2, batch_size=16, resume=True)
    loaded.fit(X, y, epochs=1, batch_size=16)


class _StopAfterFirstEpoch:
    def on_epoch_end(self, embedder, epoch, history):
        return epoch == 0


def test_numpy_backend_matches_mantissa():
    """The two backends train the same network. With SGD: Adam's first steps are lr * sign(g),
    so a gradient entry that is exactly zero in one summation order and a rounding-level 1e-7 in
    another (the Winograd weight gradient's, for taps over all-zero inputs) moves by lr in one
    backend only."""
    X, y = _toy(48, seed=3)
    Zs = {}
    for backend in ("mantissa", "numpy"):
        emb = Embedder(models.small_cnn_embedder(6, seed=5), seed=5, backend=backend, optimizer="sgd")
        emb.fit(X, y, epochs=1, batch_size=16)
        Zs[backend] = (emb.embed(X), emb.history_["loss"][0])
    np.testing.assert_allclose(Zs["numpy"][0], Zs["mantissa"][0], atol=1e-4)
    assert Zs["numpy"][1] == pytest.approx(Zs["mantissa"][1], abs=1e-4)


def test_verbose_progress_bar(capsys):
    X, y = _toy(32)
    Embedder(models.small_cnn_embedder(3)).fit(X, y, epochs=1, batch_size=16, verbose=True)
    err = capsys.readouterr().err
    assert "epoch 1/1" in err and "loss=" in err


# ------------------------------------------------------------- end to end, digits
@pytest.fixture(scope="module")
def digits28():
    X, y = datasets.load("digits")
    X = datasets.pad_or_resize(datasets.pad_or_resize(X, 24), 28, mode="pad")
    return X, y


def test_end_to_end_digits(digits28):
    """Train on half of the digits 0-4; the loss (all triplets, fixed held-out sample) falls;
    retrieval among held-out images of the trained classes beats raw pixels; retrieval on the
    unseen classes 5-9 is far above chance."""
    X, y = digits28
    Xs, ys, Xu, yu = datasets.split_by_class(X, y, [0, 1, 2, 3, 4])
    perm = np.random.default_rng(0).permutation(len(ys))
    tr, ho = perm[:450], perm[450:]
    emb = Embedder(models.small_cnn_embedder(16), loss="triplet", miner="batch_hard", optimizer="sgd")
    emb.net.build(X.shape[1:])
    probe = ho[:120]
    loss_before = _numpy_batch_hard_loss(emb.net.forward(Xs[probe]), ys[probe], emb.margin)
    emb.fit(Xs[tr], ys[tr], epochs=8, batch_size=64, lr=0.05, augment=None, schedule=None)
    loss_after = _numpy_batch_hard_loss(emb.embed(Xs[probe]), ys[probe], emb.margin)
    assert loss_after < 0.75 * loss_before, (loss_before, loss_after)

    seen = retrieval_metrics(emb.embed(Xs[ho]), ys[ho])
    raw = retrieval_metrics(Xs[ho].reshape(len(ho), -1), ys[ho])
    assert seen["mean_average_precision_at_r"] > raw["mean_average_precision_at_r"] + 0.05, (seen, raw)
    assert seen["r_precision"] > raw["r_precision"], (seen, raw)

    unseen = retrieval_metrics(emb.embed(Xu), yu)
    assert unseen["precision_at_1"] > 0.5 and unseen["mean_average_precision_at_r"] > 0.2 + 0.05, unseen
