"""The base of the batched transforms (``Transform``), ``Compose`` and
``transform_from_config``."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._registry import build_from_config
from .._typing import ArrayLike, Float32Array
from .._validation import check_array, check_float
from .._workspace import Workspace

#: the transform classes of this package by class name (filled by ``Transform.__init_subclass__``),
#: for ``transform_from_config``
TRANSFORM_TYPES: dict[str, type[Transform]] = {}


def transform_from_config(cfg: dict[str, Any], where: str = "cfg") -> Transform:
    """A new transform from ``transform.get_config()`` output (a dict with ``"type"``, as
    ``json.loads`` gives it back: lists become tuples). Raises ValueError naming ``where`` for a
    malformed dict, an unknown type or bad arguments."""
    return build_from_config(cfg, TRANSFORM_TYPES, where)


def check_pair(v, name, minimum=None, maximum=None, *, strict: bool = False, ordered: bool = True):
    """A pair of finite numbers (tuple of two floats), each within [minimum, maximum]
    (``minimum`` excluded when ``strict``), the first <= the second when ``ordered``."""
    if isinstance(v, (str, bytes)) or not hasattr(v, "__len__"):
        raise TypeError(f"{name} must be a sequence of two numbers, got {type(v).__name__}")
    if len(v) != 2:
        raise ValueError(f"{name} must have two entries, got {len(v)}")
    pair = tuple(check_float(a, f"{name}[{i}]", minimum, strict=strict) for i, a in enumerate(v))
    if maximum is not None and max(pair) > maximum:
        raise ValueError(f"{name} entries must be <= {maximum}, got {tuple(v)}")
    if ordered and pair[0] > pair[1]:
        raise ValueError(f"{name} must be (min, max) with min <= max, got {tuple(v)}")
    return pair


def check_size_pair(v, name, minimum):
    """An int or a pair of ints (each >= minimum) -> a tuple of two ints."""
    items = (v, v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else v
    if isinstance(items, (str, bytes, bool)) or not hasattr(items, "__len__"):
        raise TypeError(f"{name} must be an int or a pair of ints, got {type(v).__name__}")
    if len(items) != 2:
        raise ValueError(f"{name} must be an int or a pair of ints, got {tuple(items)}")
    out = []
    for i, a in enumerate(items):
        if isinstance(a, bool) or not isinstance(a, numbers.Integral):
            raise TypeError(f"{name}[{i}] must be an int, got {type(a).__name__}")
        if a < minimum:
            raise ValueError(f"{name} entries must be >= {minimum}, got {tuple(items)}")
        out.append(int(a))
    return tuple(out)


class Transform:
    """Base class of the batched, seeded image transforms.

    Call contract: ``t(X, rng) -> X_aug``. ``X`` (N,C,H,W) float32 (other numeric dtypes are
    converted; X is never modified), ``rng`` a ``numpy.random.Generator`` (the only source of
    randomness, so a seeded generator reproduces the augmentation). ``X_aug`` is a float32
    C-contiguous buffer the transform owns: it is overwritten by the transform's next call (as a
    layer's forward output), never aliases ``X``, and is reused while the batch is no larger than
    the largest seen; copy it to keep it.

    Subclasses implement ``output_shape(input_shape)``, ``_apply(X, rng, out)`` and ``_config()``;
    ``get_config()`` is JSON-able and ``transform_from_config`` rebuilds the transform.
    Raises TypeError / ValueError naming ``X`` or ``rng``.
    """

    if TYPE_CHECKING:  # what every subclass implements

        def _apply(self, X: np.ndarray, rng: np.random.Generator, out: np.ndarray) -> np.ndarray: ...

        def _config(self) -> dict[str, Any]: ...

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__module__.startswith("mantissa_embed.transforms.") and not cls.__name__.startswith("_"):
            TRANSFORM_TYPES[cls.__name__] = cls

    def __call__(self, X: ArrayLike, rng: np.random.Generator) -> Float32Array:
        X = check_array(X, "X", 4, finite=False)
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        shape = self.output_shape(X.shape)
        ws = self.__dict__.get("_ws")
        if ws is None:
            ws = self._ws = Workspace()
        out = ws.get(shape)
        if np.may_share_memory(out, X):  # X is this transform's last output (one instance twice)
            out = np.empty(shape, dtype=np.float32)
        return self._apply(X, rng, out)

    def output_shape(self, input_shape):
        """The (N,C,H,W) shape of the output for an input of ``input_shape``."""
        return tuple(input_shape)

    def get_config(self) -> dict[str, Any]:
        """A JSON-able dict: ``{"type": class name, **constructor arguments}``."""
        return {"type": type(self).__name__, **self._config()}

    @classmethod
    def from_config(cls, kwargs, where: str = "cfg"):
        """The transform for ``get_config()`` minus ``"type"``; one holding transforms overrides it."""
        return cls(**kwargs)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._config().items())
        return f"{type(self).__name__}({args})"


class Compose(Transform):
    """Apply ``transforms`` (a sequence of ``Transform``) in order, as torchvision's
    ``Compose``, each drawing from the same ``rng``. Returns the last one's buffer (an empty
    Compose copies X into its own). Raises TypeError for an item that is not a Transform."""

    def __init__(self, transforms: Sequence[Transform]) -> None:
        if isinstance(transforms, Transform) or not hasattr(transforms, "__iter__"):
            raise TypeError(f"transforms must be a sequence of Transform, got {type(transforms).__name__}")
        self.transforms = list(transforms)
        for i, t in enumerate(self.transforms):
            if not isinstance(t, Transform):
                raise TypeError(f"transforms[{i}] must be a Transform, got {type(t).__name__}")

    def output_shape(self, input_shape):
        for t in self.transforms:
            input_shape = t.output_shape(input_shape)
        return tuple(input_shape)

    def __call__(self, X, rng):
        if not self.transforms:
            return super().__call__(X, rng)
        for t in self.transforms:
            X = t(X, rng)
        return X

    def _apply(self, X, rng, out):
        np.copyto(out, X)
        return out

    def _config(self):
        return {"transforms": [t.get_config() for t in self.transforms]}

    def __repr__(self) -> str:
        return f"Compose({self.transforms!r})"

    @classmethod
    def from_config(cls, kwargs, where: str = "cfg"):
        items = kwargs.get("transforms", ())
        if not isinstance(items, (list, tuple)):
            raise ValueError(f"{where}['transforms'] must be a list of transform configs")
        return cls([transform_from_config(c, f"{where}['transforms'][{i}]") for i, c in enumerate(items)])
