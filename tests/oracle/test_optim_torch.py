"""SGD / Adam against torch.optim on the same parameters and gradients (oracle test)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from mantissa_embed.optim import SGD, Adam  # noqa: E402
from mantissa_embed.parameter import Parameter  # noqa: E402

SHAPES = [(4, 3), (7,), (2, 2, 3, 3)]


def _compare(make_ours, make_torch, backend, steps=8, seed=0):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    ours = [Parameter(a) for a in init]
    theirs = [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in init]
    opt_o, opt_t = make_ours(ours, backend), make_torch(theirs)
    for _ in range(steps):
        grads = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
        opt_o.zero_grad()
        opt_t.zero_grad()
        for p, q, g in zip(ours, theirs, grads):
            p.grad += g
            q.grad = torch.from_numpy(g.copy())
        opt_o.step()
        opt_t.step()
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.data, q.detach().numpy(), rtol=1e-5, atol=1e-6)


SGD_CFGS = [
    dict(lr=0.1),
    dict(lr=0.05, momentum=0.9),
    dict(lr=0.05, momentum=0.9, dampening=0.3),
    dict(lr=0.05, momentum=0.9, nesterov=True),
    dict(lr=0.05, momentum=0.8, weight_decay=1e-2, nesterov=True),
    dict(lr=0.03, weight_decay=0.1),
]


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@pytest.mark.parametrize("cfg", SGD_CFGS)
def test_sgd_matches_torch(cfg, backend):
    _compare(lambda ps, be: SGD(ps, **cfg, backend=be),
             lambda ps: torch.optim.SGD(ps, **cfg, foreach=False), backend)


ADAM_CFGS = [
    dict(),
    dict(lr=1e-2),
    dict(lr=1e-2, betas=(0.8, 0.99), eps=1e-6),
    dict(lr=5e-3, weight_decay=0.05),
]


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@pytest.mark.parametrize("cfg", ADAM_CFGS)
def test_adam_matches_torch(cfg, backend):
    _compare(lambda ps, be: Adam(ps, **cfg, backend=be),
             lambda ps: torch.optim.Adam(ps, **cfg, foreach=False), backend)


def test_defaults_match_torch():
    import inspect
    for ours, theirs, names in [(SGD, torch.optim.SGD, ["lr", "momentum", "dampening", "weight_decay", "nesterov"]),
                                (Adam, torch.optim.Adam, ["lr", "betas", "eps", "weight_decay"])]:
        so, st = inspect.signature(ours), inspect.signature(theirs)
        for n in names:
            assert so.parameters[n].default == st.parameters[n].default, n
