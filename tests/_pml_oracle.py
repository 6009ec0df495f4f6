"""Shared by the PML oracle tests: run a pytorch-metric-learning loss in float64 on our float32
inputs, and compare a ``LossOutput`` with the result (torch is imported only when called)."""
import warnings

import numpy as np
import pytest


def pml_call(loss, x, y, ref=None, ry=None, it=None, backward=True):
    """``(value, d/dx, d/dref or None)`` of PML's ``loss`` on float64 copies of the inputs.

    float64 because torch.cdist's float32 matmul path loses the digits of small distances,
    which our engine recomputes exactly. A zero loss without a graph gives zero gradients."""
    import torch

    xt = torch.tensor(x.astype(np.float64), requires_grad=True)
    rt = None if ref is None else torch.tensor(ref.astype(np.float64), requires_grad=True)
    with warnings.catch_warnings():  # PML's deprecation / "no pairs" warnings
        warnings.simplefilter("ignore")
        out = loss(xt, None if y is None else torch.tensor(y),
                   indices_tuple=None if it is None else tuple(torch.tensor(t) for t in it),
                   ref_emb=rt, ref_labels=None if ry is None else torch.tensor(ry))
    value = float(out.detach()) if torch.is_tensor(out) else float(out)
    if backward and torch.is_tensor(out) and out.requires_grad:
        out.backward()
    zeros = lambda t: np.zeros(tuple(t.shape))  # noqa: E731
    g = zeros(xt) if xt.grad is None else xt.grad.numpy()
    rg = None if rt is None else (zeros(rt) if rt.grad is None else rt.grad.numpy())
    return value, g, rg


def compare(ours, theirs, grad_atol=None):
    """Loss within rel 1e-4 (abs 1e-6); gradients within rtol 1e-4 and an absolute tolerance of
    1e-4 of the largest entry (at least 1e-7), or ``grad_atol(b)`` for the reference array b."""
    loss, g, rg = theirs
    assert ours.loss == pytest.approx(loss, rel=1e-4, abs=1e-6)
    for a, b in ((ours.grad, g), (ours.ref_grad, rg)):
        if b is None:
            assert a is None
            continue
        atol = (1e-4 * max(np.abs(b).max(initial=0), 1e-3)) if grad_atol is None else grad_atol(b)
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=atol)
