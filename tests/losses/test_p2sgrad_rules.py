"""P2SGradLoss: every rule of its spec page (the P2SGradLoss seed page) and of the bad-input standard."""

import numpy as np
import pytest

from mantissa_embed import losses, optim
from mantissa_embed.losses import P2SGradLoss
from mantissa_embed.parameter import Parameter
from mantissa_embed.regularizers import LpRegularizer


def _batch(seed=0, n=9, d=6, c=4):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)).astype(np.float32), rng.integers(0, c, n)


def _mse64(x, w, y):
    """Independent float64 value of the seed's equation."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    cos = (x / np.linalg.norm(x, axis=1, keepdims=True)) @ (w / np.linalg.norm(w, axis=1, keepdims=True)).T
    t = np.zeros_like(cos)
    t[np.arange(len(y)), y] = 1.0
    return np.mean((cos - t) ** 2)


def test_signature_and_defaults():
    f = P2SGradLoss(num_classes=10, embedding_size=128)
    assert f.weight.shape == (10, 128)
    assert f.weight.data.dtype == np.float32
    assert f.embedding_reg_weight == 1.0 and f.embedding_regularizer is None
    assert f.parameters() == [f.weight]
    assert "P2SGradLoss" in losses.__all__
    with pytest.raises(TypeError):
        P2SGradLoss(10, 128, None)  # regularizer options are keyword-only


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
def test_value_is_the_seed_equation(backend):
    x, y = _batch()
    f = P2SGradLoss(4, 6, seed=3, backend=backend)
    w0 = f.weight.data.copy()
    out = f(x, y)
    assert out.terms.keys() == {"loss"}
    assert out.loss == pytest.approx(_mse64(x, w0, y), rel=1e-5)
    assert out.grad.shape == x.shape and out.grad.dtype == np.float32
    assert out.ref_grad is None


def test_init_uniform_then_row_normalized():
    f = P2SGradLoss(50, 7, seed=np.random.default_rng(11))
    np.testing.assert_allclose(np.linalg.norm(f.weight.data, axis=1), 1.0, rtol=1e-6)
    # the same seed reproduces: uniform [-1, 1] draws, each row divided by its norm
    raw = np.random.default_rng(11).uniform(-1, 1, (50, 7))
    np.testing.assert_allclose(f.weight.data, raw / np.linalg.norm(raw, axis=1, keepdims=True), rtol=1e-6)
    # directions of uniform [-1,1] cubes: entries of both signs, not a normal draw rescaled
    assert (f.weight.data > 0).any() and (f.weight.data < 0).any()
    g = P2SGradLoss(50, 7, seed=11)
    np.testing.assert_array_equal(f.weight.data, g.weight.data)


def test_renormalized_in_place_at_every_forward():
    x, y = _batch()
    f = P2SGradLoss(4, 6, seed=0)
    buf = f.weight.data
    f.weight.data *= np.array([[2.0], [0.5], [3.0], [1.0]], dtype=np.float32)
    scaled = buf.copy()
    out = f(x, y)
    assert f.weight.data is buf  # same buffer: renormalized in place
    np.testing.assert_allclose(np.linalg.norm(buf, axis=1), 1.0, rtol=1e-6)
    # the loss used the renormalized rows
    assert out.loss == pytest.approx(_mse64(x, scaled, y), rel=1e-5)
    # the renormalization is outside the gradient: weight.grad is d L / d w at the unit rows
    _, _, dw = f.compute64(x, y, buf.astype(np.float64))
    np.testing.assert_allclose(f.weight.grad, dw, rtol=1e-4, atol=1e-7)
    # and it happens again at the next forward
    f.weight.data *= 5.0
    f(x, y)
    np.testing.assert_allclose(np.linalg.norm(buf, axis=1), 1.0, rtol=1e-6)


def test_indices_tuple_and_ref_emb_raise_value_error():
    x, y = _batch()
    f = P2SGradLoss(4, 6, seed=0)
    it = (np.array([0]), np.array([1]), np.array([2]))
    with pytest.raises(ValueError, match="indices_tuple"):
        f(x, y, indices_tuple=it)
    with pytest.raises(ValueError, match="ref_emb"):
        f(x, y, ref_emb=x)
    with pytest.raises(ValueError, match="ref_labels"):
        f(x, y, ref_labels=y)


def test_distance_and_reducer_raise_type_error():
    from mantissa_embed.distances import CosineSimilarity
    from mantissa_embed.reducers import MeanReducer

    with pytest.raises(TypeError, match="distance"):
        P2SGradLoss(4, 6, distance=CosineSimilarity())
    with pytest.raises(TypeError, match="reducer"):
        P2SGradLoss(4, 6, reducer=MeanReducer())
    with pytest.raises(TypeError):
        P2SGradLoss(4, 6, weight_regularizer=LpRegularizer())  # no weight regularization arguments
    assert not hasattr(P2SGradLoss(4, 6), "get_logits")


def test_labels_required_and_in_range():
    x, y = _batch()
    f = P2SGradLoss(4, 6, seed=0)
    with pytest.raises(ValueError, match="labels"):
        f(x)
    with pytest.raises(ValueError, match="num_classes"):
        f(x, np.full(len(y), 4))
    with pytest.raises(ValueError, match="num_classes"):
        f(x, np.full(len(y), -1))
    with pytest.raises(ValueError, match="labels"):
        f(x, y[:-1])
    with pytest.raises(TypeError, match="labels"):
        f(x, y.astype(np.float32))


def test_empty_batch_zero_loss_and_grad():
    f = P2SGradLoss(4, 6, seed=0)
    w0 = f.weight.data.copy()
    out = f(np.zeros((0, 6), np.float32), np.zeros(0, np.int64))
    assert out.loss == 0.0 and out.terms == {"loss": 0.0}
    assert out.grad.shape == (0, 6)
    assert not np.isnan(out.loss)
    np.testing.assert_array_equal(f.weight.grad, 0.0)
    np.testing.assert_array_equal(f.weight.data, w0)


def test_bad_embeddings():
    f = P2SGradLoss(4, 6, seed=0)
    y = np.zeros(3, np.int64)
    with pytest.raises(ValueError, match="embedding_size"):
        f(np.zeros((3, 5), np.float32), y)
    with pytest.raises(ValueError, match="NaN"):
        f(np.full((3, 6), np.nan, np.float32), y)
    with pytest.raises(ValueError):
        f(np.zeros(6, np.float32), y[:1])
    with pytest.raises(TypeError):
        f("abc", y)
    with pytest.raises((TypeError, ValueError)):
        P2SGradLoss(0, 6)
    with pytest.raises(TypeError):
        P2SGradLoss(4.5, 6)


def test_weight_grad_accumulates_and_optimizer_ownership():
    x, y = _batch()
    f = P2SGradLoss(4, 6, seed=0)
    out1 = f(x, y)
    g1 = f.weight.grad.copy()
    assert np.abs(g1).sum() > 0
    f(x, y)
    np.testing.assert_allclose(f.weight.grad, 2 * g1, rtol=1e-6)
    # an optimizer given the parameters moves them, and training lowers the loss
    opt = optim.SGD(f.parameters(), lr=0.5)
    first = out1.loss
    for _ in range(20):
        opt.zero_grad()
        f(x, y)
        opt.step()
    assert f(x, y).loss < first
    # an optimizer not given them leaves them as they are (up to the forward's renormalization)
    g = P2SGradLoss(4, 6, seed=1)
    w0 = g.weight.data.copy()
    other = optim.SGD([Parameter(np.ones(3))], lr=1.0)
    for _ in range(3):
        g(x, y)
        other.step()
    np.testing.assert_allclose(g.weight.data, w0, rtol=1e-6, atol=1e-7)


def test_embedding_regularizer_term():
    x, y = _batch()
    reg = LpRegularizer()
    f = P2SGradLoss(4, 6, seed=0, embedding_regularizer=reg, embedding_reg_weight=0.5)
    out = f(x, y)
    assert set(out.terms) == {"loss", "embedding_reg_loss"}
    assert out.terms["embedding_reg_loss"] == pytest.approx(0.5 * reg(x).loss, rel=1e-6)
    assert out.loss == pytest.approx(sum(out.terms.values()))
