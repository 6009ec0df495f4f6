"""Inverted dropout: ``Dropout``."""

from __future__ import annotations

import numbers

import numpy as np

from .._workspace import Workspace
from .base_layer import Layer, check_shape

__all__ = ["Dropout"]


def _check_p(p):
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError(f"p must be a number in [0, 1), got {type(p).__name__}")
    p = float(p)
    if not 0.0 <= p < 1.0:
        raise ValueError(f"p must be in [0, 1), got {p}")
    return p


class Dropout(Layer):
    """Inverted dropout (as ``torch.nn.Dropout(p)``; Srivastava et al. 2014, "Dropout", JMLR).

    Parameters
    ----------
    p : float in [0, 1), default 0.5
        The probability of zeroing each value in training. ``p`` outside [0, 1) raises
        ValueError, a non-number TypeError (p = 1 would leave nothing to rescale).

    Any shape, float32. In training each value is kept with probability ``1 - p`` and scaled
    by ``1 / (1 - p)``; the backward multiplies dY by the same mask. In eval mode (and for
    ``p == 0``) it is the identity. The mask is drawn from this layer's own
    ``numpy.random.Generator``, spawned at build from the model's generator (the ``rng`` of
    ``build``): the stream is reproducible from the model's seed and does not shift the other
    layers' initialization. ``rng_state`` / ``set_rng_state`` save and restore it (a
    JSON-able ``bit_generator.state``) for checkpoints. Kernels: ``engine.dropout_forward`` /
    ``dropout_backward``.
    """

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        self.p = _check_p(p)
        self._rng: np.random.Generator | None = None
        self._mask = Workspace()
        self._out = Workspace()
        self._dx = Workspace()
        self._m = None

    def _config(self):
        return {"p": self.p}

    def output_shape(self, input_shape):
        return check_shape(input_shape)

    def _build(self, input_shape, rng) -> None:
        try:
            self._rng = rng.spawn(1)[0]
        except (TypeError, ValueError, AttributeError):  # a bit generator without a SeedSequence
            self._rng = np.random.default_rng(int(rng.integers(2**63)))

    def rng_state(self):
        """The mask generator's ``bit_generator.state`` (a JSON-able dict). Requires a built layer."""
        if self._rng is None:
            raise RuntimeError("Dropout is not built: its generator exists after build(input_shape)")
        return self._rng.bit_generator.state

    def set_rng_state(self, state):
        """Restore a state from ``rng_state``. Raises RuntimeError before build, TypeError /
        ValueError naming ``state`` for a state of another form."""
        if self._rng is None:
            raise RuntimeError("Dropout is not built: build(input_shape) before set_rng_state")
        if not isinstance(state, dict):
            raise TypeError(f"state must be a dict from rng_state(), got {type(state).__name__}")
        try:
            self._rng.bit_generator.state = state
        except (TypeError, ValueError, KeyError) as e:
            raise ValueError(f"state is not a {type(self._rng.bit_generator).__name__} state: {e}") from None

    def _forward(self, X):
        if not self.training or self.p == 0.0:
            self._m = None
            self._y = X
            return X
        mask = self._mask.get(X.shape)
        keep = self._rng.random(X.shape, dtype=np.float32) >= np.float32(self.p)
        np.multiply(keep, np.float32(1.0 / (1.0 - self.p)), out=mask)
        self._m = mask
        out = self._backend().dropout_forward(X, mask, out=self._out.get(X.shape))
        self._y = out
        return out

    def _backward(self, dY, need_dx):
        if not need_dx:
            return None
        if self._m is None:
            return dY
        return self._backend().dropout_backward(dY, self._m, dx=self._dx.get(dY.shape))
