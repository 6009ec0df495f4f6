"""The ``Layer`` base class and the argument checks the layers share."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._checks.activations import act_flag, check_negative_slope
from .._registry import build_from_config
from .._typing import ArrayLike, Float32Array, Seed
from .._validation import as_generator, check_array, check_int
from .._workspace import Workspace, scratch_frame
from ..backend import get_backend

if TYPE_CHECKING:
    from typing_extensions import Self

    from ..parameter import Parameter
    from .fusion import Fusion

__all__ = ["Layer", "AffineLayer", "LAYER_TYPES", "layer_from_config"]


def check_act(act):
    """None/"identity" -> None, "relu" / "leaky_relu" kept; anything else raises
    TypeError/ValueError naming ``act``."""
    act_flag(act)
    return None if act in (None, "identity") else act


def check_shape(shape, name: str = "input_shape"):
    """A per-sample shape as a tuple of ints >= 1. Raises TypeError/ValueError."""
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


def kaiming_uniform_default(rng, w_shape, fan_in, bias: bool = True):
    """torch's default init of Conv2d/Linear: weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    (Kaiming-uniform with ``a = sqrt(5)``, He et al. 2015). Returns ``(w, b)``, float64; b is
    None (and not drawn) when ``bias`` is False."""
    bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
    w = rng.uniform(-bound, bound, size=w_shape)
    b = rng.uniform(-bound, bound, size=(w_shape[0],)) if bias else None
    return w, b


#: the layer classes of this package by class name (filled by ``Layer.__init_subclass__``), for
#: ``layer_from_config``
LAYER_TYPES: dict[str, type[Layer]] = {}


def layer_from_config(cfg, where: str = "cfg"):
    """A new layer from ``layer.get_config()`` output (a dict with ``"type"``); list values
    become tuples. Raises ValueError naming ``where`` for a malformed dict or an unknown type."""
    return build_from_config(cfg, LAYER_TYPES, where)


class Layer:
    """Base class of the layers.

    Subclasses implement ``output_shape(input_shape)``, ``_build(input_shape, rng)`` and
    ``_param_shapes(input_shape)`` (when they have parameters; ``_buffer_shapes`` and
    ``named_buffers`` when they have non-learnable state), ``_forward(X)``,
    ``_backward(dY, need_dx)`` and ``_config()``. To take part in a Sequential's fused passes
    they declare ``fusion_tags()``, ``forward_fusions`` and ``backward_fusions``
    (``mantissa_embed.layers.fusion``).

    Attributes: ``built`` (bool), ``input_shape`` (per-sample tuple or None), ``training`` (bool),
    ``backend`` ("mantissa" or "numpy").
    """

    #: number of per-sample dimensions the layer accepts (None: any)
    input_ndim: int | None = None
    #: inference fusions this layer leads with the layers after it (``fusion.Fusion``, longest first)
    forward_fusions: tuple[Fusion, ...] = ()
    #: backward fusions this layer leads with the layer before it (``fusion.Fusion``)
    backward_fusions: tuple[Fusion, ...] = ()
    #: whether ``_backward`` reads the layer's forward output; a parent may write over the
    #: output of a layer whose backward does not (``Residual`` adds its shortcut into it)
    _backward_reads_output = True

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__module__.startswith("mantissa_embed.layers.") and not cls.__name__.startswith("_"):
            LAYER_TYPES[cls.__name__] = cls

    @classmethod
    def from_config(cls, kwargs: dict[str, Any], where: str = "cfg") -> Layer:
        """The layer for ``get_config()`` minus ``"type"``; a layer holding layers overrides it
        to rebuild them (with ``layer_from_config``)."""
        return cls(**kwargs)

    def __init__(self) -> None:
        self.built = False
        self.input_shape: Any = None  # the per-sample tuple once built
        self.training = True
        self.backend = "mantissa"
        self._be = None
        self._x = None
        self._y = None

    def fusion_tags(self):
        """What this layer is to a neighbour's fusion (tuple of str); () joins no fusion."""
        return ()

    # -- configuration -----------------------------------------------------------------
    def set_backend(self, name: str) -> Self:
        """Compute with backend ``name`` ("mantissa" or "numpy"). Raises ValueError otherwise."""
        self._be = get_backend(name)
        self.backend = name
        return self

    def _backend(self):
        if self._be is None:
            self._be = get_backend(self.backend)
        return self._be

    def train(self, mode: bool = True) -> Self:
        """Set training mode (BatchNorm normalizes by the batch statistics in training, by the
        running ones in evaluation). Returns self."""
        self.training = bool(mode)
        return self

    def eval(self) -> Self:
        """Set evaluation mode. Returns self."""
        return self.train(False)

    def get_config(self) -> dict[str, Any]:
        """JSON-able constructor arguments plus ``"type"`` (the class name)."""
        return {"type": type(self).__name__, **self._config()}

    def _config(self):
        return {}

    # -- shapes and parameters -----------------------------------------------------------
    def output_shape(self, input_shape: Sequence[int]) -> tuple[int, ...]:
        """Per-sample output shape for a per-sample ``input_shape``. Raises ValueError."""
        raise NotImplementedError

    def build(self, input_shape: Sequence[int], rng: Seed = None) -> Self:
        """Create the parameters for the per-sample ``input_shape``.

        ``rng``: an int seed or ``numpy.random.Generator`` (None: seed 0). Building again with
        the same shape keeps the parameters; a different shape raises ValueError.
        """
        shape = check_shape(input_shape)
        if self.built:
            if shape != self.input_shape:
                raise ValueError(
                    f"{type(self).__name__} was built for input shape {self.input_shape}, got {shape}"
                )
            return self
        out_shape = self.output_shape(shape)  # validates
        self._build(shape, as_generator(0 if rng is None else rng, "rng"))
        self._out_shape = out_shape
        self.input_shape = shape
        self.built = True
        return self

    def _build(self, input_shape, rng) -> None:
        pass

    def _param_shapes(self, input_shape):
        """``{name: shape}`` of the parameters ``build(input_shape)`` creates (nothing allocated)."""
        return {}

    def parameters(self) -> list[Parameter]:
        """The layer's ``Parameter`` objects (empty list when it has none)."""
        return []

    def named_parameters(self) -> list[tuple[str, Parameter]]:
        """``[(name, Parameter), ...]`` ("weight", "bias")."""
        return [(p.name, p) for p in self.parameters()]

    def _buffer_shapes(self, input_shape):
        """``{name: shape}`` of the buffers ``build(input_shape)`` creates (nothing allocated)."""
        return {}

    def named_buffers(self) -> list[tuple[str, np.ndarray]]:
        """``[(name, array), ...]``: the layer's non-learnable state (float32 arrays the layer
        updates in place, e.g. BatchNorm's ``running_mean``), saved and restored with the
        parameters by ``Sequential.state_arrays`` / ``load_state_arrays``. Empty by default."""
        return []

    def zero_grad(self) -> None:
        for p in self.parameters():
            p.zero_grad()

    def named_children(self) -> list[tuple[str, Layer]]:
        """``[(name, layer), ...]``: the layers this layer holds, named as their parameters are
        prefixed (``Residual``: ``"block.0"``; ``BasicBlock``: ``"conv1"``, ``"downsample.0"``).
        Empty for a plain layer."""
        return []

    def _inference_scratch(self, n, input_shape) -> int:
        """Bytes of scratch the layer's inference forward of ``n`` samples of the per-sample
        ``input_shape`` allocates besides its input and output (an estimate, a function of the
        shapes only; 0 by default)."""
        return 0

    def _trainable(self) -> bool:
        """True when a parameter of this layer (or of a layer it holds) has ``requires_grad``:
        the backward then has a parameter gradient to compute."""
        return any(p.requires_grad for p in self.parameters())

    # -- passes ----------------------------------------------------------------------------
    def _prep_input(self, X):
        if not (type(X) is np.ndarray and X.dtype == np.float32 and X.flags.c_contiguous):
            X = check_array(X, "X", finite=False)
        if X.ndim < 2:
            raise ValueError(f"X must have a batch axis (N, ...), got shape {X.shape}")
        if not self.built:
            self.build(X.shape[1:])
        elif X.shape[1:] != self.input_shape:
            raise ValueError(
                f"X must have shape (N, {', '.join(map(str, self.input_shape))}) "
                f"for this {type(self).__name__}, got {X.shape}"
            )
        return X

    def _check_dy(self, dY):
        """dY as float32 C-contiguous with the shape of the last forward output.
        Raises RuntimeError before any forward, ValueError for another shape."""
        if self._y is None:
            raise RuntimeError(f"{type(self).__name__}.backward called before forward")
        if not (type(dY) is np.ndarray and dY.dtype == np.float32 and dY.flags.c_contiguous):
            dY = check_array(dY, "dY", finite=False)
        if dY.shape != self._y.shape:
            raise ValueError(
                f"dY must have the shape of the last forward output {self._y.shape}, got {dY.shape}"
            )
        return dY

    def forward(self, X: ArrayLike) -> Float32Array:
        """Y = layer(X). X: (N, *input_shape) float32. Returns a layer-owned buffer, overwritten
        by the layer's next call."""
        X = self._prep_input(X)
        return self._forward(X)

    __call__ = forward

    def backward(self, dY: ArrayLike, need_dx: bool = True) -> Float32Array | None:
        """Gradient w.r.t. the input of the last forward, for the upstream gradient dY
        (the shape of that forward's output). Accumulates into the ``grad`` of the parameters
        with ``requires_grad`` (a frozen parameter's ``grad`` is left as it was).
        Returns dX (a layer-owned buffer), or None when ``need_dx`` is False (a layer with no
        trainable parameter then computes nothing).
        Raises RuntimeError before any forward, ValueError for a wrong dY shape."""
        dY = self._check_dy(dY)
        if not need_dx and not self._trainable():
            return None
        return self._backward(dY, bool(need_dx))

    def _forward(self, X):
        raise NotImplementedError

    def _backward(self, dY, need_dx):
        raise NotImplementedError

    def _describe(self) -> str:
        cfg = self._config()
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in cfg.items())})"

    def __repr__(self) -> str:
        return self._describe()


class AffineLayer(Layer):
    """A layer with ``weight`` and ``bias`` parameters and an optional activation on its output
    (``act``: None, "relu" or "leaky_relu" with ``negative_slope``). Subclasses implement
    ``_backward_preact(dY, need_dx)``, the backward from the gradient with respect to the
    pre-activation."""

    def __init__(self, act: str | None, negative_slope: float = 0.01) -> None:
        super().__init__()
        self.act = check_act(act)
        self.negative_slope = check_negative_slope(negative_slope)
        self.weight: Parameter | None = None
        self.bias: Parameter | None = None
        self._out = Workspace()
        self._dx = Workspace()
        self._gw = Workspace()  # scratch weight / bias gradients of a (partly) frozen layer
        self._gb = Workspace()

    def fusion_tags(self):
        return ("relu_output",) if self.act == "relu" else ()

    @property
    def _backward_reads_output(self):
        return self.act is not None  # the activation's mask

    def _grad_targets(self):
        """``(dw, db, accumulate)`` for the backward kernels: the parameters' own ``grad``,
        accumulated into, when every parameter trains; otherwise layer-owned scratch buffers
        (reused, overwritten) that ``_grads_done`` adds into the trainable parameters' grad,
        so a frozen parameter's ``grad`` is never written. ``db`` is None without a bias."""
        w, b = self.weight, self.bias
        if w.requires_grad and (b is None or b.requires_grad):
            return w.grad, (None if b is None else b.grad), True
        return self._gw.get(w.shape), (None if b is None else self._gb.get(b.shape)), False

    def _grads_done(self, dw, db) -> None:
        """Add scratch gradients from ``_grad_targets`` into the trainable parameters' grad."""
        for p, g in ((self.weight, dw), (self.bias, db)):
            if p is not None and g is not None and g is not p.grad and p.requires_grad:
                np.add(p.grad, g, out=p.grad)

    def parameters(self):
        return [p for p in (self.weight, self.bias) if p is not None] if self.built else []

    def _bias_data(self):
        """The bias array for the kernels, or None for a layer without bias."""
        return None if self.bias is None else self.bias.data

    def _bias_grad(self):
        return None if self.bias is None else self.bias.grad

    def _act_kwargs(self):
        """The activation arguments of the forward kernels."""
        return {"act": self.act, "negative_slope": self.negative_slope}

    def _act_config(self):
        """``act`` (and ``negative_slope`` for a leaky ReLU) for ``get_config``."""
        if self.act == "leaky_relu":
            return {"act": self.act, "negative_slope": self.negative_slope}
        return {"act": self.act}

    def _act_describe(self):
        if self.act == "leaky_relu":
            return f", act='leaky_relu', negative_slope={self.negative_slope!r}"
        return f", act={self.act!r}" if self.act else ""

    def _backward(self, dY, need_dx):
        if self.act is None:
            return self._backward_preact(dY, need_dx)
        with scratch_frame() as frame:  # the pre-activation gradient lives for this call only
            dpre = frame.take(dY.size).reshape(dY.shape)
            if self.act == "relu":
                dY = self._backend().relu_backward(dY, self._y, dx=dpre)
            else:
                dY = self._backend().leaky_relu_backward(dY, self._y, self.negative_slope, dx=dpre)
            return self._backward_preact(dY, need_dx)

    def _backward_preact(self, dY, need_dx):
        raise NotImplementedError
