"""Embedding, exact search and evaluation beyond one process, on Dask (``pip install ".[dask]"``).

- ``embed``: a dask array of images -> a dask array of embeddings. The Embedder travels as
  its saved file's bytes, scattered once to every worker (``broadcast=True``), and is loaded
  once per worker process (cached by the bytes' digest), not once per chunk.
- ``knn``: the exact k nearest rows of a dask-array gallery for in-memory queries. One running
  top k per worker thread is folded through the gallery's blocks (each block searched by slices
  of rows, ``mantissa_embed.evaluation.knn``), then the threads' top k lists are merged by
  distance, ties to the lower global row: the single-process result (up to float32 rounding of
  near-equal distances at the k-th place), in bounded memory.
- ``ShardedIndex``: one ``Index`` per block of a dask-array gallery, built and kept on the
  workers (the blocks released once added); ``ShardedIndex.search`` folds and merges like
  ``knn``. ``build_index``: embed a dask array of images straight into a ``ShardedIndex``.
- ``evaluate``: pytorch-metric-learning's ``AccuracyCalculator`` k-NN metrics (precision_at_1,
  r_precision, mean_average_precision_at_r, ...) of a dask-array gallery (or images and an
  Embedder), the neighbours found block by block on the workers, the metrics computed by the
  ``AccuracyCalculator`` code: its single-process result, up to ``knn``'s near-tie swaps.

Every function takes ``client=None`` (the current ``distributed`` client) and raises ImportError
without dask / distributed, TypeError for a non-dask gallery.
"""

from ._embed import embed
from ._evaluate import KNN_ACCURACY_METRICS, evaluate
from ._knn import knn
from ._sharded_index import ShardedIndex, build_index

__all__ = ["embed", "knn", "ShardedIndex", "build_index", "evaluate", "KNN_ACCURACY_METRICS"]
