"""``python -m mantissa_embed.datasets download mnist``: the one explicit download."""

from __future__ import annotations

import argparse
import sys

from . import _download
from .orl_faces import orl_instructions
from .paths import ENV_VAR, resolve_dir


def main(argv=None) -> int:
    """Command line: ``python -m mantissa_embed.datasets download mnist [--data-dir DIR] [--url-base URL] [--force]``.

    Returns the process exit code (0 on success, 1 on a failed download or checksum, 2 for
    a dataset that must be fetched by hand).
    """
    parser = argparse.ArgumentParser(
        prog="python -m mantissa_embed.datasets",
        description="Fetch datasets explicitly (nothing downloads implicitly).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    dl = sub.add_parser("download", help="download and verify a dataset")
    dl.add_argument("name", choices=["mnist", "orl_faces"])
    dl.add_argument(
        "--data-dir",
        default=None,
        help=f"root data directory (default: ${ENV_VAR} or ~/.cache/mantissa-embed); "
        "MNIST lands in DIR/mnist/",
    )
    dl.add_argument(
        "--url-base",
        default=None,
        help=f"base URL of the four .gz files (default: {_download.DEFAULT_URL_BASE}, "
        "then the other known mirrors); file:// works",
    )
    dl.add_argument("--force", action="store_true", help="download again even if present and valid")
    args = parser.parse_args(argv)
    root = resolve_dir(args.data_dir)
    if args.name == "orl_faces":
        print(orl_instructions(root), file=sys.stderr)
        return 2
    try:
        _download.download_mnist(root, args.url_base, force=args.force)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        if isinstance(exc, OSError):
            print(
                "hint: --url-base URL fetches from another mirror (or a local directory as "
                "file:///path/to/dir/)",
                file=sys.stderr,
            )
        return 1
    print(
        f"MNIST ready in {root / 'mnist'}; load it with "
        f"mantissa_embed.datasets.load('mnist', split='train', data_dir={str(root)!r})"
    )
    return 0
