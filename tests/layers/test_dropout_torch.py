"""Dropout against torch: with torch's own mask (read off its output), the kernels and the layer's
scale give torch's values and gradients; eval is the identity in both; the kept fraction matches."""

import numpy as np
import pytest

from mantissa_embed import _reference as ref, engine
from mantissa_embed.layers import Dropout

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("be", [engine, ref], ids=["engine", "numpy"])
@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_kernels_match_torch_with_its_mask(be, p):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 2.0, (64, 33)).astype(np.float32)  # no zero inputs: the mask is y != 0
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.nn.functional.dropout(tx, p, training=True)
    mask = ((ty.detach().numpy() != 0) * np.float32(1 / (1 - p))).astype(np.float32)
    y = be.dropout_forward(x, mask)
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-6)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    ty.backward(torch.tensor(dy))
    np.testing.assert_allclose(be.dropout_backward(dy, mask), tx.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_layer_kept_fraction_scale_and_eval_match_torch():
    x = np.ones((100, 1000), np.float32)
    torch.manual_seed(1)
    t = torch.nn.Dropout(0.25)
    ty = t(torch.tensor(x)).numpy()
    layer = Dropout(0.25).build((1000,), rng=1)
    y = np.array(layer.forward(x))
    assert abs((y != 0).mean() - (ty != 0).mean()) < 0.01
    np.testing.assert_allclose(np.unique(y[y != 0]), np.unique(ty[ty != 0]), rtol=1e-6)
    t.eval()
    layer.eval()
    np.testing.assert_array_equal(layer.forward(x), t(torch.tensor(x)).numpy())
