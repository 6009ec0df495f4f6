"""The fine-tuning methods of ``Sequential``: freezing parameters and BatchNorm
statistics by name prefix, and ``named_layers``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing_extensions import Self

    from ..parameter import Parameter
    from .base_layer import Layer

__all__ = ["FineTuning"]


class FineTuning:
    """``freeze`` / ``unfreeze`` / ``freeze_batchnorm`` / ``unfreeze_batchnorm`` /
    ``named_layers`` of a ``Sequential`` (which provides ``names``, ``layers``, ``built`` and
    ``named_parameters``)."""

    names: list[str]
    layers: list[Layer]
    if TYPE_CHECKING:

        @property
        def built(self) -> bool: ...

        def named_parameters(self) -> list[tuple[str, Parameter]]: ...

    def named_layers(self) -> list[tuple[str, Layer]]:
        """``[(name, layer), ...]``: every layer, depth first, the layers inside a block
        (``named_children``) after it with dotted names: ``"layer1.0"``, ``"layer1.0.conv1"``,
        ``"layer1.0.downsample.1"`` (as torch's ``named_modules``). A parameter's name is its
        layer's name, ``"."`` and the parameter's own (``"layer1.0.conv1.weight"``)."""
        out: list[tuple[str, Layer]] = []

        def walk(name, layer):
            out.append((name, layer))
            for child_name, child in layer.named_children():
                walk(f"{name}.{child_name}", child)

        for name, layer in zip(self.names, self.layers):
            walk(name, layer)
        return out

    def _matching(self, items, prefixes, what):
        """The ``(name, x)`` of ``items`` whose name is one of ``prefixes`` or starts with one and
        a dot (all of them for no prefix). TypeError for a non-str prefix, ValueError for a
        prefix matching nothing, RuntimeError before build."""
        if not self.built:
            raise RuntimeError("the model is not built: call build(input_shape) or forward(X) first")
        for p in prefixes:
            if not isinstance(p, str):
                raise TypeError(f"prefixes must be str (layer or parameter names), got {type(p).__name__}")
        items = list(items)
        if not prefixes:
            return items
        hits = [any(n == p or n.startswith(p + ".") for n, _ in items) for p in prefixes]
        for p, hit in zip(prefixes, hits):
            if not hit:
                raise ValueError(
                    f"prefix {p!r} matches no {what} (names like {items[0][0]!r}"
                    f"{', ' + repr(items[-1][0]) if len(items) > 1 else ''})"
                    if items
                    else f"prefix {p!r} matches no {what}: the model has none"
                )
        return [(n, x) for n, x in items if any(n == p or n.startswith(p + ".") for p in prefixes)]

    def _set_requires_grad(self, prefixes, flag):
        for _, p in self._matching(self.named_parameters(), prefixes, "parameter"):
            p.requires_grad = flag
        return self

    def freeze(self, *prefixes: str) -> Self:
        """Freeze the parameters whose name (``named_parameters``) is a prefix or starts with
        one and a dot: ``freeze("conv1", "bn1", "layer1")`` freezes ``"layer1.0.conv1.weight"``
        (not ``"layer10..."``); no prefix: every parameter. A frozen parameter has
        ``requires_grad=False``: the backward computes no gradient into it (and runs no layer
        below the lowest trainable one when no input gradient is wanted), optimizers skip it,
        ``Embedder.fit`` leaves it out of the optimizer. BatchNorm running statistics still
        update in training: ``freeze_batchnorm`` freezes those. Returns self.

        Raises RuntimeError before build, TypeError for a non-str prefix, ValueError for a
        prefix that matches no parameter (nothing changes then)."""
        return self._set_requires_grad(prefixes, False)

    def unfreeze(self, *prefixes: str) -> Self:
        """Undo ``freeze`` for the parameters matching ``prefixes`` (no prefix: every
        parameter): ``requires_grad=True``. Returns self; raises as ``freeze``."""
        return self._set_requires_grad(prefixes, True)

    def _set_frozen_stats(self, prefixes, flag):
        bns = [(n, x) for n, x in self.named_layers() if callable(getattr(x, "freeze_statistics", None))]
        for _, layer in self._matching(bns, prefixes, "BatchNorm layer"):
            layer.freeze_statistics(flag)
        return self

    def freeze_batchnorm(self, *prefixes: str) -> Self:
        """Frozen statistics for the BatchNorm layers (``BatchNorm2D`` / ``BatchNorm1D``, inside
        blocks too) whose name (``named_layers``: ``"bn1"``, ``"layer1.0.bn2"``) is a prefix or
        starts with one and a dot; no prefix: every one. In training they then normalize by
        their running statistics and leave them unchanged (``freeze_statistics``; torch:
        eval-mode BatchNorm in a train-mode net), their backward is the affine one; their
        ``weight`` / ``bias`` still train unless frozen with ``freeze``. Survives ``train()``.
        Returns self. Raises RuntimeError before build, TypeError for a non-str prefix,
        ValueError for a prefix that matches no BatchNorm layer."""
        return self._set_frozen_stats(prefixes, True)

    def unfreeze_batchnorm(self, *prefixes: str) -> Self:
        """Undo ``freeze_batchnorm`` (batch statistics in training again). Returns self; raises
        as ``freeze_batchnorm``."""
        return self._set_frozen_stats(prefixes, False)
