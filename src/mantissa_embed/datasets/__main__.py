"""``python -m mantissa_embed.datasets download mnist [--data-dir DIR] [--url-base URL] [--force]``."""

import sys

from .cli import main

sys.exit(main())
