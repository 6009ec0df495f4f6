"""Embedder.fit against PyTorch + pytorch-metric-learning: same initial weights, same batches,
same loss / miner / SGD -> the same losses and weights after several steps."""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pml_losses = pytest.importorskip("pytorch_metric_learning.losses")
pml_miners = pytest.importorskip("pytorch_metric_learning.miners")

from mantissa_embed import Embedder, models  # noqa: E402
from mantissa_embed.samplers import MPerClassSampler  # noqa: E402

# our Sequential index -> the torch Sequential index of the same layer
_LAYER_MAP = {"0": "0", "2": "3", "5": "7", "6": "9"}


def _torch_small_cnn(embed_dim):
    nn = torch.nn
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


def _digit_like_images(n, seed):
    """Smooth random blobs per class, so that the loss has structure to learn (no dataset needed)."""
    rng = np.random.default_rng(seed)
    y = np.arange(n, dtype=np.int64) % 5
    protos = rng.random((5, 1, 7, 7)).repeat(4, axis=2).repeat(4, axis=3)
    X = protos[y] + 0.3 * rng.random((n, 1, 28, 28))
    return np.ascontiguousarray(X / X.max(), dtype=np.float32), y


@pytest.mark.parametrize(
    "loss, miner, n, atol",
    [
        ("triplet", None, 320, 2e-5),
        ("triplet", "semihard", 192, 2e-5),
        ("triplet", "batch_hard", 320, 2e-5),
        ("contrastive", None, 320, 5e-5),  # AVX2 kernels: biases of |b| ~ 0.2 differ by 3.9e-5 on Zen 3
    ],
)
def test_fit_matches_pml(loss, miner, n, atol):
    torch.manual_seed(0)
    tm = _torch_small_cnn(8)
    margin = 0.1 if loss == "triplet" else 0.8
    emb = Embedder(
        models.small_cnn_embedder(8),
        loss=loss,
        margin=margin,
        miner=miner,
        momentum=0.5,
        seed=0,
        optimizer="sgd",
    )
    emb.net.build((1, 28, 28))
    sd = {k: v.detach().numpy().copy() for k, v in tm.state_dict().items()}
    emb.net.load_state_arrays(
        {f"{i}.{w}": sd[f"{j}.{w}"] for i, j in _LAYER_MAP.items() for w in ("weight", "bias")}
    )

    X, y = _digit_like_images(n, seed=1)
    emb.fit(X, y, epochs=1, batch_size=64, lr=0.05, augment=None, schedule=None)

    # PyTorch: the same class-balanced batches (same sampler, same seed), PML loss and miner
    sampler = MPerClassSampler(y, 16, 64, length_before_new_iter=math.ceil(n / 64) * 64, seed=0)
    if loss == "triplet":
        loss_fn = pml_losses.TripletMarginLoss(margin=margin)
    else:
        loss_fn = pml_losses.ContrastiveLoss(pos_margin=0.0, neg_margin=margin)
    if miner == "batch_hard":
        miner_fn = pml_miners.BatchHardMiner()
    else:
        miner_fn = (
            None if miner is None else pml_miners.TripletMarginMiner(margin=margin, type_of_triplets=miner)
        )
    opt = torch.optim.SGD(tm.parameters(), lr=0.05, momentum=0.5)
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    losses = []
    for idx in sampler:
        it = torch.from_numpy(idx)
        e = tm(Xt[it])
        tup = None if miner_fn is None else miner_fn(e, yt[it])
        out = loss_fn(e, yt[it], tup)
        opt.zero_grad()
        out.backward()
        opt.step()
        losses.append(out.item())
    assert emb.sampler_.m_per_class == 16
    assert emb.history_["loss"][0] == pytest.approx(np.mean(losses), abs=1e-5)
    sd = tm.state_dict()
    ours = dict(emb.net.named_parameters())
    for i, j in _LAYER_MAP.items():
        for w in ("weight", "bias"):
            np.testing.assert_allclose(
                ours[f"{i}.{w}"].data, sd[f"{j}.{w}"].numpy(), atol=atol, err_msg=f"{i}.{w}"
            )
