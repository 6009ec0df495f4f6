"""SGD, Adam and AdamW against a direct float64 numpy transcription of the update rules
documented for torch.optim.SGD / Adam / AdamW, on both backends; argument validation."""

import numpy as np
import pytest

from mantissa_embed.optim import SGD, Adam, AdamW
from mantissa_embed.parameter import Parameter

BACKENDS = ["mantissa", "numpy"]
SHAPES = [(3, 4), (5,), (2, 1, 3, 3), ()]


def _params(seed=0):
    rng = np.random.default_rng(seed)
    return [Parameter(rng.standard_normal(s), name=f"p{i}") for i, s in enumerate(SHAPES)]


def _grads(rng):
    return [rng.standard_normal(s) for s in SHAPES]


def _sgd_reference(thetas, grads_seq, lr, momentum, dampening, weight_decay, nesterov):
    """torch.optim.SGD documentation, transcribed in float64."""
    thetas = [t.astype(np.float64) for t in thetas]
    bufs = [None] * len(thetas)
    for t, grads in enumerate(grads_seq, start=1):
        for i, g in enumerate(grads):
            g = np.asarray(g, np.float64)
            if weight_decay != 0:
                g = g + weight_decay * thetas[i]
            if momentum != 0:
                if t > 1:
                    bufs[i] = momentum * bufs[i] + (1 - dampening) * g
                else:
                    bufs[i] = g
                g = g + momentum * bufs[i] if nesterov else bufs[i]
            thetas[i] = thetas[i] - lr * g
    return thetas


def _adam_reference(thetas, grads_seq, lr, betas, eps, weight_decay, decoupled=False):
    """torch.optim.Adam documentation (amsgrad=False, maximize=False), transcribed in float64;
    ``decoupled``: torch.optim.AdamW's (Loshchilov & Hutter 2019, decay scaled by lr)."""
    b1, b2 = betas
    thetas = [t.astype(np.float64) for t in thetas]
    m = [np.zeros_like(t) for t in thetas]
    v = [np.zeros_like(t) for t in thetas]
    for t, grads in enumerate(grads_seq, start=1):
        for i, g in enumerate(grads):
            g = np.asarray(g, np.float64)
            if decoupled:
                thetas[i] = thetas[i] * (1 - lr * weight_decay)
            elif weight_decay != 0:
                g = g + weight_decay * thetas[i]
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            mhat = m[i] / (1 - b1**t)
            vhat = v[i] / (1 - b2**t)
            thetas[i] = thetas[i] - lr * mhat / (np.sqrt(vhat) + eps)
    return thetas


def _run(opt, params, grads_seq):
    for grads in grads_seq:
        opt.zero_grad()
        for p, g in zip(params, grads):
            p.grad += g.astype(np.float32)  # what a backward pass does: accumulate
        opt.step()


SGD_CONFIGS = [
    dict(lr=0.1),
    dict(lr=0.05, momentum=0.9),
    dict(lr=0.05, momentum=0.9, dampening=0.5),
    dict(lr=0.05, momentum=0.9, nesterov=True),
    dict(lr=0.02, momentum=0.5, weight_decay=0.01),
    dict(lr=0.02, weight_decay=0.1),
    dict(lr=0.0, momentum=0.9),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cfg", SGD_CONFIGS)
def test_sgd_matches_documented_rule(cfg, backend):
    params = _params()
    theta0 = [p.data.copy() for p in params]
    rng = np.random.default_rng(1)
    grads_seq = [_grads(rng) for _ in range(6)]
    _run(SGD(params, **cfg, backend=backend), params, grads_seq)
    full = {**dict(momentum=0, dampening=0, weight_decay=0, nesterov=False), **cfg}
    expect = _sgd_reference(theta0, grads_seq, **full)
    for p, e in zip(params, expect):
        np.testing.assert_allclose(p.data, e, rtol=1e-5, atol=1e-6)


ADAM_CONFIGS = [
    dict(),
    dict(lr=1e-2),
    dict(lr=1e-2, betas=(0.5, 0.9), eps=1e-6),
    dict(lr=3e-3, weight_decay=0.1),
    dict(lr=1e-2, betas=(0.0, 0.0)),
]
ADAM_CASES = [(Adam, 0.0, cfg) for cfg in ADAM_CONFIGS] + [
    (AdamW, 1e-2, cfg)
    for cfg in ADAM_CONFIGS[:3] + [dict(lr=1e-2, weight_decay=0.3), dict(lr=5e-3, weight_decay=0.0)]
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cls,default_wd,cfg", ADAM_CASES)
def test_adam_and_adamw_match_documented_rule(cls, default_wd, cfg, backend):
    params = _params(2)
    theta0 = [p.data.copy() for p in params]
    rng = np.random.default_rng(3)
    grads_seq = [_grads(rng) for _ in range(6)]
    _run(cls(params, **cfg, backend=backend), params, grads_seq)
    full = {**dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=default_wd), **cfg}
    expect = _adam_reference(theta0, grads_seq, **full, decoupled=cls is AdamW)
    for p, e in zip(params, expect):
        np.testing.assert_allclose(p.data, e, rtol=1e-5, atol=1e-6)


def test_updates_exactly_the_given_parameters():
    params = _params()
    others = _params(5)
    before = [p.data.copy() for p in others]
    for p in params + others:
        p.grad += 1.0
    for opt in (SGD(params, lr=0.1, momentum=0.9), Adam(params, lr=0.1)):
        opt.step()
    for p, b in zip(others, before):
        np.testing.assert_array_equal(p.data, b)
    assert all(not np.array_equal(p.data, q.data) for p, q in zip(params, _params()))


def test_zero_grad_and_state():
    params = _params()
    opt = SGD(params, lr=0.1, momentum=0.9)
    for p in params:
        p.grad += 2.0
    opt.step()
    assert all(st["momentum_buffer"].shape == p.shape for p, st in zip(params, opt.state))
    opt.zero_grad()
    assert all(not p.grad.any() for p in params)
    adam = Adam(params)
    adam.step()
    adam.step()
    assert all(st["step"] == 2 for st in adam.state)


def test_lr_can_change_between_steps():
    p = Parameter(np.zeros(3))
    opt = SGD([p], lr=1.0)
    p.grad[:] = 1.0
    opt.step()
    opt.lr = 0.5
    opt.step()
    np.testing.assert_allclose(p.data, -1.5)


def test_backends_agree_bitwise_enough():
    rng = np.random.default_rng(9)
    grads_seq = [_grads(rng) for _ in range(4)]
    a, b = _params(), _params()
    _run(Adam(a, lr=1e-2, weight_decay=0.01), a, grads_seq)
    _run(Adam(b, lr=1e-2, weight_decay=0.01, backend="numpy"), b, grads_seq)
    for p, q in zip(a, b):
        np.testing.assert_allclose(p.data, q.data, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(
    "kwargs,msg",
    [
        (dict(lr=-1.0), "Invalid learning rate"),
        (dict(lr=0.1, momentum=-0.1), "Invalid momentum value"),
        (dict(lr=0.1, weight_decay=-1.0), "Invalid weight_decay value"),
        (dict(lr=0.1, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
        (dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True), "Nesterov momentum requires"),
        (dict(lr=float("nan")), "lr"),
    ],
)
def test_sgd_validation(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        SGD(_params(), **kwargs)


@pytest.mark.parametrize(
    "kwargs,msg",
    [
        (dict(lr=-1.0), "Invalid learning rate"),
        (dict(eps=-1.0), "Invalid epsilon value"),
        (dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0"),
        (dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1"),
        (dict(weight_decay=-0.1), "Invalid weight_decay value"),
        (dict(betas=(0.9,)), "pair"),
    ],
)
def test_adam_validation(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        Adam(_params(), **kwargs)


def test_params_validation():
    with pytest.raises(ValueError, match="empty parameter list"):
        SGD([], lr=0.1)
    with pytest.raises(TypeError, match="Parameter"):
        SGD([np.zeros(3)], lr=0.1)
    with pytest.raises(TypeError, match="single Parameter"):
        Adam(Parameter(np.zeros(3)))
    with pytest.raises(TypeError):
        SGD(5, lr=0.1)
    p = Parameter(np.zeros(3))
    with pytest.raises(ValueError, match="more than once"):
        SGD([p, p], lr=0.1)
    with pytest.raises(TypeError, match="nesterov"):
        SGD([p], lr=0.1, momentum=0.9, nesterov="yes")
    with pytest.raises(ValueError, match="backend"):
        SGD([p], lr=0.1, backend="cuda")
    opt = SGD([p], lr=0.1)
    opt.lr = -1
    with pytest.raises(ValueError, match="Invalid learning rate"):
        opt.step()


def test_generator_of_parameters_is_accepted():
    params = _params()
    opt = SGD((p for p in params), lr=0.1)
    assert opt.params == params
