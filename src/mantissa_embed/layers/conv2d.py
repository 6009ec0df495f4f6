"""2-D convolution: ``Conv2D``."""

from __future__ import annotations

from .._validation import check_bool, check_int
from .._workspace import Workspace, scratch_frame
from ..parameter import Parameter
from .base_layer import AffineLayer, check_shape, kaiming_uniform_default
from .fusion import Fusion

__all__ = ["Conv2D"]


class Conv2D(AffineLayer):
    """2-D convolution (cross-correlation, as ``torch.nn.Conv2d``) with an optional bias and activation.

    Parameters
    ----------
    out_channels : int >= 1
    kernel_size : int or (int, int)
    stride : int >= 1, default 1
    pad : int >= 0, default 0 (zero padding on every side)
    act : None, "identity", "relu" or "leaky_relu", default None
        Activation applied after the bias (``"relu"``: ``max(0, .)``; ``"leaky_relu"``:
        ``negative_slope * x`` below 0, as ``torch.nn.LeakyReLU``).
    negative_slope : float >= 0, default 0.01 (torch's; used by ``act="leaky_relu"`` only)
    bias : bool, default True
        False: no ``bias`` parameter (as ``torch.nn.Conv2d(..., bias=False)``, e.g. before a
        BatchNorm2D); the kernels get no bias and the backward skips its gradient.

    Input (N, C, H, W) float32 -> output (N, out_channels, HO, WO) with
    ``HO = (H + 2*pad - KH) // stride + 1``. Parameters: ``weight`` (out_channels, C, KH, KW)
    and ``bias`` (out_channels,) (when ``bias``), torch's default initialization. A 1x1
    stride-1 unpadded convolution is one SGEMM per image on the NCHW input. Kernels:
    ``engine.conv2d_forward`` / ``conv2d_backward``; at inference a following MaxPool2D(2)
    runs in the same call (``conv2d_pool2_forward``), two such pairs in one
    (``conv2d_pool2_chain_forward``); not with ``act="leaky_relu"`` (those kernels take identity or
    ReLU; the planner keeps such a layer apart). With no activation, an eval-mode BatchNorm2D after
    it (and a MaxPool2D(2) after that) is folded into the call (``batchnorm_fold``).
    Raises ValueError/TypeError for bad arguments, a non
    4-D input or a kernel larger than the padded input.
    """

    input_ndim = 3
    _POOL_FUSIONS = (
        Fusion("conv2d_pool2_chain_forward", ("maxpool2", "conv2d", "maxpool2"), "_forward_pool2_chain"),
        Fusion("conv2d_pool2_forward", ("maxpool2",), "_forward_pool2"),
    )
    # an eval-mode BatchNorm2D after a convolution with no activation, folded into its weight and bias
    _BN_FUSIONS = (
        Fusion("batchnorm_fold+conv2d_pool2_forward", ("batchnorm2d", "maxpool2"), "_forward_bn"),
        Fusion("batchnorm_fold+conv2d_forward", ("batchnorm2d",), "_forward_bn"),
    )

    def __init__(
        self,
        out_channels: int,
        kernel_size: int | tuple[int, int],
        stride: int | tuple[int, int] = 1,
        pad: int | tuple[int, int] = 0,
        act: str | None = None,
        negative_slope: float = 0.01,
        bias: bool = True,
    ) -> None:
        self.out_channels = check_int(out_channels, "out_channels", minimum=1)
        if isinstance(kernel_size, (tuple, list)):
            if len(kernel_size) != 2:
                raise ValueError(f"kernel_size must be an int or a pair of ints, got {kernel_size!r}")
            kh = check_int(kernel_size[0], "kernel_size[0]", minimum=1)
            kw = check_int(kernel_size[1], "kernel_size[1]", minimum=1)
            self.kernel_size: int | tuple[int, int] = (kh, kw)
        else:
            k = check_int(kernel_size, "kernel_size", minimum=1)
            self.kernel_size = k
            kh = kw = k
        self._k = (kh, kw)
        self.stride = check_int(stride, "stride", minimum=1)
        self.pad = check_int(pad, "pad", minimum=0)
        self.use_bias = check_bool(bias, "bias")
        super().__init__(act, negative_slope)
        self._ws_size = (None, 0)  # (key, workspace floats) of the last kernel call (_scratch)
        self._fold_w = Workspace()
        self._fold_b = Workspace()

    @property
    def forward_fusions(self):
        """The inference fusions this convolution leads (longest first): with MaxPool2D(2)
        pairs, and when it has no activation with a BatchNorm2D folded in (and a MaxPool2D(2));
        none with a leaky ReLU (the fused kernels take identity or ReLU only)."""
        if self.act == "leaky_relu":
            return ()
        if self.act is not None:
            return self._POOL_FUSIONS
        return self._POOL_FUSIONS[:1] + self._BN_FUSIONS[:1] + self._POOL_FUSIONS[1:] + self._BN_FUSIONS[1:]

    def fusion_tags(self):
        return (() if self.act == "leaky_relu" else ("conv2d",)) + super().fusion_tags()

    def _describe(self) -> str:
        extra = (f", stride={self.stride}" if self.stride != 1 else "") + (
            f", pad={self.pad}" if self.pad else ""
        )
        extra += "" if self.use_bias else ", bias=False"
        return f"Conv2D({self.out_channels}, {self.kernel_size!r}{extra}{self._act_describe()})"

    def _config(self):
        ks = list(self.kernel_size) if isinstance(self.kernel_size, tuple) else self.kernel_size
        return {
            "out_channels": self.out_channels,
            "kernel_size": ks,
            "stride": self.stride,
            "pad": self.pad,
            **self._act_config(),
            **({} if self.use_bias else {"bias": False}),
        }

    def output_shape(self, input_shape):
        shape = check_shape(input_shape)
        if len(shape) != 3:
            raise ValueError(
                f"Conv2D expects per-sample input (C, H, W) (X of shape (N, C, H, W)), got {shape}"
            )
        C, H, W = shape
        kh, kw = self._k
        if H + 2 * self.pad < kh or W + 2 * self.pad < kw:
            raise ValueError(
                f"Conv2D kernel {kh}x{kw} is larger than the padded input "
                f"{H + 2 * self.pad}x{W + 2 * self.pad} (input shape {shape}, pad {self.pad})"
            )
        return (
            self.out_channels,
            (H + 2 * self.pad - kh) // self.stride + 1,
            (W + 2 * self.pad - kw) // self.stride + 1,
        )

    def _param_shapes(self, input_shape):
        kh, kw = self._k
        shapes = {"weight": (self.out_channels, input_shape[0], kh, kw)}
        if self.use_bias:
            shapes["bias"] = (self.out_channels,)
        return shapes

    def _build(self, input_shape, rng) -> None:
        C = input_shape[0]
        kh, kw = self._k
        w, b = kaiming_uniform_default(rng, (self.out_channels, C, kh, kw), C * kh * kw, self.use_bias)
        self.weight = Parameter(w, name="weight")
        self.bias = None if b is None else Parameter(b, name="bias")

    def _scratch(self, frame, key, size):
        """``frame.take(size())``: a kernel's workspace from the thread's ``scratch_frame``
        (shared by every layer; it lives for one call), ``size()`` computed again only when
        ``key`` changes."""
        if self._ws_size[0] != key:
            self._ws_size = (key, int(size()))
        return frame.take(self._ws_size[1])

    def _workspace(self, frame, x_shape):
        """The convolution kernels' workspace for input ``x_shape``, from ``frame``."""
        return self._scratch(
            frame,
            ("conv", tuple(x_shape), self.weight.shape),
            lambda: self._backend().conv2d_workspace_size(x_shape, self.weight.shape, self.stride, self.pad),
        )

    def _inference_scratch(self, n, input_shape):
        """The kernels' workspace for ``n`` images (allocated whole; the threads touch their slots only)."""
        w_shape = self._param_shapes(input_shape)["weight"]
        return 4 * int(
            self._backend().conv2d_workspace_size((n,) + tuple(input_shape), w_shape, self.stride, self.pad)
        )

    def _forward(self, X):
        out = self._out.get((X.shape[0],) + self._out_shape)
        with scratch_frame() as frame:
            self._backend().conv2d_forward(
                X,
                self.weight.data,
                self._bias_data(),
                self.stride,
                self.pad,
                out=out,
                workspace=self._workspace(frame, X.shape),
                **self._act_kwargs(),
            )
        self._x, self._y = X, out
        return out

    def _forward_pool2(self, X, pool):
        """Inference: ``pool.forward(self.forward(X))`` for ``pool`` a MaxPool2D(2), in one kernel
        call; returns ``pool``'s output buffer. Clears both layers' backward caches (a
        layer-level backward then raises)."""
        X = self._prep_input(X)
        if not pool.built:
            pool.build(self._out_shape)
        out = pool._out.get((X.shape[0],) + pool._out_shape)
        with scratch_frame() as frame:
            self._backend().conv2d_pool2_forward(
                X,
                self.weight.data,
                self._bias_data(),
                self.stride,
                self.pad,
                out=out,
                workspace=self._workspace(frame, X.shape),
                **self._act_kwargs(),
            )
        self._x = self._y = None
        pool._y = pool._x = None
        return out

    def _folded(self, bn):
        """This convolution's weight and bias with the eval-mode batch norm ``bn`` folded in
        (``batchnorm_fold``, into reused buffers)."""
        be = self._backend()
        return be.batchnorm_fold(
            self.weight.data,
            self._bias_data(),
            bn.weight.data,
            bn.bias.data,
            bn.running_mean,
            bn.running_var,
            bn.eps,
            w_out=self._fold_w.get(self.weight.shape),
            b_out=self._fold_b.get((self.out_channels,)),
        )

    def _forward_bn(self, X, bn, pool=None):
        """Inference: ``bn.forward(self.forward(X))`` for ``bn`` a BatchNorm2D in eval mode (then
        ``pool.forward`` of that for ``pool`` a MaxPool2D(2)), as one ``conv2d_forward`` (or
        ``conv2d_pool2_forward``) with the folded weight and bias and ``bn``'s activation (float32
        rounding differs from the layer passes). A ``bn`` in training mode runs the layers one by
        one. Returns the last layer's output buffer; clears the layers' backward caches."""
        layers = (self, bn) if pool is None else (self, bn, pool)
        if bn.training:
            h = X
            for layer in layers:
                h = layer.forward(h)
            return h
        X = self._prep_input(X)
        for prev, layer in zip(layers, layers[1:]):
            if not layer.built:
                layer.build(prev._out_shape)
        last = layers[-1]
        out = last._out.get((X.shape[0],) + last._out_shape)
        w, b = self._folded(bn)
        call = self._backend().conv2d_forward if pool is None else self._backend().conv2d_pool2_forward
        with scratch_frame() as frame:
            call(
                X, w, b, self.stride, self.pad, out=out, workspace=self._workspace(frame, X.shape), act=bn.act
            )
        for layer in layers:
            layer._x = layer._y = None
        return out

    def _forward_pool2_chain(self, X, pool, conv, pool2):
        """Inference: ``conv._forward_pool2(self._forward_pool2(X, pool), pool2)`` (two built
        Conv2D + MaxPool2D(2) pairs) in one kernel call, bitwise the same. Returns ``pool2``'s
        output buffer; clears the four layers' backward caches."""
        X = self._prep_input(X)
        out = pool2._out.get((X.shape[0],) + pool2._out_shape)
        be = self._backend()
        with scratch_frame() as frame:
            ws = self._scratch(
                frame,
                ("chain", X.shape, self.weight.shape, conv.weight.shape),
                lambda: be.conv2d_pool2_chain_workspace_size(
                    X.shape,
                    self.weight.shape,
                    self.stride,
                    self.pad,
                    conv.weight.shape,
                    conv.stride,
                    conv.pad,
                ),
            )
            be.conv2d_pool2_chain_forward(
                X,
                self.weight.data,
                self._bias_data(),
                self.stride,
                self.pad,
                conv.weight.data,
                conv._bias_data(),
                conv.stride,
                conv.pad,
                act1=self.act,
                act2=conv.act,
                out=out,
                workspace=ws,
                negative_slope1=self.negative_slope,
                negative_slope2=conv.negative_slope,
            )
        for layer in (self, pool, conv, pool2):
            layer._x = layer._y = None
        return out

    def _backward_preact(self, dY, need_dx):
        """The backward from dY = d loss / d(pre-activation), the activation's already applied."""
        if not need_dx and not self._trainable():
            return None
        be = self._backend()
        dx = self._dx.get(self._x.shape) if need_dx else None
        # conv2d_backward always computes dw: a frozen weight's goes to a reused scratch buffer
        dw, db, acc = self._grad_targets()
        with scratch_frame() as frame:
            dx, _, _ = be.conv2d_backward(
                self._x,
                self.weight.data,
                dY,
                self.stride,
                self.pad,
                dx=dx,
                dw=dw,
                db=db,
                need_dx=need_dx,
                accumulate=acc,
                workspace=self._workspace(frame, self._x.shape),
                need_db=self.use_bias,
            )
        self._grads_done(dw, db)
        return dx
