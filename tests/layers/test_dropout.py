"""The Dropout layer: training statistics and scale, identity in eval and for p = 0, the mask
stream seeded from the model's generator, generator state save / restore, config round trip,
bad p."""

import json

import numpy as np
import pytest

from mantissa_embed.layers import Dense, Dropout, Flatten, Sequential


def test_training_mask_statistics_scale_and_backward():
    layer = Dropout(0.3).build((200, 100), rng=5)
    x = np.random.default_rng(0).uniform(1, 2, (2, 200, 100)).astype(np.float32)
    y = np.array(layer.forward(x))
    kept = y != 0
    assert abs(1 - kept.mean() - 0.3) < 0.01  # 40,000 draws: 4 standard deviations ~ 0.009
    np.testing.assert_allclose(y[kept], x[kept] / 0.7, rtol=1e-6)
    dy = np.random.default_rng(1).standard_normal(x.shape).astype(np.float32)
    dx = layer.backward(dy)
    np.testing.assert_allclose(dx, np.where(kept, dy / 0.7, 0), rtol=1e-6)
    y2 = np.array(layer.forward(x))
    assert (y2 != y).any()  # a new mask each batch


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
def test_identity_in_eval_and_for_p_zero(backend):
    x = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    layer = Dropout(0.5).set_backend(backend).eval()
    np.testing.assert_array_equal(layer.forward(x), x)
    np.testing.assert_array_equal(layer.backward(x * 2), x * 2)
    zero = Dropout(0.0).set_backend(backend)
    np.testing.assert_array_equal(zero.forward(x), x)
    assert zero.backward(x, need_dx=False) is None


def _net(seed, drop=True):
    layers = [Flatten(), Dense(16, act="relu")] + ([Dropout(0.5)] if drop else []) + [Dense(3)]
    return Sequential(layers, seed=seed)


def test_stream_reproducible_from_the_model_seed():
    x = np.random.default_rng(3).standard_normal((5, 2, 3)).astype(np.float32)
    a, b, c = _net(7), _net(7), _net(8)
    ya, yb, yc = a.forward(x), b.forward(x), c.forward(x)
    np.testing.assert_array_equal(ya, yb)
    assert not np.array_equal(ya, yc)  # another seed, another mask
    np.testing.assert_array_equal(a.forward(x), b.forward(x))  # the second batch too
    assert not np.array_equal(a[2]._m, c[2]._m)
    # spawning the child does not consume the model's stream: the Dense inits are unchanged
    plain = _net(7, drop=False).build((2, 3))
    np.testing.assert_array_equal(a[3].weight.data, plain[2].weight.data)


def test_rng_state_round_trip_through_json():
    x = np.ones((4, 50), np.float32)
    layer = Dropout(0.4).build((50,), rng=11)
    layer.forward(x)
    state = json.loads(json.dumps(layer.rng_state()))
    want = np.array(layer.forward(x))
    layer.forward(x)
    layer.set_rng_state(state)
    np.testing.assert_array_equal(layer.forward(x), want)
    other = Dropout(0.4).build((50,), rng=99)
    other.set_rng_state(state)
    np.testing.assert_array_equal(other.forward(x), want)


def test_config_round_trip():
    model = _net(4)
    x = np.random.default_rng(4).standard_normal((3, 2, 3)).astype(np.float32)
    y = model.forward(x)
    cfg = json.loads(json.dumps(model.get_config()))
    assert cfg["layers"][2] == {"type": "Dropout", "p": 0.5}
    clone = Sequential.from_config(cfg)
    clone.load_state_arrays(model.state_arrays())
    np.testing.assert_array_equal(clone.forward(x), y)  # same seed: the same first mask
    assert "Dropout(p=0.5)" in model.summary()


def test_bad_arguments():
    for p in (-0.1, 1.0, 1.5, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="p must be in"):
            Dropout(p)
    for p in ("0.5", None, True):
        with pytest.raises(TypeError, match="p must be"):
            Dropout(p)
    with pytest.raises(RuntimeError, match="not built"):
        Dropout().rng_state()
    layer = Dropout().build((3,))
    with pytest.raises(TypeError, match="state"):
        layer.set_rng_state([1, 2])
    with pytest.raises(ValueError, match="state"):
        layer.set_rng_state({"bit_generator": "MT19937", "state": {}})
