"""Reusable scratch arrays: ``Workspace``, ``Arena`` and the per-thread ``scratch_frame``."""

from __future__ import annotations

import threading
from contextlib import contextmanager

import numpy as np

__all__ = ["Workspace", "Arena", "ScratchFrame", "scratch_frame"]


class Workspace:
    """One reusable array, reallocated only when a request does not fit it.

    ``get(shape)`` returns the leading ``shape[0]`` rows of a C-contiguous capacity array of
    ``dtype`` (default float32): a batch no larger than the largest one seen reuses the
    memory; another trailing shape or dtype reallocates. The contents are uninitialized and
    overwritten by the next user.
    """

    __slots__ = ("_arr", "_dtype")

    def __init__(self, dtype=np.float32) -> None:
        self._arr = None
        self._dtype = np.dtype(dtype)

    def get(self, shape, dtype=None):
        """An array of ``shape`` (and ``dtype``, default the workspace's)."""
        dtype = self._dtype if dtype is None else np.dtype(dtype)
        a = self._arr
        if a is None or a.shape[1:] != tuple(shape[1:]) or a.shape[0] < shape[0] or a.dtype != dtype:
            a = self._arr = np.empty(shape, dtype=dtype)
        return a[: shape[0]]


class Arena:
    """A region of memory lent to a different user at each call: ``get(shape)`` returns an
    array of exactly ``shape`` over the start of the region ``buf`` (1-D float32), whatever the
    previous user's shape (a ``Workspace`` reallocates when the trailing shape changes). Every
    array handed out shares that memory: it stays valid only until the next ``get`` (or
    another user of the region). ``Sequential`` lends such regions to steps whose output only
    the next step reads.
    """

    __slots__ = ("_buf",)

    def __init__(self, buf) -> None:
        self._buf = buf

    def holds(self, a) -> bool:
        """True when ``a`` (an array or None) may overlap the region."""
        return a is not None and np.may_share_memory(a, self._buf)

    def starts(self, a) -> bool:
        """True when ``a`` is float32, C-contiguous from the start of the region (what
        ``get(a.shape)`` returns)."""
        return (
            a.dtype == np.float32
            and a.flags.c_contiguous
            and a.size <= self._buf.size
            and a.ctypes.data == self._buf.ctypes.data
        )

    def get(self, shape, dtype=None):
        """An array of ``shape`` (float32) over the start of the region. ValueError when it
        does not fit, TypeError for another dtype."""
        if dtype is not None and np.dtype(dtype) != np.float32:
            raise TypeError("an Arena lends float32 arrays only")
        n = 1
        for s in shape:
            n *= int(s)
        if n > self._buf.size:
            raise ValueError(
                f"an array of shape {tuple(shape)} does not fit the region of {self._buf.size} floats"
            )
        return self._buf[:n].reshape(shape)


class _ScratchStack:
    """One thread's scratch memory, handed out last-in first-out by ``scratch_frame``."""

    __slots__ = ("buf", "top")

    def __init__(self) -> None:
        self.buf = np.empty(0, dtype=np.float32)
        self.top = 0


_LOCAL = threading.local()


class ScratchFrame:
    """The arrays of one ``scratch_frame``: ``take(n)`` returns n float32 values (1-D,
    uninitialized) after the frame's earlier ones, valid until the frame ends."""

    __slots__ = ("_stack",)

    def __init__(self, stack) -> None:
        self._stack = stack

    def take(self, n):
        """A 1-D float32 array of ``n`` values (64-byte steps between the frame's arrays)."""
        s = self._stack
        n = int(n)
        step = -(-n // 16) * 16
        if s.top + step > s.buf.size:
            # the arrays already handed out keep the old memory alive until their frames end;
            # later frames start from the new one's beginning
            s.buf = np.empty(max(s.top + step, s.buf.size + s.buf.size // 2), dtype=np.float32)
        a = s.buf[s.top : s.top + n]
        s.top += step
        return a

    def arena(self, n):
        """An ``Arena`` over ``take(n)``."""
        return Arena(self.take(n))


@contextmanager
def scratch_frame():
    """Scratch memory for the duration of a ``with`` block, from a per-thread stack (as
    oneDNN's per-thread scratchpad): the layers' kernel workspaces and the gradients that live
    only inside one backward call share it instead of each holding a buffer of its own, so the
    memory is the deepest nesting's, not the sum over the layers. Frames nest (a residual
    block's backward holds its frame while its children take theirs); each thread has its own
    stack, so models may run on several threads. The memory is kept for the thread's next
    frames (untouched pages cost nothing)."""
    stack = getattr(_LOCAL, "stack", None)
    if stack is None:
        stack = _LOCAL.stack = _ScratchStack()
    mark = stack.top
    try:
        yield ScratchFrame(stack)
    finally:
        stack.top = mark
