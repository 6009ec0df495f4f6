"""Optimizers over :class:`~mantissa_embed.parameter.Parameter` objects: SGD and Adam.

Same constructor names, defaults and update rules as ``torch.optim.SGD`` / ``torch.optim.Adam``
(single parameter group, no ``maximize`` / ``amsgrad`` / ``foreach``). The update of each
parameter runs in one fused, in-place backend kernel (``engine.sgd_step`` / ``adam_step``, or
their numpy twins with ``backend="numpy"``). An optimizer updates exactly the parameters it was
given, in their order.
"""
from __future__ import annotations

import numbers

import numpy as np

from ._validation import check_float
from .backend import get_backend
from .parameter import Parameter

__all__ = ["Optimizer", "SGD", "Adam"]


def _real(v, name):
    if isinstance(v, np.generic) and isinstance(v, numbers.Real) and not isinstance(v, np.bool_):
        v = float(v)
    return check_float(v, name)


class Optimizer:
    """Base class: holds the parameter list, ``zero_grad()`` and the backend.

    Raises TypeError when ``params`` is not an iterable of Parameter, ValueError when it is
    empty or contains the same Parameter twice.
    """

    def __init__(self, params, backend="mantissa"):
        if isinstance(params, Parameter):
            raise TypeError("params must be an iterable of Parameter objects, got a single Parameter "
                            "(wrap it in a list)")
        try:
            params = list(params)
        except TypeError:
            raise TypeError(f"params must be an iterable of Parameter objects, got {type(params).__name__}") from None
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        for i, p in enumerate(params):
            if not isinstance(p, Parameter):
                raise TypeError(f"params[{i}] must be a Parameter, got {type(p).__name__}")
        if len({id(p) for p in params}) != len(params):
            raise ValueError("optimizer got the same Parameter more than once")
        self.params = params
        self._be = get_backend(backend)
        self.backend = backend
        self.state = [dict() for _ in params]

    def zero_grad(self):
        """Set every parameter's ``grad`` to zero (in place)."""
        for p in self.params:
            p.zero_grad()

    def step(self):
        raise NotImplementedError

    def _check_shapes(self):
        for i, p in enumerate(self.params):
            if p.grad.shape != p.data.shape:
                raise ValueError(f"params[{i}].grad has shape {p.grad.shape}, expected {p.data.shape}")


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum (``torch.optim.SGD`` semantics).

    Parameters
    ----------
    params : iterable of Parameter
    lr : float >= 0, default 1e-3 (torch's default)
    momentum : float >= 0, default 0
    dampening : float, default 0
    weight_decay : float >= 0, default 0 (L2 penalty added to the gradient)
    nesterov : bool, default False (requires momentum > 0 and dampening == 0)
    backend : {"mantissa", "numpy"}, keyword-only, default "mantissa"

    Update per parameter p with gradient g (torch/optim/sgd.py; Sutskever et al. 2013 for
    the momentum/Nesterov form): ``g' = g + weight_decay * p``; if momentum: ``b = g'`` on the
    first step, ``b = momentum * b + (1 - dampening) * g'`` afterwards, and
    ``g' = g' + momentum * b`` (nesterov) or ``g' = b``; then ``p -= lr * g'``.

    Raises ValueError with torch's messages for a negative lr / momentum / weight_decay and
    for nesterov without momentum or with dampening.
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 backend="mantissa"):
        lr = _real(lr, "lr")
        momentum = _real(momentum, "momentum")
        dampening = _real(dampening, "dampening")
        weight_decay = _real(weight_decay, "weight_decay")
        if not isinstance(nesterov, (bool, np.bool_)):
            raise TypeError(f"nesterov must be a bool, got {type(nesterov).__name__}")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, backend)
        self.lr = lr
        self.momentum = momentum
        self.dampening = dampening
        self.weight_decay = weight_decay
        self.nesterov = bool(nesterov)

    def step(self):
        """Update every parameter in place from its current ``grad``."""
        lr = _real(self.lr, "lr")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        self._check_shapes()
        for p, st in zip(self.params, self.state):
            buf = None
            first = False
            if self.momentum != 0.0:
                buf = st.get("momentum_buffer")
                if buf is None:
                    buf = st["momentum_buffer"] = np.zeros_like(p.data)
                    first = True
            self._be.sgd_step(p.data, p.grad, buf, lr, self.momentum, self.dampening,
                              self.weight_decay, self.nesterov, first)


class Adam(Optimizer):
    """Adam (Kingma & Ba 2015, "Adam: A Method for Stochastic Optimization", ICLR), with
    ``torch.optim.Adam`` semantics (amsgrad=False; weight decay as an L2 term added to the
    gradient, not decoupled as in AdamW).

    Parameters
    ----------
    params : iterable of Parameter
    lr : float >= 0, default 1e-3
    betas : (float, float) in [0, 1), default (0.9, 0.999)
    eps : float >= 0, default 1e-8
    weight_decay : float >= 0, default 0
    backend : {"mantissa", "numpy"}, keyword-only, default "mantissa"

    Update at step t (1, 2, ...): ``g' = g + weight_decay * p``; ``m = beta1*m + (1-beta1)*g'``;
    ``v = beta2*v + (1-beta2)*g'^2``; ``p -= lr/(1-beta1^t) * m / (sqrt(v)/sqrt(1-beta2^t) + eps)``.
    Raises ValueError with torch's messages for out-of-range arguments.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, *, backend="mantissa"):
        lr = _real(lr, "lr")
        eps = _real(eps, "eps")
        weight_decay = _real(weight_decay, "weight_decay")
        if isinstance(betas, (str, bytes)):
            raise TypeError("betas must be a pair of floats")
        try:
            betas = tuple(betas)
        except TypeError:
            raise TypeError(f"betas must be a pair of floats, got {type(betas).__name__}") from None
        if len(betas) != 2:
            raise ValueError(f"betas must be a pair of floats, got {betas!r}")
        b1, b2 = _real(betas[0], "betas[0]"), _real(betas[1], "betas[1]")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= b1 < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {b1}")
        if not 0.0 <= b2 < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {b2}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, backend)
        self.lr = lr
        self.betas = (b1, b2)
        self.eps = eps
        self.weight_decay = weight_decay

    def step(self):
        """Update every parameter in place from its current ``grad``."""
        lr = _real(self.lr, "lr")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        self._check_shapes()
        b1, b2 = self.betas
        for p, st in zip(self.params, self.state):
            if "step" not in st:
                st["step"] = 0
                st["exp_avg"] = np.zeros_like(p.data)
                st["exp_avg_sq"] = np.zeros_like(p.data)
            st["step"] += 1
            self._be.adam_step(p.data, p.grad, st["exp_avg"], st["exp_avg_sq"], st["step"], lr, b1, b2,
                               self.eps, self.weight_decay)
