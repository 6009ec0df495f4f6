"""The text of ``Embedder.summary``: the trunk's layer table (or its repr before the first fit),
the loss, the miner, the optimizer (what the last fit ran, else what the next one will) and the
distance.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import optim
from ._recipe import DEFAULTS

if TYPE_CHECKING:
    from ._embedder import Embedder

__all__ = ["describe"]


def describe(emb: Embedder) -> str:
    """``emb.summary()``: one line per part, the trunk's table first."""
    lines = []
    if emb.net.built:
        lines.append(emb.net.summary())
    else:
        lines.append(repr(emb.net) + "\n(not built: shapes are inferred at the first fit)")
    lines.append(
        f"Loss: {_describe(emb.loss_func)}"
        if emb.loss_func is not None
        else f"Loss: {emb._loss_spec} (built at the first fit, from the classes and the embedding size)"
    )
    miner = _describe(emb.miner_func) if emb.miner_func is not None else "None (all pairs/triplets)"
    lines.append(f"Miner: {miner}")
    lines.append(f"Optimizer: {_describe_optimizer(emb)}")
    dist = f"Euclidean between {'L2-normalized' if emb._normalizes() else 'raw'} embeddings"
    lines.append(f"Distance: {dist}; backend={emb.backend!r}; fitted={emb.fitted_}")
    return "\n".join(lines)


def _describe_optimizer(emb: Embedder) -> str:
    if emb.optimizer_ is not None:  # what the last fit ran
        name = type(emb.optimizer_).__name__
        if isinstance(emb.optimizer_, optim.Optimizer):
            g = emb.optimizer_.param_groups[0]
            extra = ", ".join(f"{k}={g[k]:g}" for k in ("momentum", "weight_decay") if k in g)
            return f"{name}({extra})" if extra else name
        return name
    if not isinstance(emb.optimizer, str):
        return getattr(emb.optimizer, "__name__", "callable")
    if emb.optimizer == "default":
        return (
            f"default: {DEFAULTS['optimizer']}, or sgd when fit's lr >= {DEFAULTS['sgd_min_lr']:g} "
            "(decided at fit)"
        )
    wd = DEFAULTS["weight_decay"].get(emb.optimizer, 0.0) if emb.weight_decay is None else emb.weight_decay
    extra = f", momentum={emb.momentum:g}" if emb.optimizer == "sgd" else ""
    return f"{emb.optimizer}{extra}, weight_decay={wd:g}"


def _describe(obj: object) -> str:
    attrs = []
    for name in ("margin", "pos_margin", "neg_margin", "type_of_triplets"):
        v = getattr(obj, name, None)
        if v is not None:
            attrs.append(f"{name}={v!r}" if isinstance(v, str) else f"{name}={float(v):g}")
    return f"{type(obj).__name__}({', '.join(attrs)})"
