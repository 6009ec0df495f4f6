"""``check_matches_pml``: a loss against pytorch-metric-learning's, run in float64 by torch."""

from __future__ import annotations

import unittest
import warnings
from typing import Any, Callable

import numpy as np

from .._typing import ArrayLike, IndicesTuple

Reference = tuple[float, np.ndarray, "np.ndarray | None"]

__all__ = ["assert_loss_close", "check_matches_pml", "pml_reference"]


def _torch() -> Any:
    try:
        import pytorch_metric_learning  # noqa: F401
        import torch
    except ImportError as e:
        # unittest.SkipTest: a skip under pytest and unittest alike
        raise unittest.SkipTest(
            "check_matches_pml needs torch and pytorch-metric-learning "
            f"(pip install 'mantissa-embed[oracle]'): {e}"
        ) from None
    return torch


def pml_reference(
    pml_loss: Callable[..., Any],
    embeddings: ArrayLike,
    labels: ArrayLike | None = None,
    indices_tuple: IndicesTuple | None = None,
    ref_emb: ArrayLike | None = None,
    ref_labels: ArrayLike | None = None,
    backward: bool = True,
) -> Reference:
    """``(value, d/d embeddings (N, D), d/d ref_emb (M, D) or None)`` of the torch loss
    ``pml_loss`` on float64 copies of the inputs (float64 numpy arrays). A loss without a graph
    (zero), or ``backward=False``, gives zero gradients. Raises ``unittest.SkipTest`` without
    torch / PML."""
    torch = _torch()
    xt = torch.tensor(np.asarray(embeddings, dtype=np.float64), requires_grad=True)
    rt = None if ref_emb is None else torch.tensor(np.asarray(ref_emb, dtype=np.float64), requires_grad=True)
    with warnings.catch_warnings():  # PML's deprecation / "no pairs" warnings
        warnings.simplefilter("ignore")
        out = pml_loss(
            xt,
            None if labels is None else torch.tensor(np.asarray(labels)),
            indices_tuple=None
            if indices_tuple is None
            else tuple(torch.tensor(np.asarray(t)) for t in indices_tuple),
            ref_emb=rt,
            ref_labels=None if ref_labels is None else torch.tensor(np.asarray(ref_labels)),
        )
    value = float(out.detach()) if torch.is_tensor(out) else float(out)
    if backward and torch.is_tensor(out) and out.requires_grad:
        out.backward()
    g = np.zeros(tuple(xt.shape)) if xt.grad is None else xt.grad.numpy()
    rg = None if rt is None else (np.zeros(tuple(rt.shape)) if rt.grad is None else rt.grad.numpy())
    return value, g, rg


def assert_loss_close(
    ours: Any,
    reference: Reference,
    *,
    rtol: float = 1e-4,
    atol: float = 1e-6,
    grad_atol: Callable[[np.ndarray], float] | None = None,
) -> None:
    """Assert a ``LossOutput`` equals ``reference = (value, grad,
    ref_grad)``: the value within ``rtol`` (relative) / ``atol`` (absolute), each gradient within
    ``rtol`` plus an absolute ``1e-4`` of its largest entry (at least 1e-7), or ``grad_atol(b)`` for
    the reference array ``b``. Raises ``AssertionError`` naming the quantity."""
    value, g, rg = reference
    if not hasattr(ours, "loss") or not hasattr(ours, "grad"):
        raise TypeError(f"ours must have .loss and .grad (a LossOutput), got {type(ours).__name__}")
    if not abs(ours.loss - value) <= atol + rtol * abs(value):
        raise AssertionError(f"loss {ours.loss!r} != reference {value!r} (rtol={rtol}, atol={atol})")
    for name, a, b in (("grad", ours.grad, g), ("ref_grad", getattr(ours, "ref_grad", None), rg)):
        if b is None:
            if a is not None:
                raise AssertionError(f"{name}: the reference has none, ours has shape {np.shape(a)}")
            continue
        if a is None:
            raise AssertionError(f"{name}: ours is None, the reference has shape {np.shape(b)}")
        tol = 1e-4 * max(float(np.abs(b).max(initial=0)), 1e-3) if grad_atol is None else grad_atol(b)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=tol, err_msg=name)


def check_matches_pml(
    our_loss: Callable[..., Any],
    pml_loss: Callable[..., Any],
    embeddings: ArrayLike,
    labels: ArrayLike | None = None,
    *,
    indices_tuple: IndicesTuple | None = None,
    ref_emb: ArrayLike | None = None,
    ref_labels: ArrayLike | None = None,
    rtol: float = 1e-4,
    atol: float = 1e-6,
    grad_atol: Callable[[np.ndarray], float] | None = None,
) -> tuple[Any, Reference]:
    """Assert that ``our_loss(...)`` (a mantissa loss) gives pytorch-metric-learning's
    ``pml_loss(...)`` value and gradients on the same inputs (see ``assert_loss_close`` for
    the tolerances). Returns ``(ours, reference)``. Raises ``unittest.SkipTest`` (a skip under
    pytest) when torch or pytorch-metric-learning is not installed."""
    reference = pml_reference(pml_loss, embeddings, labels, indices_tuple, ref_emb, ref_labels)
    kwargs = {
        k: v
        for k, v in (("indices_tuple", indices_tuple), ("ref_emb", ref_emb), ("ref_labels", ref_labels))
        if v is not None
    }
    ours = our_loss(embeddings, labels, **kwargs)
    assert_loss_close(ours, reference, rtol=rtol, atol=atol, grad_atol=grad_atol)
    return ours, reference
