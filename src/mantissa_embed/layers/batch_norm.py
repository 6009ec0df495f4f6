"""Batch normalization: ``BatchNorm2D`` and ``BatchNorm1D``."""

from __future__ import annotations

import numpy as np

from .._checks.norm import bn_act_flag, check_eps, check_momentum
from .._validation import check_bool, check_int
from ..parameter import Parameter
from .base_layer import AffineLayer, check_shape

__all__ = ["BatchNorm2D", "BatchNorm1D"]


class _BatchNorm(AffineLayer):
    """The body of both batch norms: per-channel statistics over every axis but the channel
    axis (axis 1 of the batch), torch's semantics (``torch.nn.BatchNorm1d`` / ``2d``)."""

    #: the per-sample ranks the layer accepts
    _ndims: tuple[int, ...] = ()
    #: the backward kernel may write dx over dy (per channel, the sums over dy come first)
    _dx_may_alias_dy = True

    def __init__(
        self,
        momentum: float = 0.1,
        eps: float = 1e-5,
        act: str | None = None,
        num_features: int | None = None,
    ) -> None:
        self.momentum = check_momentum(momentum)
        self.eps = check_eps(eps)
        self.num_features = (
            None if num_features is None else check_int(num_features, "num_features", minimum=1)
        )
        bn_act_flag(act)
        super().__init__(act)
        self.running_mean: np.ndarray | None = None
        self.running_var: np.ndarray | None = None
        self._save_mean: np.ndarray | None = None
        self._save_invstd: np.ndarray | None = None
        self._batch_stats = True  # the last forward normalized by the batch statistics
        self.frozen_stats = False  # freeze_statistics(): running statistics in training too

    def freeze_statistics(self, frozen: bool = True):
        """Frozen statistics (``frozen=True``): normalize by ``running_mean`` / ``running_var``
        in training mode too and leave them unchanged (torch: an eval-mode BatchNorm inside a
        train-mode net, or torchvision's ``FrozenBatchNorm2d``), the usual way to fine-tune a
        pretrained trunk on small batches. The backward is then the affine map's:
        ``dx = dy * weight / sqrt(running_var + eps)``, ``d weight = sum(dy * x_hat)``,
        ``d bias = sum(dy)``; ``weight`` and ``bias`` still train unless frozen themselves
        (``requires_grad``). ``frozen=False`` restores batch statistics in training. Not part of
        the weights; ``Embedder.save`` records it. Returns self; TypeError for a non-bool."""
        self.frozen_stats = check_bool(frozen, "frozen")
        return self

    def _config(self):
        return {
            "momentum": self.momentum,
            "eps": self.eps,
            "act": self.act,
            "num_features": self.num_features,
        }

    def _describe(self) -> str:
        args = [f"momentum={self.momentum}"] if self.momentum != 0.1 else []
        args += [f"eps={self.eps}"] if self.eps != 1e-5 else []
        args += [f"act={self.act!r}"] if self.act else []
        return f"{type(self).__name__}({', '.join(args)})"

    def output_shape(self, input_shape):
        shape = check_shape(input_shape)
        name = type(self).__name__
        if len(shape) not in self._ndims:
            raise ValueError(f"{name} expects per-sample input {self._expects}, got {shape}")
        if self.num_features is not None and shape[0] != self.num_features:
            raise ValueError(
                f"{name}(num_features={self.num_features}) got {shape[0]} channels "
                f"(per-sample input shape {shape})"
            )
        return shape

    def _param_shapes(self, input_shape):
        return {"weight": (input_shape[0],), "bias": (input_shape[0],)}

    def _buffer_shapes(self, input_shape):
        return {"running_mean": (input_shape[0],), "running_var": (input_shape[0],)}

    def _build(self, input_shape, rng) -> None:
        C = input_shape[0]
        self.weight = Parameter(np.ones(C), name="weight")
        self.bias = Parameter(np.zeros(C), name="bias")
        self.running_mean = np.zeros(C, dtype=np.float32)
        self.running_var = np.ones(C, dtype=np.float32)
        self._save_mean = np.empty(C, dtype=np.float32)
        self._save_invstd = np.empty(C, dtype=np.float32)

    def named_buffers(self):
        return [("running_mean", self.running_mean), ("running_var", self.running_var)] if self.built else []

    def _forward(self, X):
        out = self._out.get(X.shape)
        batch = self.training and not self.frozen_stats
        self._backend().batchnorm_forward(
            X,
            self.weight.data,
            self.bias.data,
            self.running_mean,
            self.running_var,
            batch,
            self.momentum,
            self.eps,
            out=out,
            save_mean=self._save_mean,
            save_invstd=self._save_invstd,
            act=self.act,
        )
        self._x, self._y, self._batch_stats = X, out, batch
        return out

    def _backward_act(self, dY, need_dx, act):
        if not need_dx and not self._trainable():
            return None
        dx = self._dx.get(self._x.shape) if need_dx else None
        # the kernel computes d weight / d bias (with batch statistics dx needs them): a frozen
        # parameter's go to a reused scratch buffer
        dgamma, dbeta, acc = self._grad_targets()
        dx, _, _ = self._backend().batchnorm_backward(
            dY,
            self._x,
            self.weight.data,
            self._save_mean,
            self._save_invstd,
            training=self._batch_stats,
            act=act,
            y=self._y,
            dx=dx,
            dgamma=dgamma,
            dbeta=dbeta,
            need_dx=need_dx,
            accumulate=acc,
        )
        self._grads_done(dgamma, dbeta)
        return dx

    def _backward(self, dY, need_dx):
        return self._backward_act(dY, need_dx, self.act)  # the ReLU's mask inside the kernel

    def _backward_preact(self, dY, need_dx):
        """The backward from dY = d loss / d(pre-activation), the ReLU's mask already applied."""
        return self._backward_act(dY, need_dx, None)


class BatchNorm2D(_BatchNorm):
    """Batch normalization over the channels of images (as ``torch.nn.BatchNorm2d``, Ioffe & Szegedy 2015, "Batch
    Normalization", ICML), with an optional ReLU on its output.

    Parameters
    ----------
    momentum : float in [0, 1], default 0.1
        ``running = (1 - momentum) * running + momentum * batch statistic`` at each training forward.
    eps : float > 0, default 1e-5
        Added to the variance.
    act : None, "identity" or "relu", default None
        ``"relu"``: ``max(0, .)`` on the output, in the same pass (and its mask in the backward's).
    num_features : int >= 1 or None, default None
        The number of channels, inferred at build; when given, checked against the input.

    Input (N, C, H, W) float32, output the same shape. Parameters: ``weight`` (gamma, ones) and
    ``bias`` (beta, zeros), (C,); buffers ``running_mean`` (zeros) and ``running_var`` (ones),
    (C,), saved by ``Sequential.state_arrays``. Training (``train()``): normalize by the batch's
    mean and biased variance over N*H*W, update the running statistics (the variance unbiased;
    fewer than two values per channel raise ValueError); ``eval()``: normalize by the running
    statistics; after a Conv2D with no activation a Sequential folds it into the convolution's
    weight and bias (``batchnorm_fold``). ``freeze_statistics()``: the running statistics in
    training too, left unchanged (fine-tuning; ``Sequential.freeze_batchnorm``). Kernels: ``engine.batchnorm_forward`` /
    ``batchnorm_backward``. Raises ValueError / TypeError naming a bad argument (momentum outside
    [0, 1], eps <= 0).
    """

    input_ndim = 3
    _ndims = (3,)
    _expects = "(C, H, W) (X of shape (N, C, H, W))"

    def fusion_tags(self):
        return ("batchnorm2d",) + super().fusion_tags()


class BatchNorm1D(_BatchNorm):
    """Batch normalization over features (as ``torch.nn.BatchNorm1d``, Ioffe & Szegedy 2015, "Batch
    Normalization", ICML), with an optional ReLU on its output.

    Parameters
    ----------
    momentum : float in [0, 1], default 0.1
        ``running = (1 - momentum) * running + momentum * batch statistic`` at each training forward.
    eps : float > 0, default 1e-5
        Added to the variance.
    act : None, "identity" or "relu", default None
        ``"relu"``: ``max(0, .)`` on the output, in the same pass (and its mask in the backward's).
    num_features : int >= 1 or None, default None
        The number of channels, inferred at build; when given, checked against the input.

    Input (N, C) or (N, C, L) float32, output the same shape. Parameters: ``weight`` (gamma, ones)
    and ``bias`` (beta, zeros), (C,); buffers ``running_mean`` (zeros) and ``running_var`` (ones),
    (C,), saved by ``Sequential.state_arrays``. Training (``train()``): normalize by the batch's
    mean and biased variance over N (or N*L), update the running statistics (the variance
    unbiased; fewer than two values per channel raise ValueError); ``eval()``: normalize by the
    running statistics. ``freeze_statistics()``: the running statistics in training too, left
    unchanged (fine-tuning; ``Sequential.freeze_batchnorm``). Kernels: ``engine.batchnorm_forward`` / ``batchnorm_backward``.
    Raises ValueError / TypeError naming a bad argument (momentum outside [0, 1], eps <= 0).
    """

    _ndims = (1, 2)
    _expects = "(C,) or (C, L) (X of shape (N, C) or (N, C, L))"
