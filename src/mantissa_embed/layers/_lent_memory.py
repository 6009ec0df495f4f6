"""``LentMemory``: the memory ``Sequential`` lends to buffers only the next step reads.

At inference every step's output goes to one of two regions (ping-pong), so only two
activations exist at a time. In training the outputs the backward never reads (a ReLU output
pooled by the next layer) go to regions of their own, and the backward's input gradients
ping-pong in two regions laid over them. ``max_batch_for`` bounds an eval batch in bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .._validation import check_int
from .._workspace import Arena
from .base_layer import check_shape
from .fusion import plan_forward

__all__ = ["LentMemory", "backward_lent", "free_arena", "lend"]


def free_arena(arenas, h):
    """The first of ``arenas`` (``Arena``s) that does not hold ``h``: where a step whose input
    is ``h`` writes its output (ping-pong)."""
    return next(a for a in arenas if not a.holds(h))


def lend(layer, attr, arena, run, *args):
    """``run(*args)`` with ``layer``'s buffer ``attr`` (a ``Workspace``) replaced by ``arena``."""
    own = layer.__dict__.get(attr)
    if own is None:
        return run(*args)
    setattr(layer, attr, arena)
    try:
        return run(*args)
    finally:
        setattr(layer, attr, own)


def backward_lent(layer, step, d, need_dx, arenas):
    """``step.run(d, need_dx)`` (a backward step led by ``layer``) with the input gradient in
    the first of ``arenas`` not holding ``d``, or in ``d`` itself (in place) for a layer whose
    kernel allows it (``_dx_may_alias_dy``) when ``d`` starts one of ``arenas``."""
    held = [a for a in arenas if a.holds(d)]
    if held and getattr(layer, "_dx_may_alias_dy", False) and held[0].starts(d):
        arena = held[0]
    else:
        arena = free_arena(arenas, d)
    return lend(layer, "_dx", arena, step.run, d, need_dx)


class LentMemory:
    """Mixed into ``Sequential`` (which provides ``layers``, ``input_shape``, ``built``,
    ``_plan``, ``_allow``, ``_lent_memory`` and ``_arenas``)."""

    if TYPE_CHECKING:

        @property
        def built(self) -> bool: ...

    def _run_train(self, X):
        """The training forward (layer by layer), each dead output in a lent region of its own."""
        dead = sorted(self._dead_outputs())
        shapes = self._sample_shapes()
        # sized for the backward's two gradient regions too: growing the memory there would keep
        # this one alive (the layers' caches hold views of it) next to the new one
        regions = dict(
            zip(
                dead,
                self._lend_regions(
                    [X.shape[0] * int(np.prod(shapes[i + 1])) for i in dead],
                    reserve=2 * self._gradient_size(X.shape[0]),
                ),
            )
        )
        h = X
        for step in self._plan("train"):
            region = regions.get(step.index)
            h = step.run(h) if region is None else lend(self.layers[step.index], "_out", region, step.run, h)
        return h

    def _relu_pool_at(self):
        """Indices of the layers whose output ReLU's backward the next layer's backward applies
        (a Conv2D(act="relu") followed by a MaxPool2D)."""
        return frozenset(s.index for s in self._plan("backward") if s.name == "backward_preact")

    def _dead_outputs(self):
        """Indices of the layers whose training output only the next layer's forward reads: a
        layer with an output ReLU followed by a MaxPool2D (the pooling's fused backward takes the
        mask from its own output and argmax; the layer's ``_backward_preact`` reads its input,
        never its output)."""
        return self._relu_pool_at()

    def _sample_shapes(self):
        """``[input_shape, output shape of layer 0, ...]`` per sample (the built shape's)."""
        cached = self.__dict__.get("_shapes_cache")
        if cached is None or cached[0] != self.input_shape:
            shapes = [self.input_shape]
            for layer in self.layers:
                shapes.append(layer.output_shape(shapes[-1]))
            cached = self._shapes_cache = (self.input_shape, shapes)
        return cached[1]

    def _gradient_size(self, n):
        """The largest input gradient of the backward of ``n`` samples (float32 values)."""
        shapes = self._sample_shapes()
        return max(n * int(np.prod(shapes[s.index])) for s in self._plan("backward"))

    def _lend_regions(self, sizes, reserve=0):
        """``Arena`` regions of ``sizes`` float32 values laid end to end (64-byte aligned) over
        the lent memory, which grows to hold them (never shrinks; untouched pages cost no
        memory), to ``reserve`` values at least. Every pass lays its regions from the start
        again: the forward's dead outputs, then the backward's two gradient regions over them."""
        offsets, total = [], 0
        for size in sizes:
            offsets.append(total)
            total += -(-int(size) // 16) * 16
        total = max(total, -(-int(reserve) // 16) * 16)
        if self._lent_memory is None or self._lent_memory.size < total:
            self._lent_memory = None  # free the smaller one first
            self._lent_memory = np.empty(total, dtype=np.float32)
        return tuple(Arena(self._lent_memory[o : o + int(size)]) for o, size in zip(offsets, sizes))

    def _backward_step(self, step, d, need_dx):
        """One backward step, its input gradient in one of the lent regions (``backward_lent``)."""
        return backward_lent(self.layers[step.index], step, d, need_dx, self._arenas)

    def _inference_bytes(self, n, input_shape=None):
        """Estimated peak bytes of an eval-mode ``forward`` of ``n`` samples: the largest over the
        inference plan's steps of its input, its output (two lent regions), its layers' scratch
        (``_inference_scratch``, e.g. a convolution's workspace) and, for a fused step, its largest
        intermediate output (the unfused path a kernel may fall back to materializes it). A
        function of the model, the shape and ``n`` only."""
        return self._inference_estimate(input_shape)(n)

    def _inference_estimate(self, input_shape=None):
        """``n -> _inference_bytes(n, input_shape)``, with the shapes and the plan computed once."""
        shapes = [check_shape(self.input_shape if input_shape is None else input_shape)]
        for layer in self.layers:
            shapes.append(layer.output_shape(shapes[-1]))
        per_sample = [4 * int(np.prod(sh)) for sh in shapes]
        steps = [
            (s.index, s.index + s.width) for s in plan_forward(self.layers, fuse=True, allow=self._allow)
        ]

        def estimate(n):
            peak = 0
            for i, j in steps:
                scratch = sum(self.layers[k]._inference_scratch(n, shapes[k]) for k in range(i, j))
                inner = max((n * per_sample[k] for k in range(i + 1, j)), default=0)
                peak = max(peak, n * per_sample[i] + n * per_sample[j] + scratch + inner)
            return peak

        return estimate

    def max_batch_for(self, budget: int, input_shape: Sequence[int] | None = None) -> int:
        """The largest batch whose eval-mode ``forward`` stays within ``budget`` bytes of network
        buffers (estimated by ``_inference_bytes``: the two activations of the largest step, its
        workspace and fallback scratch; not the parameters nor buffers a training pass left), at
        least 1. Depends on the model, ``input_shape`` (default: the built one) and ``budget``
        only, never on the thread count or the free memory: chunking a stream of ``n`` inputs
        by ``min(batch_size, max_batch_for(budget))`` is deterministic in ``n`` (a sample's float32
        rounding can depend on the batch size it runs in, see ``forward``). Raises TypeError /
        ValueError for a bad ``budget`` or shape, RuntimeError for an unbuilt model without
        ``input_shape``. A result of 8 or more is a multiple of 8 (the Winograd kernels work on
        blocks of 8 images)."""
        budget = check_int(budget, "budget", minimum=1)
        if input_shape is None and not self.built:
            raise RuntimeError("the model is not built: pass input_shape or call build(input_shape) first")
        estimate = self._inference_estimate(input_shape)
        if estimate(1) > budget:
            return 1
        lo, hi = 1, 2
        while estimate(hi) <= budget:
            lo, hi = hi, 2 * hi
            if hi > 1 << 24:
                return lo
        while hi - lo > 1:  # the estimate grows with n: the largest n within the budget
            mid = (lo + hi) // 2
            if estimate(mid) <= budget:
                lo = mid
            else:
                hi = mid
        return lo - lo % 8 if lo >= 8 else lo  # whole blocks of 8 images for the Winograd kernels
