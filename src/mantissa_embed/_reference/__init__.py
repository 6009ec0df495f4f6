"""The numpy twin of every engine entry point (the test oracle, and ``backend="numpy"``).

Each function here has the same name, signature and semantics as the function of the
same name in ``mantissa_embed.engine``; the tests check they agree. The twins are
written for clarity, not speed.
"""

from ._activations import *  # noqa: F401,F403
from ._conv import *  # noqa: F401,F403
from ._cpu import *  # noqa: F401,F403
from ._dense import *  # noqa: F401,F403
from ._distance import *  # noqa: F401,F403
from ._gemm import *  # noqa: F401,F403
from ._knn import *  # noqa: F401,F403
from ._mining import *  # noqa: F401,F403
from ._norm import *  # noqa: F401,F403
from ._optim import *  # noqa: F401,F403
from ._pair_losses import *  # noqa: F401,F403
from ._pair_weighting import *  # noqa: F401,F403
from ._pool import *  # noqa: F401,F403
from ._proxy_losses import *  # noqa: F401,F403
from ._ranking_losses import *  # noqa: F401,F403
from ._scatter import *  # noqa: F401,F403
from ._softmax_losses import *  # noqa: F401,F403
from ._transforms import *  # noqa: F401,F403
from ._tuple_losses import *  # noqa: F401,F403
