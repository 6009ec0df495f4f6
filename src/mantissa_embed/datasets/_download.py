"""Explicit, checksum-verified download of the MNIST IDX files.

Nothing in ``mantissa_embed.datasets`` downloads implicitly; this module is used only by
``python -m mantissa_embed.datasets download mnist [--data-dir DIR] [--url-base URL]``.

Each file is fetched with ``urllib`` into a temporary file next to its destination,
verified, then renamed into place (so an interrupted download never leaves a file that
looks complete). A file is accepted when either

* the SHA-256 of the ``.gz`` equals the published one (the files served by the CVDF and
  ossci mirrors, byte-identical to LeCun's originals: 9,912,422 / 28,881 / 1,648,877 /
  4,542 bytes), or
* the SHA-256 of its decompressed IDX payload equals the published one (a mirror that
  re-compressed the same data, which changes the gzip header but not the content).

Checksums: the ``.gz`` SHA-256 values published with the CVDF mirror; the MD5 values of
torchvision's ``MNIST.resources``.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import urllib.request
import zlib
from pathlib import Path
from typing import Any, Callable

from .._io import atomic_write

__all__ = ["MNIST_FILES", "DEFAULT_URL_BASE", "MIRRORS", "ChecksumError", "download_mnist", "verify_file"]

#: Default mirror (LeCun's original host often refuses downloads).
DEFAULT_URL_BASE = "https://storage.googleapis.com/cvdf-datasets/mnist/"
#: Known mirrors serving the same four files, tried in order when no ``url_base`` is given.
MIRRORS = (
    DEFAULT_URL_BASE,
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
)

#: file name -> (sha256 of the .gz, md5 of the .gz, sha256 of the decompressed IDX file)
MNIST_FILES = {
    "train-images-idx3-ubyte.gz": (
        "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
        "f68b3c2dcbeaaa9fbdd348bbdeb94873",
        "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    ),
    "train-labels-idx1-ubyte.gz": (
        "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
        "d53e105ee54ea40749a09fcbcd1e9432",
        "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    ),
    "t10k-images-idx3-ubyte.gz": (
        "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
        "9fb629c4189551a2d022fa330f9573f3",
        "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    ),
    "t10k-labels-idx1-ubyte.gz": (
        "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
        "ec29112dd5afa0611ce80d1b7f02629c",
        "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
    ),
}

_CHUNK = 1 << 20


class ChecksumError(ValueError):
    """A downloaded (or present) file does not match its published checksum."""


def _fetch(url, fileobj, timeout: float = 60.0) -> None:
    """Copy the resource at ``url`` into the binary ``fileobj`` (``http(s)://`` or ``file://``).

    Kept as a separate function so tests can replace it.
    """
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (explicit user request)
        shutil.copyfileobj(response, fileobj, _CHUNK)


def _digest(path, algo):
    h = hashlib.new(algo)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def _decompressed_sha256(path):
    h = hashlib.sha256()
    try:
        with gzip.open(path, "rb") as f:
            for chunk in iter(lambda: f.read(_CHUNK), b""):
                h.update(chunk)
    except (OSError, EOFError, zlib.error):
        return None
    return h.hexdigest()


def verify_file(path: str | os.PathLike[str], name: str) -> str:
    """Check ``path`` against the published checksums of the MNIST file ``name``.

    Returns ``"gz"`` when the compressed bytes match, ``"content"`` when only the
    decompressed IDX payload matches (a re-compressed mirror). Raises
    ``ChecksumError`` (a ``ValueError``) naming the file otherwise, and ``ValueError``
    for an unknown ``name``.
    """
    if name not in MNIST_FILES:
        raise ValueError(f"name must be one of {sorted(MNIST_FILES)}, got {name!r}")
    gz_sha, _md5, raw_sha = MNIST_FILES[name]
    got = _digest(path, "sha256")
    if got == gz_sha:
        return "gz"
    if _decompressed_sha256(path) == raw_sha:
        return "content"
    raise ChecksumError(
        f"checksum mismatch for {name} ({path}): sha256 {got}, expected {gz_sha} "
        f"(or a decompressed payload with sha256 {raw_sha})"
    )


def download_mnist(
    data_dir: str | os.PathLike[str],
    url_base: str | None = None,
    *,
    force: bool = False,
    log: Callable[[str], Any] | None = print,
) -> list[Path]:
    """Download and verify the four MNIST IDX files into ``<data_dir>/mnist/``.

    Parameters
    ----------
    data_dir : str or os.PathLike
        Root data directory; the files land in its ``mnist/`` subfolder (created).
    url_base : str, optional
        Base URL the file names are appended to (``https://``, ``http://`` or ``file://``).
        Default: try ``MIRRORS`` in order.
    force : bool, default False
        Re-download files that are already present and valid.
    log : callable or None
        Progress messages go here (``print`` by default; None silences them).

    Returns
    -------
    list of pathlib.Path
        The four verified files.

    Raises
    ------
    ChecksumError (a ValueError)
        A fetched file does not match its checksum (the temporary file is removed and
        nothing is left at the destination).
    OSError
        Every mirror failed (network error, missing file); the message lists each failure.
    """
    log = log or (lambda *a, **k: None)
    dest_dir = Path(data_dir).expanduser() / "mnist"
    dest_dir.mkdir(parents=True, exist_ok=True)
    bases = (url_base,) if url_base else MIRRORS
    out = []
    for name in MNIST_FILES:
        dest = dest_dir / name
        if dest.exists() and not force:
            try:
                verify_file(dest, name)
                log(f"{name}: present and verified ({dest})")
                out.append(dest)
                continue
            except ChecksumError:
                log(f"{name}: present but checksum differs, downloading again")
        errors = []
        for base in bases:
            url = base if base.endswith("/") else base + "/"
            url += name
            checked = []  # verify_file's answer, set by the check before the rename
            log(f"{name}: fetching {url}")
            try:
                atomic_write(
                    dest,
                    lambda f, url=url: _fetch(url, f),
                    suffix=".part",
                    check=lambda tmp, name=name: checked.append(verify_file(tmp, name)),
                )
                how = checked[0]
                log(f"{name}: verified ({'sha256' if how == 'gz' else 'decompressed sha256'}) -> {dest}")
                break
            except OSError as exc:  # URLError is an OSError (a ChecksumError, a ValueError, propagates);
                # atomic_write has removed the partial file either way
                errors.append(f"{url}: {exc}")
        else:
            raise OSError(f"could not download {name}:\n  " + "\n  ".join(errors))
        out.append(dest)
    return out
