"""Pretrained weights: reading and writing ``.safetensors`` (and ``.npz``) state files with numpy only.

The names are the torch ``state_dict`` names. The ResNets of ``mantissa_embed.models`` name
their parameters and BatchNorm statistics as torchvision does (``conv1.weight``,
``bn1.running_mean``, ``layer1.0.conv1.weight``, ``layer2.0.downsample.0.weight``, ...), so
the name mapping is the identity: ``state_names(net)`` lists a net's names in order. timm's
ResNets use the same names. Another checkpoint's names are mapped with a dict comprehension
before saving it (e.g. ``{k.removeprefix("backbone."): v for k, v in state.items()}``).

The safetensors reader and writer (the format, the checks, why pickles are refused) are in
``models/_safetensors.py``; ``read_safetensors`` and ``write_safetensors`` are exported here.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Protocol

import numpy as np

from .._io import atomic_write, require_regular_file
from .._npz import NpzEntries
from .._validation import check_bool
from ._safetensors import (
    _PICKLE_EXTENSIONS,
    _conversion_hint,
    _read,
    _zip_holds_pickle,
    read_safetensors,
    write_safetensors,
)

__all__ = ["read_safetensors", "write_safetensors", "load_weights", "save_weights", "state_names"]

#: the dtypes a parameter or statistic may have in a file (read as float32)
_FLOATS = ("F32", "F16", "BF16")
_IGNORED_SUFFIX = ".num_batches_tracked"
_CLASSIFIER = "fc."
_HEAD = "head."


class _Net(Protocol):
    def named_parameters(self) -> Any: ...

    def named_buffers(self) -> Any: ...


def state_names(net: _Net) -> list[str]:
    """The names under which ``save_weights`` writes and ``load_weights`` reads ``net``'s state:
    its parameters (``net.named_parameters()``) then its buffers (``net.named_buffers()``, the
    BatchNorm statistics), in order. For the ResNets these are torchvision's ``state_dict`` names
    (without ``num_batches_tracked``, and with ``head.weight`` / ``head.bias`` for the embedding
    head instead of the classifier ``fc.*``)."""
    return [name for name, _ in net.named_parameters()] + [name for name, _ in net.named_buffers()]


def _targets(net: _Net) -> dict[str, np.ndarray]:
    if getattr(net, "built", True) is False:
        raise RuntimeError(
            "the model is not built: call build(input_shape) before load_weights / save_weights"
        )
    targets = {name: p.data for name, p in net.named_parameters()}
    targets.update(dict(net.named_buffers()))
    return targets


def _npz_dtype(dtype: np.dtype) -> str:
    if dtype.kind == "f" and dtype.itemsize in (2, 4):
        return "F32" if dtype.itemsize == 4 else "F16"
    return str(dtype)


class _State:
    """The entries of a .safetensors or .npz file: ``described`` maps each name to its (dtype name,
    shape); ``read(name)`` gives its array. A context manager (an .npz stays open until exit)."""

    def __init__(self, path: str) -> None:
        self._npz: NpzEntries | None = None
        if path.lower().endswith(".npz"):
            require_regular_file(path)
            if _zip_holds_pickle(path):
                raise ValueError(_conversion_hint(path))
            try:
                self._npz = NpzEntries(path)
            except ValueError as exc:
                raise ValueError(f"{path}: {exc}") from None
            self.described = {k: (_npz_dtype(d), shape) for k, (shape, d) in self._npz.headers.items()}
        else:
            self._arrays, dtypes = _read(path)
            self.described = {k: (dtypes[k], a.shape) for k, a in self._arrays.items()}
        self.path = path

    def read(self, key: str) -> np.ndarray:
        if self._npz is None:
            return self._arrays[key]
        try:
            return self._npz.read(key, floats=False)
        except ValueError as exc:
            raise ValueError(f"{self.path}: {exc}") from None

    def __enter__(self) -> _State:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._npz is not None:
            self._npz.close()


def load_weights(net: _Net, path: str | os.PathLike[str], strict: bool = True) -> dict[str, Any]:
    """Load a ``.safetensors`` (or ``.npz``) state file into a built ``net``, in place.

    File names map one-to-one to ``state_names(net)`` (the torchvision names for the ResNets).
    Always ignored: the classifier ``fc.*`` (when the net has no such names) and
    ``*.num_batches_tracked`` (torch's BatchNorm counter). ``head.*`` entries restore the
    embedding head when the net has one of the same shape; a net whose head is not in the file
    keeps its initial head even with ``strict`` (a pretrained torchvision file has no head).

    Parameters
    ----------
    net : Sequential
        A built model (``net.build(input_shape)``).
    path : str or os.PathLike
        ``.npz`` (by its extension; arrays under the same names) or safetensors (any other name).
    strict : bool, default True
        True: a missing trunk name, an unexpected name or a shape mismatch is a ``ValueError``
        naming the key (and both shapes) and nothing is modified. False: load what matches, warn
        (``UserWarning``) about the rest and report it.

    Returns ``{"loaded": [names], "missing": [net names not in the file], "unexpected": [file
    names the net lacks], "mismatched": {name: (file shape, net shape)}, "ignored": [fc.* and
    num_batches_tracked names]}``. Parameters and statistics must be F32, F16 or BF16
    (``float32`` / ``float16`` in an ``.npz``; converted to float32) and finite, whatever
    ``strict``: otherwise ``ValueError`` naming the file and the key, nothing modified. Every
    check runs before the first copy. See ``read_safetensors`` for the file errors (a pickle
    ``.pt`` / ``.pth`` is refused with the command converting it).
    """
    path = os.fspath(path)
    strict = check_bool(strict, "strict")
    targets = _targets(net)
    with _State(path) as state:
        return _load(targets, state, strict)


def _load(targets: dict[str, np.ndarray], state: _State, strict: bool) -> dict[str, Any]:
    path, described = state.path, state.described
    ignored = [
        k
        for k in described
        if k not in targets and (k.endswith(_IGNORED_SUFFIX) or k.startswith(_CLASSIFIER))
    ]
    unexpected = [k for k in described if k not in targets and k not in ignored]
    missing = [k for k in targets if k not in described]
    mismatched = {
        k: (shape, targets[k].shape)
        for k, (_, shape) in described.items()
        if k in targets and tuple(shape) != targets[k].shape
    }
    if strict:
        trunk_missing = [k for k in missing if not k.startswith(_HEAD)]
        problems = []
        if trunk_missing:
            problems.append(f"missing {trunk_missing}")
        if unexpected:
            problems.append(f"unexpected {unexpected}")
        problems += [
            f"{k!r} has shape {fs} in the file, {ns} in the net" for k, (fs, ns) in mismatched.items()
        ]
        if problems:
            raise ValueError(
                f"{path}: the file does not match the net (strict=True; strict=False loads "
                f"what matches): " + "; ".join(problems)
            )
    to_load = [k for k in targets if k in described and k not in mismatched]
    values = {}
    for key in to_load:
        dtype = described[key][0]
        if dtype not in _FLOATS:
            raise ValueError(
                f"{path}: entry {key!r} has dtype {dtype}; parameters and statistics must be "
                f"{', '.join(_FLOATS)}"
            )
        arr = np.asarray(state.read(key), dtype=np.float32)
        if not np.isfinite(arr).all():
            raise ValueError(f"{path}: entry {key!r} holds NaN or Inf")
        values[key] = arr
    for key, arr in values.items():
        np.copyto(targets[key], arr)
    skipped_missing = [k for k in missing if not k.startswith(_HEAD)]
    if not strict and (unexpected or mismatched or skipped_missing):
        details = [f"{k!r}: file {fs} vs net {ns}" for k, (fs, ns) in mismatched.items()]
        warnings.warn(
            f"load_weights({path!r}, strict=False): not loaded: missing {skipped_missing}, "
            f"unexpected {unexpected}, shape mismatches [{', '.join(details)}]",
            UserWarning,
            stacklevel=3,
        )
    return {
        "loaded": to_load,
        "missing": missing,
        "unexpected": unexpected,
        "mismatched": mismatched,
        "ignored": ignored,
    }


def save_weights(net: _Net, path: str | os.PathLike[str]) -> str:
    """Write a built ``net``'s parameters and buffers under ``state_names(net)``, atomically.

    ``.npz`` (by the extension) or safetensors (any other name but the pickle ones ``.pt`` /
    ``.pth``; metadata ``{"format": "pt"}``). Values are float32; each BatchNorm (a buffer named
    ``*.running_mean``) also gets ``*.num_batches_tracked``, an int64 0-d zero, as torch's
    ``state_dict`` has. For a ResNet the file loads into the torchvision model of the same depth
    with ``model.load_state_dict(state, strict=False)`` (``fc.*`` stay torch's, ``head.*`` are
    ignored), or strictly into one whose ``fc`` was removed (``model.fc = torch.nn.Identity()``)
    once ``head.*`` are dropped. Returns ``path`` as a str; raises ``RuntimeError`` for an unbuilt
    net, ``ValueError`` for a pickle extension.
    """
    path = os.fspath(path)
    if path.lower().endswith(_PICKLE_EXTENSIONS):
        raise ValueError(
            f"{path}: save_weights writes safetensors or .npz, not a pickle: use a "
            f".safetensors or .npz name (torch reads both without unpickling)"
        )
    tensors: dict[str, Any] = {}
    for name, arr in _targets(net).items():
        tensors[name] = np.ascontiguousarray(arr, dtype=np.float32)
        if name.endswith(".running_mean"):
            tensors[name[: -len("running_mean")] + "num_batches_tracked"] = np.zeros((), np.int64)
    if path.lower().endswith(".npz"):
        return atomic_write(path, lambda f: np.savez(f, **tensors))
    return write_safetensors(path, tensors, metadata={"format": "pt"})
