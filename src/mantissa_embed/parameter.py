"""Learnable arrays: ``Parameter``."""

from __future__ import annotations

import numpy as np

from ._typing import ArrayLike
from ._validation import check_array, check_bool

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
    requires_grad : bool
        True at creation (as ``torch.nn.Parameter``). False freezes the parameter: the layers
        compute no gradient into ``grad`` (it is left as it was), an ``Optimizer`` step skips
        it (no update, no weight decay, no state), and ``Embedder.fit`` leaves it out of the
        optimizer. ``Sequential.freeze`` / ``unfreeze`` set it by parameter name. A non-bool
        raises ``TypeError``. Not saved with the weights (as torch's state dicts); ``Embedder.save`` records it.
    """

    __slots__ = ("data", "grad", "name", "_requires_grad")

    def __init__(self, data: ArrayLike, name: str = "") -> None:
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {type(name).__name__}")
        arr = check_array(data, "data")
        # check_array returns at least 1-D; keep the caller's shape (0-D scalars included)
        self.data = np.array(arr.reshape(np.shape(data)), dtype=np.float32, order="C", copy=True)
        self.grad = np.zeros(self.data.shape, dtype=self.data.dtype)  # calloc: no memory until written
        self.name = name
        self._requires_grad = True

    @property
    def requires_grad(self) -> bool:
        """False: frozen (no gradient computed, no optimizer update). Default True."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._requires_grad = check_bool(value, "requires_grad")

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
            raise ValueError(
                f"values for parameter {self.name or '?'} must have shape {self.data.shape}, got {arr.shape}"
            )
        np.copyto(self.data, arr)

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        frozen = "" if self._requires_grad else ", requires_grad=False"
        return f"Parameter{label}(shape={self.data.shape}, dtype=float32{frozen})"
