"""Scratch arrays reused across a loss's calls, one set per owner and thread.

Inside ``using_workspace(owner)``, :func:`scratch` returns the owner's arrays; outside it returns
None and callers allocate.
"""
from __future__ import annotations

import threading
import weakref
from contextlib import contextmanager

import numpy as np

_tls = threading.local()
_WORKSPACES = weakref.WeakKeyDictionary()


class _Workspace:
    __slots__ = ("bufs",)

    def __init__(self):
        self.bufs = {}

    def get(self, key, shape, dtype):
        b = self.bufs.get(key)
        if b is None or b.shape != shape or b.dtype != dtype:
            b = np.empty(shape, dtype=dtype)
            self.bufs[key] = b
        return b


@contextmanager
def using_workspace(owner):
    """Within the block :func:`scratch` returns ``owner``'s arrays; the next call overwrites them."""
    per = _WORKSPACES.get(owner)
    if per is None:
        per = {}
        _WORKSPACES[owner] = per
    tid = threading.get_ident()
    ws = per.get(tid)
    if ws is None:
        ws = per[tid] = _Workspace()
    prev = getattr(_tls, "ws", None)
    _tls.ws = ws
    try:
        yield ws
    finally:
        _tls.ws = prev


def scratch(key, shape, dtype=np.float64):
    """A reusable uninitialized array of the active workspace, or None outside ``using_workspace``."""
    ws = getattr(_tls, "ws", None)
    return None if ws is None else ws.get(key, tuple(shape), np.dtype(dtype))
