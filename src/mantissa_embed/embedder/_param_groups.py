"""The optimizer's parameter groups of a fit: the trunk's trainable parameters, one group per
``lr_groups`` multiplier (fine-tuning), then the loss's parameters at ``lr * loss_lr_factor``.
"""

from __future__ import annotations

from collections.abc import Mapping

from .._validation import check_float

__all__ = ["check_lr_groups", "param_groups"]


def check_lr_groups(lr_groups):
    """``lr_groups`` as a new dict prefix -> float multiplier (None stays None). TypeError for a
    non-mapping or a non-str / empty prefix, ValueError for a negative or non-finite multiplier."""
    if lr_groups is None:
        return None
    if not isinstance(lr_groups, Mapping):
        raise TypeError(
            f"lr_groups must be a dict parameter-name prefix -> lr multiplier, got {type(lr_groups).__name__}"
        )
    out = {}
    for prefix, m in lr_groups.items():
        if not isinstance(prefix, str) or not prefix:
            raise TypeError(f"lr_groups keys must be non-empty str (parameter name prefixes), got {prefix!r}")
        out[prefix] = check_float(m, f"lr_groups[{prefix!r}]", minimum=0.0)
    return out


def _prefix_of(name, prefixes):
    """The longest of ``prefixes`` that ``name`` is or starts with (then a dot), or None."""
    best = None
    for p in prefixes:
        if (name == p or name.startswith(p + ".")) and (best is None or len(p) > len(best)):
            best = p
    return best


def param_groups(emb, lr):
    """The optimizer's parameter groups: the trunk's trainable parameters (``requires_grad``;
    frozen ones are left out) at ``lr`` times their ``emb.lr_groups`` multiplier (the longest
    matching name prefix; 1 for the others), one group per multiplier in the order the
    parameters come, then the loss's at ``lr * loss_lr_factor``. Raises ValueError for an
    ``lr_groups`` prefix that names no parameter of the trunk."""
    mults = emb.lr_groups or {}
    named = emb.net.named_parameters()
    for prefix in mults:
        if not any(n == prefix or n.startswith(prefix + ".") for n, _ in named):
            raise ValueError(
                f"lr_groups: prefix {prefix!r} matches no parameter of the trunk (names like {named[0][0]!r})"
                if named
                else f"lr_groups: prefix {prefix!r} matches no parameter: the trunk has none"
            )
    by_mult = {}  # multiplier -> parameters, in the order they come
    for name, p in named:
        if p.requires_grad:
            prefix = _prefix_of(name, mults)
            by_mult.setdefault(1.0 if prefix is None else mults[prefix], []).append(p)
    groups = [{"params": params, "lr": lr * m} for m, params in by_mult.items()]
    loss_params = getattr(emb.loss_func, "parameters", None)
    loss_params = list(loss_params()) if callable(loss_params) else []
    if loss_params:
        groups.append({"params": loss_params, "lr": lr * emb.loss_lr_factor})
    return [g for g in groups if g["params"]]
