"""Embedder fine-tuning: ``lr_groups`` multipliers by parameter-name prefix, frozen
parameters left out of the optimizer and unchanged by ``fit``, frozen BatchNorm statistics
unchanged by ``fit``, ``lr_groups`` saved with the model."""

import numpy as np
import pytest

from mantissa_embed import Embedder
from mantissa_embed.embedder._param_groups import param_groups
from mantissa_embed.layers import BatchNorm1D, Dense, Sequential


def _net():
    return Sequential(
        {
            "body": Dense(16, act="relu"),
            "bn": BatchNorm1D(),
            "head.0": Dense(8, act="relu"),
            "head.1": Dense(4),
        },
        seed=0,
    ).build((10,))


def _data():
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(4), 10)
    X = (rng.normal(size=(40, 10)) + y[:, None]).astype(np.float32)
    return X, y


def test_lr_groups_give_the_head_its_multiplier():
    X, y = _data()
    net = _net()
    emb = Embedder(net, lr_groups={"head": 10.0, "head.1.bias": 0.5}, optimizer="adamw")
    emb.fit(X, y, epochs=1, batch_size=20, lr=1e-3, schedule=None)
    groups = emb.optimizer_.param_groups
    assert [g["lr"] for g in groups] == pytest.approx([1e-3, 1e-2, 5e-4, 1e-3 * emb.loss_lr_factor])
    ids = [[id(p) for p in g["params"]] for g in groups]
    named = dict(net.named_parameters())
    assert ids[0] == [id(named[n]) for n in ("body.weight", "body.bias", "bn.weight", "bn.bias")]
    assert ids[1] == [id(named[n]) for n in ("head.0.weight", "head.0.bias", "head.1.weight")]
    assert ids[2] == [id(named["head.1.bias"])]  # the longest prefix wins
    assert ids[3] == [id(p) for p in emb.loss_func.parameters()]


def test_frozen_parameters_left_out_and_unchanged_by_fit():
    X, y = _data()
    net = _net()
    net.freeze("body", "bn").freeze_batchnorm()
    before = net.state_arrays()
    emb = Embedder(net, lr_groups={"head": 10.0}, optimizer="sgd", momentum=0.9, weight_decay=0.1)
    emb.fit(X, y, epochs=2, batch_size=20, lr=0.05)
    in_opt = {id(p) for g in emb.optimizer_.param_groups for p in g["params"]}
    after = net.state_arrays()
    for n, p in net.named_parameters():
        if n.startswith(("body", "bn")):
            assert id(p) not in in_opt and not p.grad.any(), n
            np.testing.assert_array_equal(after[n], before[n], err_msg=n)
        else:
            assert id(p) in in_opt and not np.array_equal(after[n], before[n]), n
    for n in ("bn.running_mean", "bn.running_var"):  # frozen statistics: not updated by training
        np.testing.assert_array_equal(after[n], before[n])
    assert len(emb.optimizer_.param_groups) == 2  # the head's and the loss's
    assert emb.train_state_["base_lrs"] == pytest.approx([0.5, 0.05 * emb.loss_lr_factor])


def test_param_groups_without_lr_groups_unchanged():
    X, y = _data()
    emb = Embedder(_net())
    emb.fit(X, y, epochs=1, batch_size=20, lr=1e-3, schedule=None)
    groups = param_groups(emb, 1e-3)
    assert len(groups) == 2 and groups[0]["params"] == emb.net.parameters()


def test_lr_groups_errors_and_persistence(tmp_path):
    with pytest.raises(TypeError, match="lr_groups must be a dict"):
        Embedder(_net(), lr_groups=[("head", 2.0)])
    with pytest.raises(TypeError, match="non-empty str"):
        Embedder(_net(), lr_groups={"": 2.0})
    with pytest.raises(ValueError, match="lr_groups"):
        Embedder(_net(), lr_groups={"head": -1.0})
    X, y = _data()
    with pytest.raises(ValueError, match="prefix 'heads' matches no parameter"):
        Embedder(_net(), lr_groups={"heads": 2.0}).fit(X, y, epochs=1, batch_size=20)
    emb = Embedder(_net(), lr_groups={"head": 3.0}).fit(X, y, epochs=1, batch_size=20)
    again = Embedder.load(emb.save(tmp_path / "m.npz"))
    assert again.lr_groups == {"head": 3.0}


def test_a_fine_tuning_run_saves_loads_and_resumes(tmp_path):
    """Frozen parameters and frozen BatchNorm statistics are part of what an Embedder file
    records: the optimizer state holds the trainable parameters only, so a load that forgot them
    refused the file. The loaded run resumes bitwise as the uninterrupted one."""
    from mantissa_embed import models

    def make():
        net = models.cnn_embedder(embed_dim=8, widths=(4, 8), seed=2).build((1, 12, 12))
        net.freeze("0")
        net.freeze_batchnorm()
        return Embedder(net, seed=5)

    rng = np.random.default_rng(0)
    X, y = rng.random((64, 1, 12, 12), dtype=np.float32), np.arange(64) % 4
    full = make().fit(X, y, epochs=2, batch_size=16)

    class Stop:
        def on_epoch_end(self, embedder, epoch, history):
            return True

    part = make().fit(X, y, epochs=2, batch_size=16, callbacks=[Stop()])
    part.save(tmp_path / "ft.npz")
    loaded = Embedder.load(tmp_path / "ft.npz")
    frozen = [n for n, p in loaded.net.named_parameters() if not p.requires_grad]
    assert frozen == [n for n, p in part.net.named_parameters() if not p.requires_grad] == ["0.weight"]
    assert [n for n, x in loaded.net.named_layers() if getattr(x, "frozen_stats", False)] == ["1", "4"]
    loaded.fit(X, y, epochs=2, batch_size=16, resume=True)
    for a, b in zip(full.net.parameters(), loaded.net.parameters()):
        np.testing.assert_array_equal(a.data, b.data)
    for (_, a), (_, b) in zip(full.net.named_buffers(), loaded.net.named_buffers()):
        np.testing.assert_array_equal(a, b)
