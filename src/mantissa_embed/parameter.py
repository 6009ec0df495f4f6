"""Learnable arrays: ``Parameter``."""
from __future__ import annotations

import numpy as np

from ._typing import ArrayLike
from ._validation import check_array

__all__ = ["Parameter"]


class Parameter:
    """A learnable float32 array and its gradient (the analogue of ``torch.nn.Parameter``).

    Parameters
    ----------
    data : array_like
        The initial value, any shape; copied into a new float32 C-contiguous array.
        NaN/Inf raise ``ValueError``, non-numeric input ``TypeError``.
    name : str, default ""
        A label used by ``repr`` and by model summaries.

    Attributes
    ----------
    data : numpy.ndarray
        float32, C-contiguous, owned by the parameter. Optimizers update it **in place**;
        to set new values keep the buffer (``p.data[...] = values`` or ``assign``).
    grad : numpy.ndarray
        float32 array of ``data.shape``, zeros at creation. Backward passes **accumulate**
        into it (as PyTorch does); ``zero_grad`` (or an optimizer's ``zero_grad()``)
        clears it in place.
    """

    __slots__ = ("data", "grad", "name")

    def __init__(self, data: ArrayLike, name: str = "") -> None:
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {type(name).__name__}")
        arr = check_array(data, "data")
        # check_array returns at least 1-D; keep the caller's shape (0-D scalars included)
        self.data = np.array(arr.reshape(np.shape(data)), dtype=np.float32, order="C", copy=True)
        self.grad = np.zeros_like(self.data)
        self.name = name

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of ``data`` (tuple of int)."""
        return self.data.shape

    @property
    def size(self) -> int:
        """The number of scalars in ``data`` (int)."""
        return int(self.data.size)

    def zero_grad(self) -> None:
        """Set ``grad`` to zeros, in place (the array object is kept)."""
        self.grad.fill(0.0)

    def assign(self, values: ArrayLike) -> None:
        """Copy ``values`` (same shape, finite) into ``data`` in place.

        Raises ``ValueError`` for a different shape or non-finite values, ``TypeError``
        for non-numeric input.
        """
        arr = check_array(values, f"values for parameter {self.name or '?'}")
        if arr.shape != self.data.shape:
            raise ValueError(f"values for parameter {self.name or '?'} must have shape "
                             f"{self.data.shape}, got {arr.shape}")
        np.copyto(self.data, arr)

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"Parameter{label}(shape={self.data.shape}, dtype=float32)"
