"""Batch-norm gradients against float64 central finite differences of the twin's float64 math
(``_reference._norm``): dx, dgamma, dbeta in training (through the batch statistics) and in eval,
with and without the output ReLU; odd shapes, batch 1 where training allows it."""

import numpy as np
import pytest

from _helpers import central_diff
from mantissa_embed._reference import _norm as nref


def _forward64(x, gamma, beta, rm, rv, training, relu, eps=1e-5):
    N, C = x.shape[:2]
    x3 = x.reshape(N, C, -1)
    mean, var = nref._stats(x3) if training else (rm, rv)
    y = nref._batchnorm(x3, gamma, beta, mean, 1 / np.sqrt(var + eps))
    return (np.maximum(y, 0) if relu else y).reshape(x.shape)


@pytest.mark.parametrize("shape", [(2, 3, 3, 5), (1, 2, 3, 3), (5, 3), (3, 1, 7), (4, 2, 1, 1)])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("relu", [False, True])
def test_gradients_match_finite_differences(shape, training, relu):
    rng = np.random.default_rng(sum(shape) + 7 * training + relu)
    C = shape[1]
    x = rng.standard_normal(shape) * 1.5 + 0.5
    gamma, beta = rng.uniform(0.5, 1.5, C), rng.standard_normal(C) * 0.3
    rm, rv = rng.standard_normal(C) * 0.2, rng.uniform(0.5, 2, C)
    w = rng.standard_normal(shape)  # the loss sum(w * y)

    def loss(x_=x, g_=gamma, b_=beta):
        return float((w * _forward64(x_, g_, b_, rm, rv, training, relu)).sum())

    N = shape[0]
    x3 = x.reshape(N, C, -1)
    mean, var = nref._stats(x3) if training else (rm, rv)
    y = _forward64(x, gamma, beta, rm, rv, training, relu).reshape(N, C, -1)
    g = np.where(y > 0, w.reshape(N, C, -1), 0.0) if relu else w.reshape(N, C, -1)
    dx, dgamma, dbeta = nref._batchnorm_grads(g, x3, gamma, mean, 1 / np.sqrt(var + 1e-5), training)
    h = 1e-6
    np.testing.assert_allclose(
        dx.reshape(shape), central_diff(lambda v: loss(x_=v), x, h), rtol=1e-6, atol=1e-7
    )
    np.testing.assert_allclose(dgamma, central_diff(lambda v: loss(g_=v), gamma, h), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(dbeta, central_diff(lambda v: loss(b_=v), beta, h), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("training", [True, False])
def test_float32_wrappers_agree_with_the_float64_gradients(training):
    """The public twin (float32 in and out) against the float64 math it rounds."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3, 4, 5, 3)).astype(np.float32)
    gamma, beta = rng.uniform(0.5, 1.5, 4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    rm, rv = np.zeros(4, np.float32), np.ones(4, np.float32)
    y, sm, si = nref.batchnorm_forward(x, gamma, beta, rm, rv, training)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    dx, dg, db = nref.batchnorm_backward(dy, x, gamma, sm, si, training=training)
    x64 = x.astype(np.float64)
    loss = lambda v: float((dy * _forward64(v, gamma, beta, np.zeros(4), np.ones(4), training, False)).sum())  # noqa: E731
    np.testing.assert_allclose(dx, central_diff(loss, x64, 1e-5), rtol=1e-4, atol=1e-5)
