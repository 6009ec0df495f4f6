"""Image datasets as ``(X, y)`` arrays, plus the splits metric learning needs.

Every loader returns ``X`` float32 NCHW in [0, 1] and ``y`` int64, in a deterministic order.
Nothing downloads implicitly: a missing file raises ``FileNotFoundError`` whose message
holds the command (or manual step) that fixes it. The one explicit download is
``python -m mantissa_embed.datasets download mnist [--data-dir DIR] [--url-base URL]``, which
fetches the four MNIST IDX files into ``DIR/mnist/`` and verifies their published SHA-256.

Data directory: the ``data_dir`` argument, else ``$MANTISSA_EMBED_DATA``, else
``$XDG_CACHE_HOME/mantissa-embed`` (``~/.cache/mantissa-embed``).

Datasets: ``digits`` (scikit-learn's bundled 8x8 digits, 1,797 images, no network), ``mnist``
(LeCun, Cortes & Burges 1998; 60,000 train / 10,000 test, 28x28) and ``orl_faces`` (the
ORL / AT&T faces, Samaria & Harter 1994; 40 subjects x 10 images, 92x112).

Image files: ``ImageFolder`` (one sub-folder per class, torchvision's layout) and ``ImageCSV``
(Open Metric Learning's CSV columns) list labelled files and decode them on demand, on threads;
``Embedder.fit`` / ``embed`` / ``build_index`` / ``calibrate`` / ``evaluate`` take them in
place of arrays and stream them (docs/image_files.md).
"""

from . import image_transforms
from ._pillow import ImageFileError
from .cli import main
from .image_csv import ImageCSV
from .image_dataset import ImageDataset
from .image_folder import ImageFolder
from .loader import DATASETS, load
from .mnist import read_idx
from .orl_faces import read_pgm
from .paths import ENV_VAR, default_data_dir
from .resize import pad_or_resize
from .splits import split_by_class, subset

__all__ = [
    "ImageDataset",
    "ImageFolder",
    "ImageCSV",
    "ImageFileError",
    "image_transforms",
    "DATASETS",
    "ENV_VAR",
    "default_data_dir",
    "load",
    "read_idx",
    "read_pgm",
    "subset",
    "split_by_class",
    "pad_or_resize",
    "main",
]
