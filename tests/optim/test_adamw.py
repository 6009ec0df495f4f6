"""AdamW: the decay is decoupled from the moments, torch's defaults, argument validation (its
update rule: test_update_rules.py; against torch: oracle/test_optim_torch.py)."""

import numpy as np
import pytest

from mantissa_embed.optim import Adam, AdamW
from mantissa_embed.parameter import Parameter


def test_decay_is_decoupled_from_the_moments():
    """Same gradients, large weight decay: AdamW's moments see only g, Adam's see g + wd*p."""
    rng = np.random.default_rng(0)
    init = rng.standard_normal(6)
    a, b = Parameter(init), Parameter(init)
    oa, ob = AdamW([a], lr=0.1, weight_decay=0.5), Adam([b], lr=0.1, weight_decay=0.5)
    g = rng.standard_normal(6).astype(np.float32)
    for p, o in ((a, oa), (b, ob)):
        p.grad[:] = g
        o.step()
    np.testing.assert_allclose(oa.state[0]["exp_avg"], 0.1 * g, rtol=1e-6)
    np.testing.assert_allclose(ob.state[0]["exp_avg"], 0.1 * (g + 0.5 * init.astype(np.float32)), rtol=1e-6)
    assert not np.allclose(a.data, b.data)


def test_defaults_and_validation():
    p = Parameter(np.ones(3))
    assert AdamW([p]).defaults == dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2)
    assert Adam([p]).defaults["weight_decay"] == 0.0
    for kwargs, msg in [
        (dict(lr=-1.0), "Invalid learning rate"),
        (dict(weight_decay=-1e-2), "Invalid weight_decay"),
        (dict(betas=(0.9, 1.0)), "Invalid beta parameter at index 1"),
        (dict(eps=-1.0), "Invalid epsilon value"),
        (dict(weight_decay=float("inf")), "weight_decay"),
    ]:
        with pytest.raises(ValueError, match=msg):
            AdamW([p], **kwargs)
    with pytest.raises(TypeError, match="betas"):
        AdamW([p], betas="ab")
