"""The fusion planner: a Sequential's passes as flat lists of steps, one engine call each.

A plan is a list of ``Step``; ``Sequential`` runs a forward
plan as ``h = step.run(h)`` and a backward plan as ``d = step.run(d, need_dx)``, in order.
Layers take part by declaration, never by the planner testing their types:

- ``layer.fusion_tags()``: what the layer is to a neighbour's fusion, e.g. ``"conv2d"``,
  ``"maxpool2"`` (a 2x2 max pooling of stride 2) or ``"relu_output"`` (its output is a ReLU
  and it has ``_backward_preact(d, need_dx)``, its backward from the pre-activation gradient);
- ``layer.forward_fusions``: ``Fusion`` entries the layer leads at inference, longest
  first; ``tags[k]`` must be among the tags of the ``k``-th layer after it, and
  ``getattr(layer, method)(X, *those_layers)`` returns the last one's output;
- ``layer.backward_fusions``: entries the layer leads in the backward, with the one layer
  before it (``tags[0]``): ``getattr(layer, method)(dY)`` returns the gradient with respect to
  that layer's pre-activation, and the plan continues with its ``_backward_preact``.

Frozen layers (no parameter with ``requires_grad``): ``run_backward`` stops the backward at the
lowest trainable layer when no input gradient is wanted. Fused forwards leave no backward
caches; the plans are bitwise equal to the layer-by-layer passes (tests/layers/test_fused.py,
tests/engine/test_conv_pool_backward_fused.py).
"""

from __future__ import annotations

from time import perf_counter
from typing import NamedTuple

__all__ = ["Fusion", "Step", "plan_forward", "plan_backward", "lowest_trainable", "run_backward", "timed"]


class Fusion(NamedTuple):
    """A fused call a layer leads: ``name`` (the engine call), ``tags`` its neighbours must
    carry, ``method`` the lead layer's method that makes the call."""

    name: str
    tags: tuple
    method: str


class Step(NamedTuple):
    """One call of a plan: layers ``index .. index + width - 1``, ``name``, and ``run``."""

    index: int  # type: ignore[assignment]  # the field shadows tuple.index, as intended
    width: int
    name: str
    run: object


def _matches(layers, tags):
    return len(layers) == len(tags) and all(tag in layer.fusion_tags() for layer, tag in zip(layers, tags))


def _bind(method, others):
    def run(X):
        return method(X, *others)

    return run


def plan_forward(layers, fuse: bool = True, allow=None):
    """The forward plan of ``layers``: one step per layer, or at inference (``fuse``) the
    fusions the layers declare, chosen greedily from the first layer, longest first.
    ``allow(index, fusion) -> bool`` (default: all) can refuse a fusion."""
    steps, i, n = [], 0, len(layers)
    while i < n:
        lead = layers[i]
        step = Step(i, 1, "forward", lead.forward)
        if fuse:
            for f in lead.forward_fusions:
                others = layers[i + 1 : i + 1 + len(f.tags)]
                if _matches(others, f.tags) and (allow is None or allow(i, f)):
                    step = Step(i, 1 + len(others), f.name, _bind(getattr(lead, f.method), others))
                    break
        steps.append(step)
        i += step.width
    return steps


def _no_need_dx(method):
    def run(d, need_dx):
        return method(d)

    return run


def plan_backward(layers):
    """The backward plan of ``layers``, last layer first: each layer's ``backward``, or a
    declared backward fusion followed by the previous layer's ``_backward_preact``."""
    steps, i = [], len(layers) - 1
    while i >= 0:
        lead = layers[i]
        for f in lead.backward_fusions:
            if i > 0 and _matches(layers[i - 1 : i], f.tags):
                steps.append(Step(i, 1, f.name, _no_need_dx(getattr(lead, f.method))))
                steps.append(Step(i - 1, 1, "backward_preact", layers[i - 1]._backward_preact))
                i -= 2
                break
        else:
            steps.append(Step(i, 1, "backward", lead.backward))
            i -= 1
    return steps


def lowest_trainable(layers):
    """The index of the first of ``layers`` with a trainable parameter (``requires_grad``),
    ``len(layers)`` when none has one: below it a backward that needs no input gradient
    has nothing to compute."""
    for i, layer in enumerate(layers):
        if layer._trainable():
            return i
    return len(layers)


def run_backward(plan, layers, d, need_dx, call=None):
    """Run the backward ``plan`` of ``layers`` on ``d``. With ``need_dx`` every step runs and
    the input gradient is returned. Without it, the plan stops at the lowest trainable layer
    (``lowest_trainable``): that layer's step gets ``need_dx=False`` and the steps of the
    layers below it (frozen, no gradient to compute) do not run; returns None. A fused step
    whose lead is above the lowest trainable layer still runs whole. ``call(step, d, need_dx)``
    (default ``step.run(d, need_dx)``) runs a step."""
    lowest = 0 if need_dx else lowest_trainable(layers)
    for step in plan:
        if step.index < lowest:
            return None
        flag = need_dx or step.index > lowest
        d = step.run(d, flag) if call is None else call(step, d, flag)
    return d if need_dx else None


def timed(plan, times, slot):
    """``plan`` with every step adding its wall-clock seconds to ``times[step.index][slot]``."""

    def wrap(step):
        run, acc = step.run, times[step.index]

        def run_timed(*args):
            t = perf_counter()
            out = run(*args)
            acc[slot] += perf_counter() - t
            return out

        return step._replace(run=run_timed)

    return [wrap(s) for s in plan]
