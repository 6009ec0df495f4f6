"""The layer container: ``Sequential``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .._typing import ArrayLike, Float32Array
from .._validation import as_generator, check_array, check_int
from ..backend import BACKENDS, get_backend
from ._finetune import FineTuning
from ._layer_names import LayersArg, named_layers
from ._lent_memory import LentMemory, free_arena, lend
from ._normalization import check_normalization, normalize_input
from .base_layer import Layer, check_shape, layer_from_config
from .fusion import Fusion, plan_backward, plan_forward, run_backward, timed

if TYPE_CHECKING:
    from ..parameter import Parameter

__all__ = ["Sequential"]


class Sequential(LentMemory, FineTuning):
    """A stack of layers applied in order, with explicit forward and backward.

    Parameters
    ----------
    layers : list of Layer, or dict name -> Layer, or list of (name, Layer) pairs
        Distinct layer objects (``Conv2D``, ``BatchNorm2D``, ``MaxPool2D``, ``Flatten``, ``Dense``, ...).
        Layers that are already built keep their parameters. A plain list names its layers
        ``"0"``, ``"1"``, ...; named layers (as ``torch.nn.Sequential(OrderedDict)``) prefix their
        parameters and buffers with their name: ``{"conv1": Conv2D(...)}`` gives
        ``"conv1.weight"``. A name is dot-separated segments of letters, digits and ``_``
        (``"layer1.0"`` stands for torch's nested ``layer1[0]``, so torchvision's state-dict
        names come out as they are); names are distinct and none extends another
        (``"a"`` and ``"a.b"``).
    seed : int >= 0 or numpy.random.Generator, default 0
        Seeds the initialization (a ``numpy.random.Generator``; the global RNG is never used).
    backend : {"mantissa", "numpy"}, default "mantissa"
        ``"mantissa"`` runs the C engine, ``"numpy"`` the reference twins.
    input_mean, input_std : sequence of float (one per input channel) or None, keyword-only
        The input normalization the trunk expects, ``(x - mean[c]) / std[c]`` per channel of
        images in [0, 1] (ImageNet's for the pretrained ResNets, as torchvision's transforms
        apply it). Part of the model's config (saved with it), applied by ``Embedder`` in
        ``fit`` / ``embed`` (``normalize_input``), never by ``forward``, so ``forward`` equals
        torch's forward on the same tensor. Both or neither; every ``std`` finite and > 0.

    Shapes are inferred at the first ``forward`` (or ``build``). ``forward``
    returns a fresh array; ``backward`` accumulates into every ``Parameter.grad`` and
    returns a fresh dX. Layers reuse their buffers between batches (no per-batch allocation
    while the batch does not grow). Saving: ``get_config`` (JSON-able) plus
    ``state_arrays`` (name -> array, for ``numpy.savez``), restored by
    ``from_config`` and ``load_state_arrays`` (no pickle).

    Raises
    ------
    TypeError
        ``layers`` not a list of Layer objects (or of named ones); a non-str name; a bad ``seed`` type.
    ValueError
        Empty ``layers``, a layer given twice, a malformed or repeated name, an unknown ``backend``.
    """

    def __init__(
        self,
        layers: LayersArg,
        seed: int | np.random.Generator = 0,
        backend: str = "mantissa",
        *,
        input_mean: Sequence[float] | None = None,
        input_std: Sequence[float] | None = None,
    ) -> None:
        self.input_mean, self.input_std = check_normalization(input_mean, input_std)
        names, layers = named_layers(layers)
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
        self.names = names
        self.seed = seed
        self.training = True
        self.input_shape: Any = None  # the per-sample tuple once built
        self._n_last: int | None = None
        self._profile = None  # [forward_s, backward_s] per layer while profiling (training.Profiler)
        self._plans: dict[str, Any] = {}
        self._allow: Callable[[int, Fusion], bool] | None = None
        self._fused_x = None
        self._lent_memory = None  # the memory lent to steps read only by the next one (``_lend_regions``)
        self._arenas = ()
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
    def built(self) -> bool:
        """True once the input shape is known and every parameter exists."""
        return self.input_shape is not None

    def set_backend(self, backend: str) -> Sequential:
        """Run every layer on ``backend`` ("mantissa" or "numpy"). Returns self."""
        get_backend(backend)  # validates
        for layer in self.layers:
            layer.set_backend(backend)
        self.backend = backend
        return self

    def train(self, mode: bool = True) -> Sequential:
        """Training mode for every layer (BatchNorm: batch statistics). Returns self."""
        self.training = bool(mode)
        for layer in self.layers:
            layer.train(mode)
        return self

    def eval(self) -> Sequential:
        """Evaluation mode for every layer. Returns self."""
        return self.train(False)

    def build(self, input_shape: Sequence[int]) -> Sequential:
        """Create every parameter for the per-sample ``input_shape`` (e.g. ``(1, 28, 28)``).

        Returns self. Raises ValueError when a layer cannot take the shape it receives, or when
        the model is already built for another shape.
        """
        shape = check_shape(input_shape)
        if self.built:
            if shape != self.input_shape:
                raise ValueError(
                    f"the model is already built for input shape {self.input_shape}, got {shape}"
                )
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

    def output_shape(self, input_shape: Sequence[int] | None = None) -> tuple[int, ...]:
        """Per-sample output shape for ``input_shape`` (default: the built input shape)."""
        if input_shape is None:
            if not self.built:
                raise RuntimeError("the model is not built: call build(input_shape) or forward(X) first")
            return self._out_shape
        shape = check_shape(input_shape)
        for layer in self.layers:
            shape = layer.output_shape(shape)
        return shape

    def _state_shapes(self, input_shape):
        """``{"0.weight": shape, ...}``: the shapes ``state_arrays`` would have after
        ``build(input_shape)``, computed without allocating anything (ValueError for a shape
        a layer cannot take)."""
        shape = check_shape(input_shape)
        out = {}
        for i, layer in zip(self.names, self.layers):
            out.update({f"{i}.{name}": s for name, s in layer._param_shapes(shape).items()})
            out.update({f"{i}.{name}": s for name, s in layer._buffer_shapes(shape).items()})
            shape = layer.output_shape(shape)
        return out

    def parameters(self) -> list[Parameter]:
        """Every ``Parameter``, in layer order (weight then bias). Empty before build."""
        return [p for layer in self.layers for p in layer.parameters()]

    def named_parameters(self) -> list[tuple[str, Parameter]]:
        """``[("0.weight", Parameter), ("0.bias", ...), ...]``: layer name (its index unless the
        layers were named) and parameter name."""
        return [
            (f"{i}.{name}", p)
            for i, layer in zip(self.names, self.layers)
            for name, p in layer.named_parameters()
        ]

    def named_buffers(self) -> list[tuple[str, np.ndarray]]:
        """``[("1.running_mean", array), ...]``: every layer's non-learnable state (the arrays
        themselves, updated in place by the layers), named like ``named_parameters``."""
        return [
            (f"{i}.{name}", a)
            for i, layer in zip(self.names, self.layers)
            for name, a in layer.named_buffers()
        ]

    def num_parameters(self) -> int:
        """Total number of learnable scalars (int). Requires a built model."""
        if not self.built:
            raise RuntimeError("the model is not built: call build(input_shape) or forward(X) first")
        return sum(p.size for p in self.parameters())

    def zero_grad(self) -> None:
        """Zero every parameter's ``grad`` in place."""
        for p in self.parameters():
            p.zero_grad()

    # -- passes ------------------------------------------------------------------------------
    def forward(self, X: ArrayLike) -> Float32Array:
        """Embed a batch: X (N, *input_shape) -> (N, *output_shape), float32 (a fresh array).

        X is converted to float32 C-contiguous (no copy when it already is) and validated once:
        a conv net needs 4-D NCHW images. The layers keep a reference to their inputs for the
        backward: do not modify X between ``forward`` and ``backward``. A sample's result does not
        depend on the other samples of the batch; its float32 rounding can depend on the batch
        size (the SGEMM chooses its blocking from the shapes), never on the thread count.
        The first call builds the model for ``X.shape[1:]``; later calls must match it. Raises
        TypeError (non-numeric X), ValueError (NaN/Inf, wrong ndim, a shape that does not match
        the built input shape).
        """
        X = check_array(X, "X")
        first = self.layers[0]
        want = (
            (1 + len(self.input_shape))
            if self.built
            else (None if first.input_ndim is None else 1 + first.input_ndim)
        )
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
            raise ValueError(
                f"X must have shape (N, {', '.join(map(str, self.input_shape))}) "
                f"(the model was built for that input), got {X.shape}"
            )
        if X.shape[0] == 0:
            self._n_last = 0
            return np.zeros((0,) + self.output_shape(), dtype=np.float32)
        return np.array(self._forward_valid(X), dtype=np.float32, copy=True)

    def _forward_valid(self, X):
        """The pass of ``forward`` on an X it would accept unchanged (float32, C-contiguous,
        finite, the built input shape, N >= 1), without checking it again. Returns the last
        layer's buffer, overwritten by the next pass. In eval mode the plan runs the layers'
        inference fusions, each step's output in one of two lent regions (the one not holding
        its input), so only two activations exist at a time; a later backward then redoes the
        plain forward first (a layer's own ``backward`` after an eval pass is not supported).
        In training the outputs the backward never reads (``_dead_outputs``) go to lent regions,
        one each, which the backward reuses for its input gradients."""
        self._fused_x = None
        n = X.shape[0]
        if self.training:
            h = self._run_train(X)
        else:
            plan = self._plan("inference")
            shapes = self._sample_shapes()
            size = max(n * int(np.prod(shapes[s.index + s.width])) for s in plan)
            self._arenas = self._lend_regions([size, size])
            h = X
            for step in plan:
                h = lend(
                    self.layers[step.index + step.width - 1], "_out", free_arena(self._arenas, h), step.run, h
                )
            self._arenas = ()
            self._fused_x = X
        self._n_last = n
        return h

    def _plan(self, kind):
        """The cached plan ("train", "inference" or "backward"; see ``.fusion``)."""
        plan = self._plans.get(kind)
        if plan is None:
            if kind == "backward":
                plan = plan_backward(self.layers)
            else:
                plan = plan_forward(self.layers, fuse=kind == "inference", allow=self._allow)
            if self._profile is not None:
                plan = timed(plan, self._profile, 1 if kind == "backward" else 0)
            self._plans[kind] = plan
        return plan

    def _set_profile(self, times) -> None:
        """Time every step into ``times[i] = [forward_s, backward_s]`` of its first layer ``i``
        (None: stop timing)."""
        self._profile = times
        self._plans = {}

    @property
    def _chain_at(self):
        """Indices where the inference plan fuses more than one layer pair in a call. Assigning
        a set restricts those fusions to its indices (to compare with the pairwise path)."""
        return frozenset(s.index for s in self._plan("inference") if s.width > 2)

    @_chain_at.setter
    def _chain_at(self, indices) -> None:
        indices = frozenset(indices)
        self._allow = lambda i, fusion: len(fusion.tags) < 2 or i in indices
        self._plans = {}

    __call__ = forward

    def backward(self, dY: ArrayLike, need_dx: bool = True) -> Float32Array | None:
        """Backpropagate dY (N, *output_shape) = dL/dY through the last forward.

        Accumulates into the ``grad`` of every parameter with ``requires_grad`` (a frozen
        parameter's is left as it was; see ``freeze``). Returns dL/dX (a fresh
        (N, *input_shape) float32 array), or None when ``need_dx`` is False: then the backward
        stops at the lowest layer with a trainable parameter, which skips its input gradient,
        and the layers below it do not run (frozen layers above a trainable one still
        propagate the gradient).
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
        if self._fused_x is not None:
            # the last forward was an inference pass (no caches): redo it layer by layer
            h, self._fused_x = self._fused_x, None
            self._run_train(h)
        need_dx = bool(need_dx)
        plan = self._plan("backward")
        size = self._gradient_size(self._n_last)
        self._arenas = self._lend_regions([size, size])
        try:
            d = run_backward(plan, self.layers, dY, need_dx, call=self._backward_step)
        finally:
            self._arenas = ()
        return np.array(d, dtype=np.float32, copy=True) if need_dx else None

    # -- description and persistence ------------------------------------------------------------
    def summary(self) -> str:
        """A text table: layer, per-sample output shape, number of parameters, and the total.

        Requires a built model (RuntimeError otherwise). Returns the string (print it).
        """
        if not self.built:
            raise RuntimeError("the model is not built: call build(input_shape) or forward(X) first")
        rows = [("Layer", "Output shape", "Params"), ("input", str(self.input_shape), "")]
        shape = self.input_shape
        for i, layer in zip(self.names, self.layers):
            shape = layer.output_shape(shape)
            rows.append(
                (f"{i}: {layer._describe()}", str(shape), f"{sum(p.size for p in layer.parameters()):,}")
            )
        widths = [max(len(r[c]) for r in rows) for c in range(3)]
        line = "-" * (sum(widths) + 4)

        def fmt(r) -> str:
            return f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:>{widths[2]}}"

        out = [fmt(rows[0]), line] + [fmt(r) for r in rows[1:]] + [line]
        out.append(f"Total params: {self.num_parameters():,}")
        return "\n".join(out)

    def get_config(self) -> dict[str, Any]:
        """JSON-able description: layers' configs, seed (None if a Generator was given),
        backend, the built input shape (None before build) and, for named layers only, their
        ``"names"`` (a config without them names the layers "0", "1", ...)."""
        cfg = {
            "class": "Sequential",
            "seed": self.seed if isinstance(self.seed, int) else None,
            "backend": self.backend,
            "input_shape": list(self.input_shape) if self.built else None,
            "layers": [layer.get_config() for layer in self.layers],
        }
        if self._named:
            cfg["names"] = list(self.names)
        if self.input_mean is not None:
            cfg["input_mean"], cfg["input_std"] = list(self.input_mean), list(self.input_std or ())
        return cfg

    def normalize_input(self, X: np.ndarray) -> np.ndarray:
        """``X`` (N, C, ...) float32 normalized per channel by ``input_mean`` / ``input_std``: a
        new array; ``X`` itself when the model has none. ValueError when ``C`` differs from
        their length."""
        return normalize_input(X, self.input_mean, self.input_std)

    @property
    def _named(self) -> bool:
        return self.names != [str(i) for i in range(len(self.layers))]

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> Sequential:
        """Rebuild a model from ``get_config`` output (built when it records an input shape).

        Raises TypeError/ValueError for a malformed config or an unknown layer type.
        """
        if not isinstance(cfg, dict):
            raise TypeError(f"cfg must be a dict, got {type(cfg).__name__}")
        if "layers" not in cfg or not isinstance(cfg["layers"], (list, tuple)):
            raise ValueError("cfg must contain a 'layers' list")
        layers: list[Any] = [
            layer_from_config(lc, f"cfg['layers'][{i}]") for i, lc in enumerate(cfg["layers"])
        ]
        names = cfg.get("names")
        if names is not None:
            if not isinstance(names, (list, tuple)) or len(names) != len(layers):
                raise ValueError(f"cfg['names'] must be a list of {len(layers)} layer names")
            layers = list(zip(names, layers))
        seed = cfg.get("seed", 0)
        model = cls(
            layers,
            seed=0 if seed is None else seed,
            backend=cfg.get("backend", "mantissa"),
            input_mean=cfg.get("input_mean"),
            input_std=cfg.get("input_std"),
        )
        if cfg.get("input_shape") is not None:
            model.build(tuple(cfg["input_shape"]))
        return model

    def state_arrays(self) -> dict[str, Float32Array]:
        """``{"0.weight": array, "0.bias": array, ..., "1.running_mean": array, ...}``: copies of
        every parameter, then of every buffer (``named_buffers``), float32. A model without
        buffers gives its parameters only, as before buffers existed. Requires a built model."""
        if not self.built:
            raise RuntimeError("the model is not built: call build(input_shape) or forward(X) first")
        state = {name: p.data.copy() for name, p in self.named_parameters()}
        state.update({name: a.copy() for name, a in self.named_buffers()})
        return state

    def _state_targets(self):
        """``{name: array}``: the arrays ``load_state_arrays`` writes (parameters' data, buffers)."""
        return {**{name: p.data for name, p in self.named_parameters()}, **dict(self.named_buffers())}

    def load_state_arrays(self, arrays: Mapping[str, ArrayLike]) -> Sequential:
        """Copy ``arrays`` (as returned by ``state_arrays``) into the parameters and buffers,
        in place.

        The keys must match exactly and every array must have its parameter's shape and be
        finite; otherwise ValueError (nothing is modified). Requires a built model.
        """
        if not self.built:
            raise RuntimeError("the model is not built: call build(input_shape) before load_state_arrays")
        if not hasattr(arrays, "keys"):
            raise TypeError(f"arrays must be a mapping name -> array, got {type(arrays).__name__}")
        targets = self._state_targets()
        keys = set(arrays.keys())
        missing, unexpected = sorted(set(targets) - keys), sorted(keys - set(targets))
        if missing or unexpected:
            raise ValueError(
                f"state arrays do not match the model: missing {missing}, unexpected {unexpected}"
            )
        checked = {}
        for name, t in targets.items():
            a = check_array(arrays[name], f"arrays[{name!r}]")
            if a.shape != t.shape:
                raise ValueError(f"arrays[{name!r}] must have shape {t.shape}, got {a.shape}")
            checked[name] = a
        for name, t in targets.items():
            np.copyto(t, checked[name])
        return self

    def __getstate__(self):  # copies rebuild their plans (a plan holds this model's layers)
        return {**self.__dict__, "_plans": {}, "_lent_memory": None, "_arenas": ()}

    # -- container protocol -------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self):
        return iter(self.layers)

    def __getitem__(self, i):
        """The layer at index ``i`` (an int or slice), or named ``i`` (a str; KeyError if none)."""
        if isinstance(i, str):
            try:
                return self.layers[self.names.index(i)]
            except ValueError:
                raise KeyError(f"no layer named {i!r} (names: {self.names})") from None
        return self.layers[i]

    def __repr__(self) -> str:
        if self._named:
            inner = ",\n  ".join(f"{n!r}: {layer._describe()}" for n, layer in zip(self.names, self.layers))
            return f"Sequential({{\n  {inner}\n}}, seed={self.seed!r}, backend={self.backend!r})"
        inner = ",\n  ".join(layer._describe() for layer in self.layers)
        return f"Sequential([\n  {inner}\n], seed={self.seed!r}, backend={self.backend!r})"
