"""Reusable scratch arrays: ``Workspace``."""
from __future__ import annotations

import numpy as np

__all__ = ["Workspace"]


class Workspace:
    """One reusable array, reallocated only when a request does not fit it.

    ``get(shape)`` returns the leading ``shape[0]`` rows of a C-contiguous capacity array of
    ``dtype`` (default float32): a batch no larger than the largest one seen reuses the
    memory; another trailing shape or dtype reallocates. ``sized(n, size)`` returns a 1-D
    array of ``size()`` elements, calling ``size`` only when the key ``n`` (e.g. the batch
    size) changes. The contents are uninitialized and overwritten by the next user.
    """

    __slots__ = ("_arr", "_dtype", "_key", "_n")

    def __init__(self, dtype=np.float32) -> None:
        self._arr = None
        self._dtype = np.dtype(dtype)
        self._key = None
        self._n = 0

    def get(self, shape, dtype=None):
        """An array of ``shape`` (and ``dtype``, default the workspace's)."""
        dtype = self._dtype if dtype is None else np.dtype(dtype)
        a = self._arr
        if a is None or a.shape[1:] != tuple(shape[1:]) or a.shape[0] < shape[0] or a.dtype != dtype:
            a = self._arr = np.empty(shape, dtype=dtype)
        return a[:shape[0]]

    def sized(self, n, size):
        """A 1-D array of ``size()`` elements; ``size`` is called again only when ``n`` changes."""
        if self._key != n:
            self._n = size()
            self._key = n
        return self.get((self._n,))
