"""SGD / Adam / AdamW against torch.optim on the same parameters and gradients (oracle test):
single groups, two parameter groups of different lr, and a torch state_dict loaded mid-run."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from mantissa_embed.optim import SGD, Adam, AdamW  # noqa: E402
from mantissa_embed.parameter import Parameter  # noqa: E402

SHAPES = [(4, 3), (7,), (2, 2, 3, 3)]


def _compare(make_ours, make_torch, backend, steps=8, seed=0, rtol=1e-5, atol=1e-6):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    ours = [Parameter(a) for a in init]
    theirs = [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in init]
    opt_o, opt_t = make_ours(ours, backend), make_torch(theirs)
    _steps(opt_o, opt_t, ours, theirs, rng, steps)
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.data, q.detach().numpy(), rtol=rtol, atol=atol)
    return opt_o, opt_t


def _steps(opt_o, opt_t, ours, theirs, rng, steps):
    for _ in range(steps):
        grads = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
        opt_o.zero_grad()
        opt_t.zero_grad()
        for p, q, g in zip(ours, theirs, grads):
            p.grad += g
            q.grad = torch.from_numpy(g.copy())
        opt_o.step()
        opt_t.step()


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
    _compare(
        lambda ps, be: SGD(ps, **cfg, backend=be),
        lambda ps: torch.optim.SGD(ps, **cfg, foreach=False),
        backend,
    )


ADAM_CFGS = [
    dict(),
    dict(lr=1e-2),
    dict(lr=1e-2, betas=(0.8, 0.99), eps=1e-6),
    dict(lr=5e-3, weight_decay=0.05),
]


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@pytest.mark.parametrize("cfg", ADAM_CFGS)
def test_adam_matches_torch(cfg, backend):
    _compare(
        lambda ps, be: Adam(ps, **cfg, backend=be),
        lambda ps: torch.optim.Adam(ps, **cfg, foreach=False),
        backend,
    )


ADAMW_CFGS = [
    dict(),
    dict(lr=1e-2),
    dict(lr=1e-2, weight_decay=0.1, betas=(0.8, 0.99), eps=1e-6),
    dict(lr=3e-3, weight_decay=0.0),
    dict(lr=1e-3, weight_decay=1e-4),
]


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@pytest.mark.parametrize("cfg", ADAMW_CFGS)
def test_adamw_matches_torch(cfg, backend):
    _compare(
        lambda ps, be: AdamW(ps, **cfg, backend=be),
        lambda ps: torch.optim.AdamW(ps, **cfg, foreach=False),
        backend,
        steps=12,
        rtol=1e-6,
        atol=1e-7,
    )


def _two_groups(ps, lr, **extra):
    return [{"params": ps[:2], **extra}, {"params": ps[2:], "lr": lr}]


GROUP_CASES = [
    (SGD, torch.optim.SGD, dict(lr=0.05, momentum=0.9), dict(weight_decay=1e-2)),
    (Adam, torch.optim.Adam, dict(lr=1e-3), dict(betas=(0.8, 0.99))),
    (AdamW, torch.optim.AdamW, dict(lr=1e-3, weight_decay=1e-4), dict(weight_decay=0.05)),
]


@pytest.mark.parametrize("backend", ["mantissa", "numpy"])
@pytest.mark.parametrize("ours,theirs,cfg,extra", GROUP_CASES, ids=["SGD", "Adam", "AdamW"])
def test_two_groups_with_their_own_lr_match_torch(ours, theirs, cfg, extra, backend):
    """The second group learns at 100x the first (proxies vs trunk); then both lrs change."""
    big = 100 * cfg["lr"]
    opt_o, opt_t = _compare(
        lambda ps, be: ours(_two_groups(ps, big, **extra), **cfg, backend=be),
        lambda ps: theirs(_two_groups(ps, big, **extra), **cfg, foreach=False),
        backend,
        rtol=1e-5,
    )
    assert [g["lr"] for g in opt_o.param_groups] == [g["lr"] for g in opt_t.param_groups]
    for go, gt in zip(opt_o.param_groups, opt_t.param_groups):
        go["lr"] *= 0.3
        gt["lr"] *= 0.3
    rng = np.random.default_rng(5)
    ours_p = opt_o.params
    theirs_p = [p for g in opt_t.param_groups for p in g["params"]]
    _steps(opt_o, opt_t, ours_p, theirs_p, rng, 4)
    for p, q in zip(ours_p, theirs_p):
        np.testing.assert_allclose(p.data, q.detach().numpy(), rtol=1e-5, atol=1e-6)


def _numpy_state(sd):
    """torch's state_dict with its tensors as numpy arrays (what a user converting one does)."""
    return {
        "state": {
            k: {n: (v.numpy() if torch.is_tensor(v) else v) for n, v in st.items()}
            for k, st in sd["state"].items()
        },
        "param_groups": sd["param_groups"],
    }


@pytest.mark.parametrize(
    "ours,theirs,cfg",
    [
        (SGD, torch.optim.SGD, dict(lr=0.05, momentum=0.9, nesterov=True)),
        (Adam, torch.optim.Adam, dict(lr=1e-2)),
        (AdamW, torch.optim.AdamW, dict(lr=1e-2, weight_decay=0.1)),
    ],
    ids=["SGD", "Adam", "AdamW"],
)
def test_loading_torch_state_mid_run_continues_as_torch(ours, theirs, cfg):
    """A fresh optimizer given torch's state after 5 steps continues exactly as torch does."""
    rng = np.random.default_rng(3)
    init = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    theirs_p = [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in init]
    opt_t = theirs(_two_groups(theirs_p, 3 * cfg["lr"]), **cfg, foreach=False)
    for _ in range(5):
        opt_t.zero_grad()
        for q in theirs_p:
            q.grad = torch.from_numpy(rng.standard_normal(q.shape).astype(np.float32))
        opt_t.step()
    ours_p = [Parameter(q.detach().numpy()) for q in theirs_p]
    opt_o = ours(_two_groups(ours_p, cfg["lr"]), **cfg)  # the saved lr of group 1 replaces this one
    opt_o.load_state_dict(_numpy_state(opt_t.state_dict()))
    assert opt_o.param_groups[1]["lr"] == 3 * cfg["lr"]
    _steps(opt_o, opt_t, ours_p, theirs_p, rng, 4)
    for p, q in zip(ours_p, theirs_p):
        np.testing.assert_allclose(p.data, q.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_defaults_match_torch():
    import inspect

    for ours, theirs, names in [
        (SGD, torch.optim.SGD, ["lr", "momentum", "dampening", "weight_decay", "nesterov"]),
        (Adam, torch.optim.Adam, ["lr", "betas", "eps", "weight_decay"]),
        (AdamW, torch.optim.AdamW, ["lr", "betas", "eps", "weight_decay"]),
    ]:
        so, st = inspect.signature(ours), inspect.signature(theirs)
        for n in names:
            assert so.parameters[n].default == st.parameters[n].default, n
