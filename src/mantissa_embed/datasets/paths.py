"""Where the datasets live: ``data_dir``, else ``$MANTISSA_EMBED_DATA``, else the user cache."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

ENV_VAR = "MANTISSA_EMBED_DATA"
"""The environment variable that sets the data directory when ``data_dir`` is None."""


def default_data_dir() -> Path:
    """The data directory used when ``data_dir`` is None.

    ``$MANTISSA_EMBED_DATA`` when set, else ``$XDG_CACHE_HOME/mantissa-embed``
    (``~/.cache/mantissa-embed``). Returns a ``pathlib.Path`` (not created).
    """
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return Path(cache).expanduser() / "mantissa-embed"


def resolve_dir(data_dir: str | os.PathLike[str] | None) -> Path:
    if data_dir is None:
        return default_data_dir()
    if not isinstance(data_dir, (str, os.PathLike)):
        raise TypeError(f"data_dir must be a str or os.PathLike, got {type(data_dir).__name__}")
    return Path(data_dir).expanduser()


def download_command(root: str | os.PathLike[str]) -> str:
    return f"python -m mantissa_embed.datasets download mnist --data-dir {shlex.quote(str(root))}"
