"""Numpy twins of the batch-normalization kernels (``mantissa_embed._engine._norm``).

Same names, signatures, checks and errors as the engine; the statistics and the normalization in
float64 (``_batchnorm`` / ``_batchnorm_grads`` keep their input dtype, for the float64 finite
differences of the tests), the outputs rounded to float32.
"""

from __future__ import annotations

import numpy as np

from .._checks.norm import (
    check_batchnorm_backward_args,
    check_batchnorm_fold_args,
    check_batchnorm_forward_args,
)

__all__ = ["batchnorm_forward", "batchnorm_backward", "batchnorm_fold"]


def _stats(x3):
    """Batch mean and biased variance per channel of x3 (N, C, S)."""
    mean = x3.mean(axis=(0, 2))
    var = ((x3 - mean[:, None]) ** 2).mean(axis=(0, 2))
    return mean, var


def _batchnorm(x3, gamma, beta, mean, invstd):
    """gamma (x3 - mean) invstd + beta over x3 (N, C, S), in the dtype of x3."""
    return (x3 - mean[:, None]) * (invstd * gamma)[:, None] + beta[:, None]


def _batchnorm_grads(dy3, x3, gamma, mean, invstd, training):
    """(dx, dgamma, dbeta) for dy3 (N, C, S); ``training``: mean and invstd are the batch's
    (functions of x3), else constants."""
    xhat = (x3 - mean[:, None]) * invstd[:, None]
    dbeta = dy3.sum(axis=(0, 2))
    dgamma = (dy3 * xhat).sum(axis=(0, 2))
    k = (gamma * invstd)[:, None]
    M = x3.shape[0] * x3.shape[2]
    if not training or M == 0:
        return k * dy3, dgamma, dbeta
    return k * (dy3 - dbeta[:, None] / M - xhat * dgamma[:, None] / M), dgamma, dbeta


def batchnorm_forward(
    x,
    gamma,
    beta,
    running_mean,
    running_var,
    training,
    momentum: float = 0.1,
    eps: float = 1e-5,
    out=None,
    save_mean=None,
    save_invstd=None,
    act=None,
):
    """Batch normalization, as ``torch.nn.functional.batch_norm`` (twin of
    ``mantissa_embed.engine.batchnorm_forward``): returns ``(out, save_mean, save_invstd)``;
    in training the running statistics are updated in place (the variance unbiased)."""
    (
        x,
        gamma,
        beta,
        running_mean,
        running_var,
        training,
        momentum,
        eps,
        out,
        save_mean,
        save_invstd,
        (N, C, S),
        relu,
    ) = check_batchnorm_forward_args(
        x, gamma, beta, running_mean, running_var, training, momentum, eps, out, save_mean, save_invstd, act
    )
    x3 = x.reshape(N, C, S).astype(np.float64)
    if training:
        mean, var = _stats(x3)
        cnt = N * S
        running_mean[...] = (1 - momentum) * running_mean.astype(np.float64) + momentum * mean
        running_var[...] = (1 - momentum) * running_var.astype(np.float64) + momentum * var * cnt / (cnt - 1)
    else:
        mean, var = running_mean.astype(np.float64), running_var.astype(np.float64)
    invstd = 1.0 / np.sqrt(var + eps)
    y = _batchnorm(x3, gamma.astype(np.float64), beta.astype(np.float64), mean, invstd)
    if relu:
        y = np.maximum(y, 0.0)
    out[...] = y.reshape(x.shape)
    save_mean[...] = mean
    save_invstd[...] = invstd
    return out, save_mean, save_invstd


def batchnorm_backward(
    dy,
    x,
    gamma,
    save_mean,
    save_invstd,
    training: bool = True,
    act=None,
    y=None,
    dx=None,
    dgamma=None,
    dbeta=None,
    need_dx: bool = True,
    accumulate: bool = False,
):
    """Gradients of ``batchnorm_forward`` (twin of ``mantissa_embed.engine.batchnorm_backward``):
    returns ``(dx, dgamma, dbeta)``."""
    (dy, x, gamma, save_mean, save_invstd, training, y, dx, dgamma, dbeta, need_dx, accumulate, (N, C, S)) = (
        check_batchnorm_backward_args(
            dy, x, gamma, save_mean, save_invstd, training, act, y, dx, dgamma, dbeta, need_dx, accumulate
        )
    )
    g = dy.reshape(N, C, S).astype(np.float64)
    if y is not None:
        g = np.where(y.reshape(N, C, S) > 0, g, 0.0)
    gx, gg, gb = _batchnorm_grads(
        g,
        x.reshape(N, C, S).astype(np.float64),
        gamma.astype(np.float64),
        save_mean.astype(np.float64),
        save_invstd.astype(np.float64),
        training,
    )
    if need_dx:
        dx[...] = gx.reshape(x.shape)
    if accumulate:
        dgamma[...] = dgamma + gg
        dbeta[...] = dbeta + gb
    else:
        dgamma[...] = gg
        dbeta[...] = gb
    return dx, dgamma, dbeta


def batchnorm_fold(w, b, gamma, beta, running_mean, running_var, eps: float = 1e-5, w_out=None, b_out=None):
    """An eval-mode batch norm folded into the layer before it (twin of
    ``mantissa_embed.engine.batchnorm_fold``): returns ``(w_out, b_out)``."""
    w, b, gamma, beta, running_mean, running_var, eps, w_out, b_out = check_batchnorm_fold_args(
        w, b, gamma, beta, running_mean, running_var, eps, w_out, b_out
    )
    s = gamma.astype(np.float64) / np.sqrt(running_var.astype(np.float64) + eps)
    w_out[...] = w * s.astype(np.float32).reshape((-1,) + (1,) * (w.ndim - 1))
    bias = np.zeros(w.shape[0]) if b is None else b.astype(np.float64)
    b_out[...] = (bias - running_mean) * s + beta
    return w_out, b_out
