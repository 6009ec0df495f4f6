"""Typed wrappers around the mantissa C engine (``src/engine_c/engine.h``).

One function per C entry point, re-exported from the family modules of
``mantissa_embed._engine`` (each lists its public functions in ``__all__``). Inputs are
validated once (float32, C-contiguous, shapes), then the engine call runs with the GIL released.
Every public function has a numpy twin with the same signature in ``mantissa_embed._reference``.
"""

from mantissa_embed._engine._activations import *  # noqa: F401,F403
from mantissa_embed._engine._conv import *  # noqa: F401,F403
from mantissa_embed._engine._cpu import *  # noqa: F401,F403
from mantissa_embed._engine._cpu import _adapt_num_threads, _num_threads_generation, _set_gemm_kernel  # noqa: F401
from mantissa_embed._engine._dense import *  # noqa: F401,F403
from mantissa_embed._engine._distance import *  # noqa: F401,F403
from mantissa_embed._engine._gemm import *  # noqa: F401,F403
from mantissa_embed._engine._gemm import _sgemm_st  # noqa: F401
from mantissa_embed._engine._knn import *  # noqa: F401,F403
from mantissa_embed._engine._mining import *  # noqa: F401,F403
from mantissa_embed._engine._norm import *  # noqa: F401,F403
from mantissa_embed._engine._optim import *  # noqa: F401,F403
from mantissa_embed._engine._pair_losses import *  # noqa: F401,F403
from mantissa_embed._engine._pair_weighting import *  # noqa: F401,F403
from mantissa_embed._engine._pool import *  # noqa: F401,F403
from mantissa_embed._engine._proxy_losses import *  # noqa: F401,F403
from mantissa_embed._engine._ranking_losses import *  # noqa: F401,F403
from mantissa_embed._engine._scatter import *  # noqa: F401,F403
from mantissa_embed._engine._softmax_losses import *  # noqa: F401,F403
from mantissa_embed._engine._transforms import *  # noqa: F401,F403
from mantissa_embed._engine._tuple_losses import *  # noqa: F401,F403
