"""``mantissa_embed.set_num_threads`` / ``get_num_threads`` at the package top level, the
``MANTISSA_EMBED_NUM_THREADS`` environment variable, and fits that are bitwise reproducible for a
fixed thread count."""

import os
import subprocess
import sys

import numpy as np
import pytest

import mantissa_embed
from mantissa_embed import Embedder, engine, models


@pytest.fixture
def restore_threads():
    before = engine.get_num_threads()
    yield
    engine.set_num_threads(before)


def test_top_level_api_is_public():
    assert "set_num_threads" in mantissa_embed.__all__
    assert "get_num_threads" in mantissa_embed.__all__
    assert callable(mantissa_embed.set_num_threads) and mantissa_embed.set_num_threads.__doc__


def test_set_get_roundtrip_drives_the_engine(restore_threads):
    for n in (1, 3, 2):
        mantissa_embed.set_num_threads(n)
        assert mantissa_embed.get_num_threads() == n
        assert engine.get_num_threads() == n


@pytest.mark.parametrize(
    "bad,exc",
    [
        (0, ValueError),
        (-1, ValueError),
        (2.0, TypeError),
        (True, TypeError),
        ("2", TypeError),
        (None, TypeError),
    ],
)
def test_set_num_threads_rejects(bad, exc, restore_threads):
    before = mantissa_embed.get_num_threads()
    with pytest.raises(exc, match="n must"):
        mantissa_embed.set_num_threads(bad)
    assert mantissa_embed.get_num_threads() == before


def _run(code, **env):
    full = {k: v for k, v in os.environ.items() if k != "MANTISSA_EMBED_NUM_THREADS"}
    full.update(env)
    out = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_environment_variable_sets_the_default():
    # one subprocess: the variable gives the default, set_num_threads overrides it
    code = (
        "import mantissa_embed as m; a = m.get_num_threads(); m.set_num_threads(2); "
        "print(a, m.get_num_threads())"
    )
    assert _run(code, MANTISSA_EMBED_NUM_THREADS="3") == "3 2"


def _fit_weights():
    rng = np.random.default_rng(0)
    y = (np.arange(96) % 3).astype(np.int64)
    X = (rng.random((96, 1, 12, 12)) + y[:, None, None, None] * 0.2).astype(np.float32)
    emb = Embedder(models.small_cnn_embedder(embed_dim=4, seed=0), seed=0).fit(X, y, epochs=1, batch_size=32)
    return [p.data.copy() for p in emb.net.parameters()] + [emb.embed(X)]


@pytest.mark.parametrize("n", [1, 2])
def test_fit_bitwise_reproducible_for_a_fixed_thread_count(n, restore_threads):
    mantissa_embed.set_num_threads(n)
    a = _fit_weights()
    b = _fit_weights()
    for x, z in zip(a, b):
        np.testing.assert_array_equal(x, z)
