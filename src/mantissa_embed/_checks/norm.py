"""Argument checks of the batch-normalization kernels (``engine.batchnorm_*`` and their twins)."""

from __future__ import annotations

from .activations import act_flag
from .arrays import (
    check_bool,
    check_float,
    check_inplace,
    check_kernel_input,
    check_kernel_output,
    check_outs,
    grad_buf,
)


def bn_geometry(shape, name: str = "x"):
    """``(N, C, S)`` of a batch-norm input (N, C), (N, C, L) or (N, C, H, W): S = L, H*W or 1."""
    if len(shape) not in (2, 3, 4):
        raise ValueError(
            f"{name} must be 2-D (N, C), 3-D (N, C, L) or 4-D (N, C, H, W), got shape {tuple(shape)}"
        )
    S = 1
    for s in shape[2:]:
        S *= s
    return shape[0], shape[1], S


def _channel_vector(a, name, C, inplace: bool = False):
    a = check_inplace(a, name, (C,)) if inplace else check_kernel_input(a, name, 1)
    if a.shape != (C,):
        raise ValueError(f"{name} must have shape ({C},) (one value per channel), got {a.shape}")
    return a


def bn_act_flag(act, name: str = "act"):
    """None/"identity" -> 0, "relu" -> 1; "leaky_relu" or anything else raises (naming ``name``)."""
    flag = act_flag(act, name)
    if flag > 1:
        raise ValueError(f"{name} must be None, 'identity' or 'relu' for a batch norm, got {act!r}")
    return flag


def check_momentum(momentum, name: str = "momentum"):
    """A momentum in [0, 1] as a float (TypeError / ValueError naming ``name``)."""
    momentum = check_float(momentum, name)
    if not 0.0 <= momentum <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {momentum}")
    return momentum


def check_eps(eps, name: str = "eps"):
    """An eps > 0 as a float (TypeError / ValueError naming ``name``)."""
    return check_float(eps, name, 0.0, strict=True)


def check_training_size(N, S):
    if N * S <= 1:
        raise ValueError(
            f"Expected more than 1 value per channel when training, got {N * S} "
            f"(batch {N}, {S} values per sample and channel)"
        )


def check_batchnorm_forward_args(
    x, gamma, beta, running_mean, running_var, training, momentum, eps, out, save_mean, save_invstd, act
):
    """Validated arguments of ``batchnorm_forward`` plus ``(N, C, S)`` and the ReLU flag."""
    x = check_kernel_input(x, "x")
    N, C, S = bn_geometry(x.shape)
    gamma = _channel_vector(gamma, "gamma", C)
    beta = _channel_vector(beta, "beta", C)
    training = check_bool(training, "training")
    running_mean = _channel_vector(running_mean, "running_mean", C, inplace=training)
    running_var = _channel_vector(running_var, "running_var", C, inplace=training)
    momentum = check_momentum(momentum)
    eps = check_eps(eps)
    relu = bn_act_flag(act)
    if training:
        check_training_size(N, S)
    out = check_kernel_output(out, "out", x.shape)
    save_mean = check_kernel_output(save_mean, "save_mean", (C,))
    save_invstd = check_kernel_output(save_invstd, "save_invstd", (C,))
    ins = [(x, "x"), (gamma, "gamma"), (beta, "beta")]
    stats = [(running_mean, "running_mean"), (running_var, "running_var")]
    check_outs(
        [(out, "out"), (save_mean, "save_mean"), (save_invstd, "save_invstd")] + stats, ins, inplace_ok=("x",)
    )
    return (
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
    )


def check_batchnorm_backward_args(
    dy, x, gamma, save_mean, save_invstd, training, act, y, dx, dgamma, dbeta, need_dx, accumulate
):
    """Validated arguments of ``batchnorm_backward`` plus ``(N, C, S)``; dgamma / dbeta new (zeros
    when accumulating) when None, dx None when not ``need_dx``, y None unless ``act`` is "relu"."""
    x = check_kernel_input(x, "x")
    N, C, S = bn_geometry(x.shape)
    dy = check_kernel_input(dy, "dy")
    if dy.shape != x.shape:
        raise ValueError(f"dy must have the shape of x {x.shape}, got {dy.shape}")
    gamma = _channel_vector(gamma, "gamma", C)
    save_mean = _channel_vector(save_mean, "save_mean", C)
    save_invstd = _channel_vector(save_invstd, "save_invstd", C)
    training = check_bool(training, "training")
    if bn_act_flag(act):
        if y is None:
            raise ValueError("y (the forward output) is required when act='relu'")
        y = check_kernel_input(y, "y")
        if y.shape != x.shape:
            raise ValueError(f"y must have the shape of x {x.shape}, got {y.shape}")
    else:
        y = None
    need_dx = check_bool(need_dx, "need_dx")
    accumulate = check_bool(accumulate, "accumulate")
    dx = check_kernel_output(dx, "dx", x.shape) if need_dx else None
    dgamma = grad_buf(dgamma, "dgamma", (C,), accumulate)
    dbeta = grad_buf(dbeta, "dbeta", (C,), accumulate)
    ins = [
        (dy, "dy"),
        (x, "x"),
        (y, "y"),
        (gamma, "gamma"),
        (save_mean, "save_mean"),
        (save_invstd, "save_invstd"),
    ]
    check_outs([(dx, "dx"), (dgamma, "dgamma"), (dbeta, "dbeta")], ins, inplace_ok=("dy",))
    return (
        dy,
        x,
        gamma,
        save_mean,
        save_invstd,
        training,
        y,
        dx,
        dgamma,
        dbeta,
        need_dx,
        accumulate,
        (N, C, S),
    )


def check_batchnorm_fold_args(w, b, gamma, beta, running_mean, running_var, eps, w_out, b_out):
    """Validated arguments of ``batchnorm_fold``: w (F, ...) and its F-channel batch norm."""
    w = check_kernel_input(w, "w")
    if w.ndim < 1 or w.shape[0] < 1:
        raise ValueError(f"w must have at least one dimension and one output channel, got shape {w.shape}")
    F = w.shape[0]
    if b is not None:
        b = _channel_vector(b, "b", F)
    gamma = _channel_vector(gamma, "gamma", F)
    beta = _channel_vector(beta, "beta", F)
    running_mean = _channel_vector(running_mean, "running_mean", F)
    running_var = _channel_vector(running_var, "running_var", F)
    eps = check_eps(eps)
    w_out = check_kernel_output(w_out, "w_out", w.shape)
    b_out = check_kernel_output(b_out, "b_out", (F,))
    ins = [
        (w, "w"),
        (b, "b"),
        (gamma, "gamma"),
        (beta, "beta"),
        (running_mean, "running_mean"),
        (running_var, "running_var"),
    ]
    check_outs([(w_out, "w_out"), (b_out, "b_out")], ins)
    return w, b, gamma, beta, running_mean, running_var, eps, w_out, b_out
