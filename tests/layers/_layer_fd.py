"""Finite-difference check of one layer (float32 forward/backward) against an independent
float64 forward written in the test."""

import numpy as np

from _helpers import central_diff, central_diff_inplace


def check_layer_gradients(layer, X, f64_forward, seed=0, rtol=1e-4, atol=1e-5, h=1e-6):
    """``f64_forward(X64, params64) -> Y64`` (params64: name -> float64 copy of each parameter).
    Checks the layer's Y, dX and every parameter gradient against central differences of
    ``sum(f64_forward(...) * R)`` for a random R."""
    rng = np.random.default_rng(seed)
    Y = np.array(layer.forward(X))
    R = rng.standard_normal(Y.shape)
    layer.zero_grad()
    dX = np.array(layer.backward(R.astype(np.float32)))
    X64 = X.astype(np.float64)
    params = {n: p.data.astype(np.float64) for n, p in layer.named_parameters()}
    np.testing.assert_allclose(Y, f64_forward(X64, params), rtol=rtol, atol=atol)
    np.testing.assert_allclose(
        dX, central_diff(lambda x: float((f64_forward(x, params) * R).sum()), X64, h), rtol=rtol, atol=atol
    )
    for name, p in layer.named_parameters():
        g = central_diff_inplace(lambda: float((f64_forward(X64, params) * R).sum()), params[name], h)
        np.testing.assert_allclose(p.grad, g, rtol=rtol, atol=atol, err_msg=name)
