"""Residual blocks: ``Residual``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._workspace import Workspace, scratch_frame
from ._lent_memory import backward_lent, free_arena, lend
from .base_layer import LAYER_TYPES, Layer, check_shape, layer_from_config
from .conv2d import Conv2D
from .fusion import plan_backward, plan_forward, run_backward

__all__ = ["Residual"]


def _layer_list(layers, name):
    if isinstance(layers, Layer) or isinstance(layers, (str, bytes)):
        raise TypeError(f"{name} must be a list of Layer objects or a Sequential")
    items = getattr(layers, "layers", layers)  # a Sequential: its layers
    try:
        items = list(items)
    except TypeError:
        raise TypeError(
            f"{name} must be a list of Layer objects or a Sequential, got {type(layers).__name__}"
        ) from None
    for i, layer in enumerate(items):
        if not isinstance(layer, Layer):
            raise TypeError(f"{name}[{i}] must be a Layer, got {type(layer).__name__}")
    return items


def _chain_shape(layers, shape):
    for layer in layers:
        shape = layer.output_shape(shape)
    return shape


def _projection_stride(shape, out):
    """The stride of the 1x1 projection from (C, H, W) to (F, HO, WO), or None."""
    for s in range(1, max(shape[1], shape[2]) + 1):
        if (shape[1] - 1) // s + 1 == out[1] and (shape[2] - 1) // s + 1 == out[2]:
            return s
    return None


class Residual(Layer):
    """A residual block (He et al. 2016, "Deep Residual Learning for Image Recognition", CVPR):
    ``y = relu(block(x) + shortcut(x))``.

    Parameters
    ----------
    block : list of Layer, or a Sequential (its layers)
        Applied in order; may hold Residual blocks (they nest).
    shortcut : None, or a list of Layer / a Sequential
        None: the identity when ``block`` keeps the shape, otherwise a projection created at
        build: ``Conv2D(F, 1, stride=s, bias=False)`` then ``BatchNorm2D()`` (s from the
        spatial sizes; ValueError when no stride maps them, or while BatchNorm2D is not
        available: pass ``shortcut=[...]`` then). A given shortcut must produce the block's
        output shape.

    Parameters are named ``"block.0.weight"``, ``"shortcut.0.weight"`` (a Sequential prefixes
    the layer index: ``"2.block.0.weight"``) and drawn from the model's generator, block first.
    The backward adds both branches' input gradients. ``train()``, ``eval()`` and
    ``set_backend()`` reach every child; at inference the block runs its own fused plan. A
    following MaxPool2D applies this block's output ReLU in its backward (tag ``relu_output``).
    Raises TypeError/ValueError for bad arguments or shapes.
    """

    def __init__(self, block, shortcut=None) -> None:
        super().__init__()
        self.block = _layer_list(block, "block")
        if not self.block:
            raise ValueError("block must hold at least one layer")
        self.shortcut = None if shortcut is None else _layer_list(shortcut, "shortcut")
        self._proj = None  # the projection created at build for shortcut=None
        if len({id(x) for x in self.children()}) != len(self.children()):
            raise ValueError("block and shortcut must be distinct layer objects (a layer appears twice)")
        self.input_ndim = self.block[0].input_ndim
        self._plans: dict[Any, Any] = {}
        self._fused_x = None
        self._out = Workspace()
        self._dx = Workspace()

    @classmethod
    def from_config(cls, kwargs, where: str = "cfg"):
        kwargs = dict(kwargs)
        for key in ("block", "shortcut"):
            if kwargs.get(key) is not None:
                kwargs[key] = [
                    layer_from_config(c, f"{where}[{key!r}][{i}]") for i, c in enumerate(kwargs[key])
                ]
        return cls(**kwargs)

    def children(self):
        """The block's layers, then the shortcut's (given or created at build)."""
        return self.block + self._shortcut_layers()

    def _shortcut_layers(self):
        return self.shortcut if self.shortcut is not None else (self._proj or [])

    def fusion_tags(self):
        return ("relu_output",)

    # -- configuration ---------------------------------------------------------------------
    def set_backend(self, name):
        super().set_backend(name)
        for layer in self.children():
            layer.set_backend(name)
        return self

    def train(self, mode: bool = True):
        super().train(mode)
        for layer in self.children():
            layer.train(mode)
        return self

    def _config(self):
        return {
            "block": [layer.get_config() for layer in self.block],
            "shortcut": None if self.shortcut is None else [layer.get_config() for layer in self.shortcut],
        }

    def _describe(self) -> str:
        inner = ", ".join(layer._describe() for layer in self.block)
        sc = (
            ""
            if self.shortcut is None
            else ", shortcut=[" + ", ".join(x._describe() for x in self.shortcut) + "]"
        )
        return f"Residual([{inner}]{sc})"

    # -- shapes and parameters ---------------------------------------------------------------
    def _make_projection(self, shape, out):
        """[Conv2D(F, 1, stride=s, bias=False), BatchNorm2D()] from ``shape`` to ``out``."""
        stride = _projection_stride(shape, out) if len(shape) == 3 and len(out) == 3 else None
        if stride is None:
            raise ValueError(
                f"Residual: the block maps {shape} to {out} and no strided 1x1 convolution "
                f"does; pass shortcut=[...]"
            )
        if "BatchNorm2D" not in LAYER_TYPES:
            raise ValueError(
                "Residual: the default projection shortcut needs BatchNorm2D, which this "
                "version lacks; pass shortcut=[Conv2D(..., bias=False), ...]"
            )
        return [Conv2D(out[0], 1, stride=stride, bias=False), LAYER_TYPES["BatchNorm2D"]()]

    def _shortcut_for(self, shape, out):
        """The shortcut layers for input ``shape`` and block output ``out`` ([] = identity)."""
        if self.shortcut is not None:
            return self.shortcut
        if self._proj is not None:
            return self._proj
        return [] if shape == out else self._make_projection(shape, out)

    def output_shape(self, input_shape):
        shape = check_shape(input_shape)
        out = _chain_shape(self.block, shape)
        sc = _chain_shape(self._shortcut_for(shape, out), shape)
        if sc != out:
            raise ValueError(f"Residual: the shortcut gives {sc} but the block {out} (input {shape})")
        return out

    def _build(self, input_shape, rng) -> None:
        shape = input_shape
        for layer in self.block:
            layer.build(shape, rng)
            shape = layer.output_shape(shape)
        sc = self._shortcut_for(input_shape, shape)
        if self.shortcut is None and sc:
            self._proj = sc
            for layer in sc:
                layer.set_backend(self.backend)
                layer.train(self.training)
        s = input_shape
        for layer in sc:
            layer.build(s, rng)
            s = layer.output_shape(s)

    def _branches(self):
        return (("block", self.block), ("shortcut", self._shortcut_layers()))

    def _child_shapes(self, input_shape, attr):
        """``{"block.0.<name>": shape, ...}`` of every child's ``attr`` (``_param_shapes`` or
        ``_buffer_shapes``) for ``input_shape``, nothing allocated."""
        shape = check_shape(input_shape)
        out, s = {}, shape
        for i, layer in enumerate(self.block):
            out.update({f"{self._child_name('block', i)}.{n}": v for n, v in getattr(layer, attr)(s).items()})
            s = layer.output_shape(s)
        s2 = shape
        for i, layer in enumerate(self._shortcut_for(shape, s)):
            out.update(
                {f"{self._child_name('shortcut', i)}.{n}": v for n, v in getattr(layer, attr)(s2).items()}
            )
            s2 = layer.output_shape(s2)
        return out

    def _param_shapes(self, input_shape):
        return self._child_shapes(input_shape, "_param_shapes")

    def _buffer_shapes(self, input_shape):
        return self._child_shapes(input_shape, "_buffer_shapes")

    def _child_name(self, branch, i):
        """The name prefix of child ``i`` of ``branch`` ("block" or "shortcut"): ``"block.0"``;
        subclasses (``BasicBlock``) name their children as torchvision does."""
        return f"{branch}.{i}"

    def _named(self, attr):
        return [
            (f"{self._child_name(branch, i)}.{n}", v)
            for branch, layers in self._branches()
            for i, layer in enumerate(layers)
            for n, v in getattr(layer, attr)()
        ]

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def named_children(self):
        """``[("block.0", layer), ..., ("shortcut.0", layer), ...]`` (torchvision's names in
        ``BasicBlock`` / ``Bottleneck``); the projection shortcut once built."""
        return [
            (self._child_name(branch, i), layer)
            for branch, layers in self._branches()
            for i, layer in enumerate(layers)
        ]

    def _trainable(self):
        return any(layer._trainable() for layer in self.children())

    def named_parameters(self):
        return self._named("named_parameters")

    def named_buffers(self):
        """The children's buffers (e.g. BatchNorm2D running statistics), named as the parameters."""
        return self._named("named_buffers")

    def _inference_scratch(self, n, input_shape):
        """The children's outputs at inference (the ``_regions``, each of the largest output)
        and the largest child's own scratch."""
        shape = check_shape(input_shape)
        shortcut = self._shortcut_for(shape, _chain_shape(self.block, shape))
        largest, scratch = 0, 0
        for layers in (self.block, shortcut):
            s = shape
            for layer in layers:
                scratch = max(scratch, layer._inference_scratch(n, s))
                s = layer.output_shape(s)
                largest = max(largest, 4 * n * int(np.prod(s)))
        return (3 if shortcut else 2) * largest + scratch

    # -- passes ----------------------------------------------------------------------------------
    def _plan(self, branch, kind):
        key = (branch, kind)
        if key not in self._plans:
            layers = dict(self._branches())[branch]
            self._plans[key] = (
                plan_backward(layers)
                if kind == "backward"
                else plan_forward(layers, fuse=kind == "inference")
            )
        return self._plans[key]

    def _run(self, X, kind, frame=None):
        """Both branches' outputs on X. With a ``scratch_frame``, every step's output goes to
        a region of it (the block's ping-pong between two, the shortcut's in the third): an
        inference pass, whose children's outputs only the next step reads."""
        outs = []
        regions = None if frame is None else self._regions(frame, self._child_floats(X.shape, "output"))
        for branch, layers in self._branches():
            h = X
            free = None if regions is None else [a for a in regions if not any(a.holds(o) for o in outs)]
            for step in self._plan(branch, kind) if layers else ():
                if free is None:
                    h = step.run(h)
                else:
                    h = lend(layers[step.index + step.width - 1], "_out", free_arena(free, h), step.run, h)
            outs.append(h)
        return outs

    def _forward(self, X):
        self._x_shape = X.shape
        if not self.training:
            # the children's outputs live in scratch for this call: a backward redoes the pass
            self._fused_x = X
            with scratch_frame() as frame:
                b, s = self._run(X, "inference", frame)
                out = self._out.get(b.shape)
                np.add(b, s, out=out)
            for layer in self.children():  # their caches point into the scratch: let it go
                layer._x = layer._y = None
                if isinstance(layer, Residual):
                    layer._fused_x = None
            self._y = self._backend().relu_forward(out, out=out)
            return out
        b, s = self._run(X, "train")
        self._fused_x = None
        if (
            isinstance(self._out, Workspace)
            and not self.block[-1]._backward_reads_output
            and not np.may_share_memory(b, X)
            and not np.may_share_memory(b, s)
        ):
            out = b  # the block's last output, read by no backward: the sum goes over it
        else:
            out = self._out.get(b.shape)
        np.add(b, s, out=out)
        self._y = self._backend().relu_forward(out, out=out)
        return out

    def _regions(self, frame, size):
        """Scratch regions of ``size`` floats from ``frame`` for the children's outputs or input
        gradients: a ping-pong pair for the block, and a third that keeps the block's result
        while a non-identity shortcut runs."""
        return [frame.arena(size) for _ in range(3 if self._shortcut_layers() else 2)]

    def _child_floats(self, x_shape, which):
        """The largest child ``"input"`` (its input gradient) or ``"output"`` for a batch of
        input shape ``x_shape``, in float32 values."""
        key = (tuple(x_shape), which)
        cache = self.__dict__.setdefault("_child_sizes", {})
        if key not in cache:
            n, sizes = x_shape[0], []
            for _, layers in self._branches():
                s = tuple(x_shape[1:])
                for layer in layers:
                    if which == "input":
                        sizes.append(n * int(np.prod(s)))
                    s = layer.output_shape(s)
                    if which == "output":
                        sizes.append(n * int(np.prod(s)))
            if len(cache) > 8:
                cache.clear()
            cache[key] = max(sizes)
        return cache[key]

    def _backward(self, dY, need_dx):
        with scratch_frame() as frame:  # the ReLU's gradient lives for this call only
            d = self._backend().relu_backward(dY, self._y, dx=frame.take(dY.size).reshape(dY.shape))
            return self._backward_preact(d, need_dx)

    def _backward_preact(self, d, need_dx):
        """The backward from d = d loss / d(block(x) + shortcut(x)): both branches, their input
        gradients added. The children's input gradients ping-pong in scratch regions (a third
        one keeps the block's result while the shortcut runs), so the block holds no gradient
        buffer per child."""
        if self._fused_x is not None:  # the last forward was a fused inference pass: no caches
            X, self._fused_x = self._fused_x, None
            self._run(X, "train")
        branches = [(br, layers) for br, layers in self._branches() if layers]
        with scratch_frame() as frame:
            size = self._child_floats(self._x_shape, "input")
            regions = self._regions(frame, size)
            grads = {}
            for branch, layers in branches:
                free = [a for a in regions if not any(a.holds(g) for g in grads.values())]

                def call(step, dd, flag, layers=layers, free=free):
                    return backward_lent(layers[step.index], step, dd, flag, free)

                # without need_dx a branch stops at its lowest trainable layer (a frozen one: not run)
                grads[branch] = run_backward(self._plan(branch, "backward"), layers, d, need_dx, call=call)
            if not need_dx:
                return None
            dx = self._dx.get(self._x_shape)
            np.add(grads.get("block", d), grads.get("shortcut", d), out=dx)
            return dx
