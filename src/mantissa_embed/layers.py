"""Layers and the :class:`Sequential` container: explicit forward and backward, no autograd.

Every layer computes through a backend module (``"mantissa"``: the C engine through
:mod:`mantissa_embed.engine`; ``"numpy"``: the numpy twins in :mod:`mantissa_embed._reference`),
both with the same functions and signatures.

Contract (``docs/architecture.md``)
-----------------------------------
- Images are float32 NCHW; shapes are inferred at the first forward (or :meth:`build`).
  ``input_shape`` / ``output_shape`` are **per-sample** shapes, without the batch axis.
- ``forward(X) -> Y`` caches what the backward needs; ``backward(dY) -> dX`` uses the cache of
  the *last* forward and **accumulates** into every ``Parameter.grad`` (as PyTorch does).
- Buffers: a layer keeps its output, gradient and scratch buffers and reuses them while the
  batch shape does not grow (a smaller batch uses a leading slice), so steady-state training
  allocates nothing per batch. Consequently the array returned by a *layer's* ``forward`` or
  ``backward`` is owned by the layer and is overwritten by its next call; copy what you keep.
  :meth:`Sequential.forward` and :meth:`Sequential.backward` return fresh arrays (one small copy
  of the final result), so their results are always safe to keep.
- Initialization: PyTorch's defaults for ``nn.Conv2d`` / ``nn.Linear``, i.e. Kaiming-uniform with
  ``a = sqrt(5)`` (He et al. 2015, "Delving Deep into Rectifiers", ICCV), which reduces to
  ``weight, bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` with ``fan_in = C*KH*KW`` (conv) or
  ``in_features`` (dense); drawn from a ``numpy.random.Generator`` seeded by the Sequential's
  ``seed``, layer by layer, weight then bias.
"""
from __future__ import annotations

import math
import numbers
from time import perf_counter as _perf_counter

import numpy as np

from ._validation import as_generator, check_array, check_int
from .backend import BACKENDS, get_backend
from .parameter import Parameter

__all__ = ["Layer", "Conv2D", "MaxPool2D", "Flatten", "Dense", "ReLU", "Sequential"]

_ACTIVATIONS = ("identity", "relu")


def _check_act(act):
    """None/"identity" -> None, "relu" -> "relu"; anything else raises."""
    if act is None:
        return None
    if not isinstance(act, str):
        raise TypeError(f"act must be None, 'identity' or 'relu', got {type(act).__name__}")
    if act not in _ACTIVATIONS:
        raise ValueError(f"act must be None, 'identity' or 'relu', got {act!r}")
    return None if act == "identity" else act


def _check_shape(shape, name="input_shape"):
    if isinstance(shape, (str, bytes)) or isinstance(shape, numbers.Number):
        raise TypeError(f"{name} must be a tuple of ints, got {type(shape).__name__}")
    try:
        shape = tuple(shape)
    except TypeError:
        raise TypeError(f"{name} must be a tuple of ints, got {type(shape).__name__}") from None
    if len(shape) == 0:
        raise ValueError(f"{name} must have at least one dimension (per-sample shape), got ()")
    if all(type(s) is int and s >= 1 for s in shape):
        return shape
    return tuple(check_int(s, f"{name}[{i}]", minimum=1) for i, s in enumerate(shape))


class _Buffer:
    """A reusable array: reallocated only when the requested batch outgrows it.

    ``get((N, *rest))`` returns the leading ``N`` rows of a capacity array (C-contiguous).
    """

    __slots__ = ("_arr", "_dtype")

    def __init__(self, dtype=np.float32):
        self._arr = None
        self._dtype = dtype

    def get(self, shape):
        a = self._arr
        if a is None or a.shape[1:] != tuple(shape[1:]) or a.shape[0] < shape[0]:
            a = self._arr = np.empty(shape, dtype=self._dtype)
        return a[:shape[0]]

    def clear(self):
        self._arr = None


class _Workspace(_Buffer):
    """A 1-D float32 scratch :class:`_Buffer` whose size, a function of the batch size, is
    recomputed only when the batch size changes: ``sized(n, size)`` with ``size()`` -> floats."""

    __slots__ = ("_key", "_n")

    def __init__(self):
        super().__init__()
        self._key = None
        self._n = 0

    def sized(self, n, size):
        if self._key != n:
            self._n = size()
            self._key = n
        return self.get((self._n,))


class Layer:
    """Base class of the layers.

    Subclasses implement ``output_shape(input_shape)``, ``_build(input_shape, rng)`` (when they
    have parameters), ``_forward(X)``, ``_backward(dY, need_dx)`` and ``_config()``.

    Attributes: ``built`` (bool), ``input_shape`` (per-sample tuple or None), ``training`` (bool),
    ``backend`` ("mantissa" or "numpy").
    """

    #: number of per-sample dimensions the layer accepts (None: any)
    input_ndim = None

    def __init__(self):
        self.built = False
        self.input_shape = None
        self.training = True
        self.backend = "mantissa"
        self._be = None
        self._x = None
        self._y = None

    # -- configuration -----------------------------------------------------------------
    def set_backend(self, name):
        """Compute with backend ``name`` ("mantissa" or "numpy"). Raises ValueError otherwise."""
        self._be = get_backend(name)
        self.backend = name
        return self

    def _backend(self):
        if self._be is None:
            self._be = get_backend(self.backend)
        return self._be

    def train(self, mode=True):
        """Set training mode (a flag; no layer here behaves differently). Returns self."""
        self.training = bool(mode)
        return self

    def eval(self):
        """Set evaluation mode. Returns self."""
        return self.train(False)

    def get_config(self):
        """JSON-able constructor arguments plus ``"type"`` (the class name)."""
        return {"type": type(self).__name__, **self._config()}

    def _config(self):
        return {}

    # -- shapes and parameters -----------------------------------------------------------
    def output_shape(self, input_shape):
        """Per-sample output shape for a per-sample ``input_shape``. Raises ValueError."""
        raise NotImplementedError

    def build(self, input_shape, rng=None):
        """Create the parameters for the per-sample ``input_shape``.

        ``rng``: an int seed or ``numpy.random.Generator`` (None: seed 0). Building again with
        the same shape keeps the parameters; a different shape raises ValueError.
        """
        shape = _check_shape(input_shape)
        if self.built:
            if shape != self.input_shape:
                raise ValueError(f"{type(self).__name__} was built for input shape {self.input_shape}, "
                                 f"got {shape}")
            return self
        out_shape = self.output_shape(shape)  # validates
        self._build(shape, as_generator(0 if rng is None else rng, "rng"))
        self._out_shape = out_shape
        self.input_shape = shape
        self.built = True
        return self

    def _build(self, input_shape, rng):
        pass

    def _param_shapes(self, input_shape):
        """``{name: shape}`` of the parameters ``build(input_shape)`` creates (nothing allocated)."""
        return {}

    def parameters(self):
        """The layer's ``Parameter`` objects (empty list when it has none)."""
        return []

    def named_parameters(self):
        """``[(name, Parameter), ...]`` ("weight", "bias")."""
        return [(p.name, p) for p in self.parameters()]

    def zero_grad(self):
        for p in self.parameters():
            p.zero_grad()

    # -- passes ----------------------------------------------------------------------------
    def _prep_input(self, X):
        if not (type(X) is np.ndarray and X.dtype == np.float32 and X.flags.c_contiguous):
            X = check_array(X, "X", finite=False)
        if X.ndim < 2:
            raise ValueError(f"X must have a batch axis (N, ...), got shape {X.shape}")
        if not self.built:
            self.build(X.shape[1:])
        elif X.shape[1:] != self.input_shape:
            raise ValueError(f"X must have shape (N, {', '.join(map(str, self.input_shape))}) "
                             f"for this {type(self).__name__}, got {X.shape}")
        return X

    def forward(self, X):
        """Y = layer(X). X: (N, *input_shape) float32. Returns a layer-owned buffer (see module doc)."""
        X = self._prep_input(X)
        return self._forward(X)

    __call__ = forward

    def backward(self, dY, need_dx=True):
        """Gradient w.r.t. the input of the last forward, for the upstream gradient dY
        (the shape of that forward's output). Accumulates into the parameters' ``grad``.
        Returns dX (a layer-owned buffer), or None when ``need_dx`` is False.
        Raises RuntimeError before any forward, ValueError for a wrong dY shape."""
        if self._y is None:
            raise RuntimeError(f"{type(self).__name__}.backward called before forward")
        if not (type(dY) is np.ndarray and dY.dtype == np.float32 and dY.flags.c_contiguous):
            dY = check_array(dY, "dY", finite=False)
        if dY.shape != self._y.shape:
            raise ValueError(f"dY must have the shape of the last forward output {self._y.shape}, got {dY.shape}")
        return self._backward(dY, bool(need_dx))

    def _forward(self, X):
        raise NotImplementedError

    def _backward(self, dY, need_dx):
        raise NotImplementedError

    def _describe(self):
        cfg = self._config()
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in cfg.items())})"

    def __repr__(self):
        return self._describe()


def _kaiming_uniform_default(rng, w_shape, fan_in):
    """torch's default init of Conv2d/Linear: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias."""
    bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
    w = rng.uniform(-bound, bound, size=w_shape)
    b = rng.uniform(-bound, bound, size=(w_shape[0],))
    return w, b


class Conv2D(Layer):
    """2-D convolution (cross-correlation, as ``torch.nn.Conv2d``) with bias and an optional ReLU.

    Parameters
    ----------
    out_channels : int >= 1
    kernel_size : int or (int, int)
    stride : int >= 1, default 1
    pad : int >= 0, default 0 (zero padding on every side)
    act : None, "identity" or "relu", default None
        Activation applied after the bias (``"relu"``: ``max(0, .)``).

    Input (N, C, H, W) float32 -> output (N, out_channels, HO, WO) with
    ``HO = (H + 2*pad - KH) // stride + 1``. Parameters: ``weight`` (out_channels, C, KH, KW)
    and ``bias`` (out_channels,), torch's default initialization (see module doc).
    Kernel: im2col + SGEMM (``engine.conv2d_forward`` / ``conv2d_backward``).
    Raises ValueError/TypeError for bad arguments, a non 4-D input or a kernel larger than
    the padded input.
    """

    input_ndim = 3

    def __init__(self, out_channels, kernel_size, stride=1, pad=0, act=None):
        super().__init__()
        self.out_channels = check_int(out_channels, "out_channels", minimum=1)
        if isinstance(kernel_size, (tuple, list)):
            if len(kernel_size) != 2:
                raise ValueError(f"kernel_size must be an int or a pair of ints, got {kernel_size!r}")
            kh = check_int(kernel_size[0], "kernel_size[0]", minimum=1)
            kw = check_int(kernel_size[1], "kernel_size[1]", minimum=1)
            self.kernel_size = (kh, kw)
        else:
            k = check_int(kernel_size, "kernel_size", minimum=1)
            self.kernel_size = k
            kh = kw = k
        self._k = (kh, kw)
        self.stride = check_int(stride, "stride", minimum=1)
        self.pad = check_int(pad, "pad", minimum=0)
        self.act = _check_act(act)
        self.weight = None
        self.bias = None
        self._out = _Buffer()
        self._dpre = _Buffer()
        self._dx = _Buffer()
        self._ws = _Workspace()
        self._chain_ws = _Workspace()

    def _describe(self):
        extra = (f", stride={self.stride}" if self.stride != 1 else "") + (f", pad={self.pad}" if self.pad else "")
        act = f", act={self.act!r}" if self.act else ""
        return f"Conv2D({self.out_channels}, {self.kernel_size!r}{extra}{act})"

    def _config(self):
        ks = list(self.kernel_size) if isinstance(self.kernel_size, tuple) else self.kernel_size
        return {"out_channels": self.out_channels, "kernel_size": ks, "stride": self.stride,
                "pad": self.pad, "act": self.act}

    def output_shape(self, input_shape):
        shape = _check_shape(input_shape)
        if len(shape) != 3:
            raise ValueError(f"Conv2D expects per-sample input (C, H, W) (X of shape (N, C, H, W)), got {shape}")
        C, H, W = shape
        kh, kw = self._k
        if H + 2 * self.pad < kh or W + 2 * self.pad < kw:
            raise ValueError(f"Conv2D kernel {kh}x{kw} is larger than the padded input "
                             f"{H + 2 * self.pad}x{W + 2 * self.pad} (input shape {shape}, pad {self.pad})")
        return (self.out_channels, (H + 2 * self.pad - kh) // self.stride + 1,
                (W + 2 * self.pad - kw) // self.stride + 1)

    def _param_shapes(self, input_shape):
        kh, kw = self._k
        return {"weight": (self.out_channels, input_shape[0], kh, kw), "bias": (self.out_channels,)}

    def _build(self, input_shape, rng):
        C = input_shape[0]
        kh, kw = self._k
        w, b = _kaiming_uniform_default(rng, (self.out_channels, C, kh, kw), C * kh * kw)
        self.weight = Parameter(w, name="weight")
        self.bias = Parameter(b, name="bias")

    def parameters(self):
        return [self.weight, self.bias] if self.built else []

    def _workspace(self, x_shape):
        return self._ws.sized(x_shape[0], lambda: self._backend().conv2d_workspace_size(
            x_shape, self.weight.shape, self.stride, self.pad))

    def _forward(self, X):
        be = self._backend()
        out = self._out.get((X.shape[0],) + self._out_shape)
        # bias and ReLU are fused into the kernel's store (one pass over the output)
        be.conv2d_forward(X, self.weight.data, self.bias.data, self.stride, self.pad, out=out,
                          workspace=self._workspace(X.shape), act=self.act)
        self._x, self._y = X, out
        return out

    def _forward_pool2(self, X, pool):
        """Inference: ``pool.forward(self.forward(X))`` for ``pool`` a MaxPool2D(2) in one fused
        kernel; returns ``pool``'s output buffer. Leaves no backward caches (both layers' are
        cleared, so a layer-level backward raises instead of using stale ones)."""
        X = self._prep_input(X)
        if not pool.built:
            pool.build(self._out_shape)
        out = pool._out.get((X.shape[0],) + pool._out_shape)
        self._backend().conv2d_pool2_forward(X, self.weight.data, self.bias.data, self.stride, self.pad,
                                             out=out, workspace=self._workspace(X.shape), act=self.act)
        self._x = self._y = None
        pool._y = pool._x = None
        return out

    def _forward_pool2_chain(self, X, pool, conv, pool2):
        """Inference: ``conv._forward_pool2(self._forward_pool2(X, pool), pool2)`` (two Conv2D +
        MaxPool2D(2) pairs, built) in one engine call, bitwise the same: blocks of images go
        through both stages while in cache (conv2d_pool2_chain_forward). Returns ``pool2``'s
        output buffer; leaves no backward caches in the four layers."""
        X = self._prep_input(X)
        out = pool2._out.get((X.shape[0],) + pool2._out_shape)
        be = self._backend()
        ws = self._chain_ws.sized(X.shape[0], lambda: be.conv2d_pool2_chain_workspace_size(
            X.shape, self.weight.shape, self.stride, self.pad, conv.weight.shape, conv.stride, conv.pad))
        be.conv2d_pool2_chain_forward(X, self.weight.data, self.bias.data, self.stride, self.pad,
                                      conv.weight.data, conv.bias.data, conv.stride, conv.pad,
                                      act1=self.act, act2=conv.act, out=out, workspace=ws)
        for layer in (self, pool, conv, pool2):
            layer._x = layer._y = None
        return out

    def _backward(self, dY, need_dx):
        if self.act == "relu":
            dY = self._backend().relu_backward(dY, self._y, dx=self._dpre.get(dY.shape))
        return self._backward_preact(dY, need_dx)

    def _backward_preact(self, dY, need_dx):
        """The backward from dY = d loss / d(pre-activation), the ReLU's mask already applied
        (Sequential fuses it into a following MaxPool2D's backward)."""
        be = self._backend()
        dx = self._dx.get(self._x.shape) if need_dx else None
        dx, _, _ = be.conv2d_backward(self._x, self.weight.data, dY, self.stride, self.pad, dx=dx,
                                      dw=self.weight.grad, db=self.bias.grad, need_dx=need_dx,
                                      accumulate=True, workspace=self._workspace(self._x.shape))
        return dx


class MaxPool2D(Layer):
    """2-D max pooling (as ``torch.nn.MaxPool2d`` with no padding, floor mode).

    Parameters
    ----------
    size : int >= 1
        Window height and width.
    stride : int >= 1 or None, default None (= ``size``)

    Input (N, C, H, W) -> (N, C, (H - size)//stride + 1, (W - size)//stride + 1). The backward
    routes each gradient to the argmax of its window (int32 offsets kept by the forward;
    ties: the first maximum). Raises ValueError for a window larger than the input.
    """

    input_ndim = 3

    def __init__(self, size, stride=None):
        super().__init__()
        self.size = check_int(size, "size", minimum=1)
        self.stride = self.size if stride is None else check_int(stride, "stride", minimum=1)
        self._stride_arg = stride
        self._out = _Buffer()
        self._arg = _Buffer(np.int32)
        self._dx = _Buffer()

    def _config(self):
        return {"size": self.size, "stride": self._stride_arg}

    def _describe(self):
        extra = f", stride={self.stride}" if self.stride != self.size else ""
        return f"MaxPool2D({self.size}{extra})"

    def output_shape(self, input_shape):
        shape = _check_shape(input_shape)
        if len(shape) != 3:
            raise ValueError(f"MaxPool2D expects per-sample input (C, H, W) (X of shape (N, C, H, W)), got {shape}")
        C, H, W = shape
        if H < self.size or W < self.size:
            raise ValueError(f"MaxPool2D window {self.size}x{self.size} is larger than the input {H}x{W}")
        return (C, (H - self.size) // self.stride + 1, (W - self.size) // self.stride + 1)

    def _forward(self, X):
        oshape = (X.shape[0],) + self._out_shape
        out, arg = self._backend().maxpool2d_forward(X, self.size, self.stride, out=self._out.get(oshape),
                                                     argmax=self._arg.get(oshape))
        self._x_shape, self._y, self._argmax = X.shape, out, arg
        self._x = None
        return out

    def _backward(self, dY, need_dx):
        if not need_dx:
            return None
        return self._backend().maxpool2d_backward(dY, self._argmax, self._x_shape,
                                                  dx=self._dx.get(self._x_shape))

    def _backward_relu(self, dY):
        """``backward(dY)`` followed by the backward of the ReLU whose output was pooled (a
        ``Conv2D(act="relu")`` just before), in one kernel: returns d loss / d(that layer's
        pre-activation), a layer-owned buffer. Exact (the mask at each argmax is ``y > 0``)."""
        if self._y is None:
            raise RuntimeError("MaxPool2D.backward called before forward")
        if not (type(dY) is np.ndarray and dY.dtype == np.float32 and dY.flags.c_contiguous):
            dY = check_array(dY, "dY", finite=False)
        if dY.shape != self._y.shape:
            raise ValueError(f"dY must have the shape of the last forward output {self._y.shape}, got {dY.shape}")
        return self._backend().maxpool2d_relu_backward(dY, self._argmax, self._y, self._x_shape,
                                                       dx=self._dx.get(self._x_shape))


class Flatten(Layer):
    """Flatten every sample: (N, d1, d2, ...) -> (N, d1*d2*...). A view, no copy."""

    def output_shape(self, input_shape):
        shape = _check_shape(input_shape)
        return (int(np.prod(shape)),)

    def _forward(self, X):
        self._y = X.reshape(X.shape[0], -1)
        self._x_shape = X.shape
        return self._y

    def _backward(self, dY, need_dx):
        return dY.reshape(self._x_shape) if need_dx else None


class Dense(Layer):
    """Fully connected layer (as ``torch.nn.Linear``) with bias and an optional ReLU.

    Parameters
    ----------
    units : int >= 1
        Output features.
    act : None, "identity" or "relu", default None

    Input (N, in_features) float32 -> (N, units) = X @ weight.T + bias. Parameters:
    ``weight`` (units, in_features) (torch's layout) and ``bias`` (units,), torch's default
    initialization. Raises ValueError for an input that is not 2-D (put ``Flatten()`` first).
    """

    input_ndim = 1

    def __init__(self, units, act=None):
        super().__init__()
        self.units = check_int(units, "units", minimum=1)
        self.act = _check_act(act)
        self.weight = None
        self.bias = None
        self._out = _Buffer()
        self._dpre = _Buffer()
        self._dx = _Buffer()

    def _config(self):
        return {"units": self.units, "act": self.act}

    def _describe(self):
        return f"Dense({self.units}" + (f", act={self.act!r})" if self.act else ")")

    def output_shape(self, input_shape):
        shape = _check_shape(input_shape)
        if len(shape) != 1:
            raise ValueError(f"Dense expects 2-D input (N, features); put Flatten() before it "
                             f"(got per-sample shape {shape})")
        return (self.units,)

    def _param_shapes(self, input_shape):
        return {"weight": (self.units, input_shape[0]), "bias": (self.units,)}

    def _build(self, input_shape, rng):
        w, b = _kaiming_uniform_default(rng, (self.units, input_shape[0]), input_shape[0])
        self.weight = Parameter(w, name="weight")
        self.bias = Parameter(b, name="bias")

    def parameters(self):
        return [self.weight, self.bias] if self.built else []

    def _forward(self, X):
        be = self._backend()
        out = be.dense_forward(X, self.weight.data, self.bias.data, out=self._out.get((X.shape[0], self.units)),
                               act=self.act)
        self._x, self._y = X, out
        return out

    def _backward(self, dY, need_dx):
        be = self._backend()
        if self.act == "relu":
            dY = be.relu_backward(dY, self._y, dx=self._dpre.get(dY.shape))
        dx = self._dx.get(self._x.shape) if need_dx else None
        dx, _, _ = be.dense_backward(self._x, self.weight.data, dY, dx=dx, dw=self.weight.grad,
                                     db=self.bias.grad, need_dx=need_dx, accumulate=True)
        return dx


class ReLU(Layer):
    """Element-wise ``max(0, x)``, any shape. The backward passes dY where the output is > 0."""

    def __init__(self):
        super().__init__()
        self._out = _Buffer()
        self._dx = _Buffer()

    def output_shape(self, input_shape):
        return _check_shape(input_shape)

    def _forward(self, X):
        out = self._backend().relu_forward(X, out=self._out.get(X.shape))
        self._y = out
        return out

    def _backward(self, dY, need_dx):
        if not need_dx:
            return None
        return self._backend().relu_backward(dY, self._y, dx=self._dx.get(dY.shape))


_LAYER_TYPES = {cls.__name__: cls for cls in (Conv2D, MaxPool2D, Flatten, Dense, ReLU)}


class Sequential:
    """A stack of layers applied in order, with explicit forward and backward.

    Parameters
    ----------
    layers : list of Layer
        Distinct layer objects (``Conv2D``, ``MaxPool2D``, ``Flatten``, ``Dense``, ``ReLU``).
        Layers that are already built keep their parameters.
    seed : int >= 0 or numpy.random.Generator, default 0
        Seeds the initialization (a ``numpy.random.Generator``; the global RNG is never used).
    backend : {"mantissa", "numpy"}, default "mantissa"
        ``"mantissa"`` runs the C engine, ``"numpy"`` the reference twins.

    Shapes are inferred at the first :meth:`forward` (or :meth:`build`). :meth:`forward`
    returns a fresh array; :meth:`backward` accumulates into every ``Parameter.grad`` and
    returns a fresh dX. Layers reuse their buffers between batches (no per-batch allocation
    while the batch does not grow). Saving: :meth:`get_config` (JSON-able) plus
    :meth:`state_arrays` (name -> array, for ``numpy.savez``), restored by
    :meth:`from_config` and :meth:`load_state_arrays` (no pickle).

    Raises
    ------
    TypeError
        ``layers`` not a list of Layer objects; a bad ``seed`` type.
    ValueError
        Empty ``layers``, a layer given twice, an unknown ``backend``.
    """

    def __init__(self, layers, seed=0, backend="mantissa"):
        if isinstance(layers, Layer) or isinstance(layers, (str, bytes)):
            raise TypeError("layers must be a list of Layer objects")
        try:
            layers = list(layers)
        except TypeError:
            raise TypeError(f"layers must be a list of Layer objects, got {type(layers).__name__}") from None
        if not layers:
            raise ValueError("layers must not be empty")
        for i, layer in enumerate(layers):
            if not isinstance(layer, Layer):
                raise TypeError(f"layers[{i}] must be a Layer, got {type(layer).__name__}")
        if len({id(layer) for layer in layers}) != len(layers):
            raise ValueError("layers must be distinct objects (the same layer appears twice)")
        if not isinstance(seed, np.random.Generator):
            seed = check_int(seed, "seed", minimum=0)
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.layers = layers
        self.seed = seed
        self.training = True
        self.input_shape = None
        self._n_last = None
        self._profile = None  # list of [forward_s, backward_s] per layer while profiling (Embedder.fit)
        self.set_backend(backend)
        if all(layer.built for layer in layers):
            shape = layers[0].input_shape
            for layer in layers:
                if layer.input_shape != shape:
                    break
                shape = layer.output_shape(shape)
            else:
                self._out_shape = shape
                self.input_shape = layers[0].input_shape

    # -- configuration ---------------------------------------------------------------------
    @property
    def built(self):
        """True once the input shape is known and every parameter exists."""
        return self.input_shape is not None

    def set_backend(self, backend):
        """Run every layer on ``backend`` ("mantissa" or "numpy"). Returns self."""
        get_backend(backend)  # validates
        for layer in self.layers:
            layer.set_backend(backend)
        self.backend = backend
        return self

    def train(self, mode=True):
        """Training mode for every layer (a flag). Returns self."""
        self.training = bool(mode)
        for layer in self.layers:
            layer.train(mode)
        return self

    def eval(self):
        """Evaluation mode for every layer. Returns self."""
        return self.train(False)

    def build(self, input_shape):
        """Create every parameter for the per-sample ``input_shape`` (e.g. ``(1, 28, 28)``).

        Returns self. Raises ValueError when a layer cannot take the shape it receives, or when
        the model is already built for another shape.
        """
        shape = _check_shape(input_shape)
        if self.built:
            if shape != self.input_shape:
                raise ValueError(f"the model is already built for input shape {self.input_shape}, got {shape}")
            return self
        shapes = [shape]
        for layer in self.layers:  # validate the whole chain before creating anything
            shapes.append(layer.output_shape(shapes[-1]))
        rng = as_generator(self.seed)
        for layer, s in zip(self.layers, shapes):
            layer.build(s, rng)
        self._out_shape = shapes[-1]
        self.input_shape = shape
        return self

    def output_shape(self, input_shape=None):
        """Per-sample output shape for ``input_shape`` (default: the built input shape)."""
        if input_shape is None:
            if not self.built:
                raise RuntimeError("the model is not built: call build(input_shape) or forward(X) first")
            return self._out_shape
        shape = _check_shape(input_shape)
        for layer in self.layers:
            shape = layer.output_shape(shape)
        return shape

    def _state_shapes(self, input_shape):
        """``{"0.weight": shape, ...}``: the shapes :meth:`state_arrays` would have after
        ``build(input_shape)``, computed without allocating anything (ValueError for a shape
        a layer cannot take)."""
        shape = _check_shape(input_shape)
        out = {}
        for i, layer in enumerate(self.layers):
            out.update({f"{i}.{name}": s for name, s in layer._param_shapes(shape).items()})
            shape = layer.output_shape(shape)
        return out

    def parameters(self):
        """Every ``Parameter``, in layer order (weight then bias). Empty before build."""
        return [p for layer in self.layers for p in layer.parameters()]

    def named_parameters(self):
        """``[("0.weight", Parameter), ("0.bias", ...), ...]``: layer index and parameter name."""
        return [(f"{i}.{name}", p) for i, layer in enumerate(self.layers)
                for name, p in layer.named_parameters()]

    def num_parameters(self):
        """Total number of learnable scalars (int). Requires a built model."""
        if not self.built:
            raise RuntimeError("the model is not built: call build(input_shape) or forward(X) first")
        return sum(p.size for p in self.parameters())

    def zero_grad(self):
        """Zero every parameter's ``grad`` in place."""
        for p in self.parameters():
            p.zero_grad()

    # -- passes ------------------------------------------------------------------------------
    def forward(self, X):
        """Embed a batch: X (N, *input_shape) -> (N, *output_shape), float32 (a fresh array).

        X is converted to float32 C-contiguous (no copy when it already is) and validated once:
        a conv net needs 4-D NCHW images. The layers keep a reference to their inputs for the
        backward: do not modify X between ``forward`` and ``backward``. A sample's result does not
        depend on the other samples of the batch; its float32 rounding can depend on the batch
        size (the SGEMM chooses its blocking from the shapes: a Dense layer of 64 units takes
        dot products up to 256 rows and the packed kernel above), never on the thread count.
        The first call builds the model for ``X.shape[1:]``; later calls must match it. Raises
        TypeError (non-numeric X), ValueError (NaN/Inf, wrong ndim, a shape that does not match
        the built input shape).
        """
        X = check_array(X, "X")
        first = self.layers[0]
        want = (1 + len(self.input_shape)) if self.built else (
            None if first.input_ndim is None else 1 + first.input_ndim)
        if want is not None and X.ndim != want:
            hint = " (N, C, H, W) float32 images" if want == 4 else ""
            raise ValueError(f"X must be {want}-D{hint}, got shape {X.shape}")
        if X.ndim < 2:
            raise ValueError(f"X must have a batch axis (N, ...), got shape {X.shape}")
        if not self.built:
            if X.shape[0] == 0:
                raise ValueError(f"X must have at least one sample to build the model, got shape {X.shape}")
            self.build(X.shape[1:])
        elif X.shape[1:] != self.input_shape:
            raise ValueError(f"X must have shape (N, {', '.join(map(str, self.input_shape))}) "
                             f"(the model was built for that input), got {X.shape}")
        if X.shape[0] == 0:
            self._n_last = 0
            return np.zeros((0,) + self.output_shape(), dtype=np.float32)
        return np.array(self._forward_valid(X), dtype=np.float32, copy=True)

    def _forward_valid(self, X):
        """The pass of :meth:`forward` on an X it would accept unchanged (float32, C-contiguous,
        finite, the built input shape, N >= 1), without checking it again. Returns the last
        layer's buffer, overwritten by the next pass."""
        h = X
        prof = getattr(self, "_profile", None)
        self._fused_x = None
        if not self.training and self._fusable():
            # inference: Conv2D + MaxPool2D(2) run as one fused kernel (conv2d_pool2_forward: no
            # full-resolution output, no argmax), two such pairs in a row as one call
            # (conv2d_pool2_chain_forward). A later backward() redoes the plain forward.
            layers, i = self.layers, 0
            while i < len(layers):
                t = _perf_counter() if prof is not None else 0.0
                if i in self._chain_at:
                    h = layers[i]._forward_pool2_chain(h, layers[i + 1], layers[i + 2], layers[i + 3])
                    step = 4
                elif i in self._fuse_at:
                    h = layers[i]._forward_pool2(h, layers[i + 1])
                    step = 2
                else:
                    h = layers[i].forward(h)
                    step = 1
                if prof is not None:
                    prof[i][0] += _perf_counter() - t
                i += step
            self._fused_x = X
        elif prof is None:
            for layer in self.layers:
                h = layer.forward(h)
        else:
            for layer, acc in zip(self.layers, prof):
                t = _perf_counter()
                h = layer.forward(h)
                acc[0] += _perf_counter() - t
        self._n_last = X.shape[0]
        return h

    def _fusable(self):
        """Indices i where layers[i] is a Conv2D followed by MaxPool2D(2) (stride 2): fused at
        inference (``_fuse_at``), and those followed by another such pair (``_chain_at``).
        Cached (the layer list is fixed)."""
        at = getattr(self, "_fuse_at", None)
        if at is None:
            L = self.layers
            at = self._fuse_at = frozenset(
                i for i in range(len(L) - 1)
                if type(L[i]) is Conv2D and type(L[i + 1]) is MaxPool2D
                and L[i + 1].size == 2 and L[i + 1].stride == 2)
            self._chain_at = frozenset(i for i in at if i + 2 in at)
        return bool(at)

    __call__ = forward

    def backward(self, dY, need_dx=True):
        """Backpropagate dY (N, *output_shape) = dL/dY through the last forward.

        Accumulates into every ``Parameter.grad``. Returns dL/dX (a fresh (N, *input_shape)
        float32 array), or None when ``need_dx`` is False (then the first layer skips its input
        gradient, which saves work when only the parameter gradients are wanted).
        Raises RuntimeError before any forward; ValueError for a wrong shape or NaN/Inf.
        """
        if self._n_last is None:
            raise RuntimeError("backward called before forward")
        dY = check_array(dY, "dY")
        want = (self._n_last,) + self.output_shape()
        if dY.shape != want:
            raise ValueError(f"dY must have shape {want} (the last forward output), got {dY.shape}")
        if self._n_last == 0:
            return np.zeros((0,) + self.input_shape, dtype=np.float32) if need_dx else None
        if getattr(self, "_fused_x", None) is not None:
            # the last forward was a fused inference pass (no caches): redo it layer by layer
            h, self._fused_x = self._fused_x, None
            for layer in self.layers:
                h = layer.forward(h)
        d = dY
        prof = getattr(self, "_profile", None)
        relu_pool = self._relu_pool_at()
        i = len(self.layers) - 1
        while i >= 0:
            t = _perf_counter() if prof is not None else 0.0
            if i - 1 in relu_pool:
                # MaxPool2D after Conv2D(act="relu"): the pooling's backward applies the ReLU's
                # mask while it scatters (one pass), then the conv starts from its pre-activation
                d = self.layers[i]._backward_relu(d)
                if prof is not None:
                    now = _perf_counter()
                    prof[i][1] += now - t
                    t = now
                i -= 1
                d = self.layers[i]._backward_preact(d, bool(need_dx) or i > 0)
            else:
                d = self.layers[i].backward(d, need_dx=bool(need_dx) or i > 0)
            if prof is not None:
                prof[i][1] += _perf_counter() - t
            i -= 1
        return np.array(d, dtype=np.float32, copy=True) if need_dx else None

    def _relu_pool_at(self):
        """Indices i where layers[i] is a Conv2D(act="relu") followed by a MaxPool2D: their
        backwards are fused (MaxPool2D._backward_relu). Cached (the layer list is fixed)."""
        at = getattr(self, "_relu_pool", None)
        if at is None:
            L = self.layers
            at = self._relu_pool = frozenset(
                i for i in range(len(L) - 1)
                if type(L[i]) is Conv2D and L[i].act == "relu" and type(L[i + 1]) is MaxPool2D)
        return at

    # -- description and persistence ------------------------------------------------------------
    def summary(self):
        """A text table: layer, per-sample output shape, number of parameters, and the total.

        Requires a built model (RuntimeError otherwise). Returns the string (print it).
        """
        if not self.built:
            raise RuntimeError("the model is not built: call build(input_shape) or forward(X) first")
        rows = [("Layer", "Output shape", "Params"), ("input", str(self.input_shape), "")]
        shape = self.input_shape
        for i, layer in enumerate(self.layers):
            shape = layer.output_shape(shape)
            rows.append((f"{i}: {layer._describe()}", str(shape), f"{sum(p.size for p in layer.parameters()):,}"))
        widths = [max(len(r[c]) for r in rows) for c in range(3)]
        line = "-" * (sum(widths) + 4)

        def fmt(r):
            return f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:>{widths[2]}}"

        out = [fmt(rows[0]), line] + [fmt(r) for r in rows[1:]] + [line]
        out.append(f"Total params: {self.num_parameters():,}")
        return "\n".join(out)

    def get_config(self):
        """JSON-able description: layers' configs, seed (None if a Generator was given),
        backend and the built input shape (None before build)."""
        return {
            "class": "Sequential",
            "seed": self.seed if isinstance(self.seed, int) else None,
            "backend": self.backend,
            "input_shape": list(self.input_shape) if self.built else None,
            "layers": [layer.get_config() for layer in self.layers],
        }

    @classmethod
    def from_config(cls, cfg):
        """Rebuild a model from :meth:`get_config` output (built when it records an input shape).

        Raises TypeError/ValueError for a malformed config or an unknown layer type.
        """
        if not isinstance(cfg, dict):
            raise TypeError(f"cfg must be a dict, got {type(cfg).__name__}")
        if "layers" not in cfg or not isinstance(cfg["layers"], (list, tuple)):
            raise ValueError("cfg must contain a 'layers' list")
        layers = []
        for i, lc in enumerate(cfg["layers"]):
            if not isinstance(lc, dict) or "type" not in lc:
                raise ValueError(f"cfg['layers'][{i}] must be a dict with a 'type'")
            kind = lc["type"]
            if kind not in _LAYER_TYPES:
                raise ValueError(f"cfg['layers'][{i}] has unknown type {kind!r}; known: {sorted(_LAYER_TYPES)}")
            kwargs = {k: (tuple(v) if isinstance(v, list) else v) for k, v in lc.items() if k != "type"}
            try:
                layers.append(_LAYER_TYPES[kind](**kwargs))
            except TypeError as e:
                raise ValueError(f"cfg['layers'][{i}] ({kind}) has bad arguments: {e}") from None
        seed = cfg.get("seed", 0)
        model = cls(layers, seed=0 if seed is None else seed, backend=cfg.get("backend", "mantissa"))
        if cfg.get("input_shape") is not None:
            model.build(tuple(cfg["input_shape"]))
        return model

    def state_arrays(self):
        """``{"0.weight": array, "0.bias": array, ...}``: copies of every parameter (float32).
        Requires a built model."""
        if not self.built:
            raise RuntimeError("the model is not built: call build(input_shape) or forward(X) first")
        return {name: p.data.copy() for name, p in self.named_parameters()}

    def load_state_arrays(self, arrays):
        """Copy ``arrays`` (as returned by :meth:`state_arrays`) into the parameters, in place.

        The keys must match exactly and every array must have its parameter's shape and be
        finite; otherwise ValueError (nothing is modified). Requires a built model.
        """
        if not self.built:
            raise RuntimeError("the model is not built: call build(input_shape) before load_state_arrays")
        if not hasattr(arrays, "keys"):
            raise TypeError(f"arrays must be a mapping name -> array, got {type(arrays).__name__}")
        params = dict(self.named_parameters())
        keys = set(arrays.keys())
        missing, unexpected = sorted(set(params) - keys), sorted(keys - set(params))
        if missing or unexpected:
            raise ValueError(f"state arrays do not match the model: missing {missing}, unexpected {unexpected}")
        checked = {}
        for name, p in params.items():
            a = check_array(arrays[name], f"arrays[{name!r}]")
            if a.shape != p.shape:
                raise ValueError(f"arrays[{name!r}] must have shape {p.shape}, got {a.shape}")
            checked[name] = a
        for name, p in params.items():
            np.copyto(p.data, checked[name])
        return self

    # -- container protocol -------------------------------------------------------------------
    def __len__(self):
        return len(self.layers)

    def __iter__(self):
        return iter(self.layers)

    def __getitem__(self, i):
        return self.layers[i]

    def __repr__(self):
        inner = ",\n  ".join(layer._describe() for layer in self.layers)
        return f"Sequential([\n  {inner}\n], seed={self.seed!r}, backend={self.backend!r})"
