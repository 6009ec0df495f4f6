"""The class-weight Parameter of the proxy and classifier losses: initializers, placement, batch check."""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_array, check_labels


def normal_init(shape, rng):
    """``torch.nn.init.normal_``: N(0, 1) entries."""
    return rng.standard_normal(shape)


def kaiming_normal_fan_out_init(shape, rng):
    """``torch.nn.init.kaiming_normal_(mode="fan_out")``: N(0, 2 / shape[0])."""
    return rng.standard_normal(shape) * math.sqrt(2.0 / shape[0])


def kaiming_uniform_init(shape, rng):
    """``torch.nn.init.kaiming_uniform_(a=sqrt(5))``: U(-1/sqrt(shape[1]), 1/sqrt(shape[1]))."""
    bound = 1.0 / math.sqrt(shape[1])
    return rng.uniform(-bound, bound, shape)


def place_parameter(p, shape=None):
    """Keep ``p.data`` / ``p.grad`` float32 C-contiguous (PML's ``cast_types``).

    Another dtype or layout is converted once; a ``grad`` of another shape is reset to zeros.
    ``ValueError`` for NaN/Inf data or, with ``shape``, data of another shape; ``TypeError`` for
    non-numeric data.
    """
    pname = f"parameter {p.name or '?'}"
    d = p.data
    if not (isinstance(d, np.ndarray) and d.dtype == np.float32 and d.flags.c_contiguous):
        p.data = check_array(d, pname).reshape(np.shape(d))
    elif not np.isfinite(d).all():
        raise ValueError(f"{pname} contains NaN or Inf (a diverged optimizer step?)")
    if shape is not None and p.data.shape != tuple(shape):
        raise ValueError(f"{pname} must have shape {tuple(shape)}, got {p.data.shape}")
    g = p.grad
    if not (
        isinstance(g, np.ndarray)
        and g.dtype == np.float32
        and g.flags.c_contiguous
        and g.shape == p.data.shape
    ):
        p.grad = (
            np.ascontiguousarray(g, dtype=np.float32)
            if np.shape(g) == p.data.shape
            else np.zeros_like(p.data)
        )


def check_class_batch(loss, embeddings, labels):
    """Validated (embeddings (N, embedding_size) float32, labels (N,) int64 in
    [0, num_classes)) for a loss with ``embedding_size`` and ``num_classes`` attributes;
    ValueError / TypeError naming the argument otherwise."""
    emb = check_array(embeddings, "embeddings", ndim=2)
    N, D = emb.shape
    if D != loss.embedding_size:
        raise ValueError(
            f"embeddings must have embedding_size={loss.embedding_size} columns, got shape {emb.shape}"
        )
    if labels is None:
        raise ValueError(f"labels are required by {type(loss).__name__}")
    lab = check_labels(labels, "labels", n=N)
    if N and (lab.min() < 0 or lab.max() >= loss.num_classes):
        raise ValueError(
            f"labels must be in [0, num_classes={loss.num_classes}), got values in [{lab.min()}, {lab.max()}]"
        )
    return emb, lab
