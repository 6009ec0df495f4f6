"""Type aliases of the public signatures (annotations only; nothing here runs at import time
beyond building the aliases)."""

from __future__ import annotations

from typing import Any, Union

import numpy as np
import numpy.typing as npt

__all__ = ["ArrayLike", "Float32Array", "Int64Array", "IndicesTuple", "Seed"]

#: anything ``numpy.asarray`` accepts (lists, arrays, scalars); checked at run time
ArrayLike = npt.ArrayLike
#: a float32 array (the engine's dtype): what the public functions return
Float32Array = npt.NDArray[np.float32]
#: an int64 array (labels, indices)
Int64Array = npt.NDArray[np.int64]
#: an int seed >= 0, a ``numpy.random.Generator``, or None (fresh entropy, where allowed)
Seed = Union[int, np.random.Generator, None]
#: a loss's ``indices_tuple``: pairs ``(a1, p, a2, n)`` or triplets ``(a, p, n)`` of int arrays
#: (or sequences of ints); the items stay ``Any`` as the tuple is often passed through unchanged
IndicesTuple = tuple[Any, ...]
