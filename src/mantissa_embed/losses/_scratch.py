"""Scratch arrays reused across a loss's calls, one set per owner and thread.

Inside ``using_workspace(owner)``, ``scratch`` returns the owner's arrays (one
``Workspace`` per key); outside it returns None and callers
allocate.
"""

from __future__ import annotations

import threading
import weakref
from contextlib import contextmanager

import numpy as np

from .._workspace import Workspace

_tls = threading.local()
_OWNERS: weakref.WeakKeyDictionary[object, dict[int, dict[str, Workspace]]] = weakref.WeakKeyDictionary()


@contextmanager
def using_workspace(owner):
    """Within the block ``scratch`` returns ``owner``'s arrays; the next call overwrites them."""
    per = _OWNERS.get(owner)
    if per is None:
        per = _OWNERS[owner] = {}
    spaces = per.setdefault(threading.get_ident(), {})
    prev = getattr(_tls, "spaces", None)
    _tls.spaces = spaces
    try:
        yield spaces
    finally:
        _tls.spaces = prev


def scratch(key, shape, dtype=np.float64):
    """An uninitialized array of the active workspace, or None outside ``using_workspace``."""
    spaces = getattr(_tls, "spaces", None)
    if spaces is None:
        return None
    ws = spaces.get(key)
    if ws is None:
        ws = spaces[key] = Workspace(dtype)
    return ws.get(tuple(shape), dtype)
