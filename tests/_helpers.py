"""Small shared fixtures-as-functions for the tests (importable because pytest's
``pythonpath`` includes ``tests/``). Seeded and independent of the code under test."""

from pathlib import Path

import numpy as np


def labelled_batch(seed, n, m, d, k):
    """Seeded float32 embeddings (n, d) with int64 labels in 0..k-1, plus a reference set
    (m, d) with its labels, or ``None, None`` when ``m`` is None."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    y = rng.integers(0, k, n)
    if m is None:
        return x, y, None, None
    return x, y, rng.standard_normal((m, d)).astype(np.float32), rng.integers(0, k, m)


def similarity_batch(seed, n, m, k, square, scale=1.0):
    """Seeded float32 similarities (n, m) uniform in [-scale, scale], int64 labels (n,) in
    0..k-1 and reference labels (m,); ``square``: m = n and the batch is its own reference."""
    rng = np.random.default_rng(seed)
    if square:
        m = n
    sim = (scale * rng.uniform(-1, 1, (n, m))).astype(np.float32)
    lab = rng.integers(0, k, n)
    rlab = lab.copy() if square else rng.integers(0, k, m)
    return sim, lab, rlab


def mat64(x, r, cosine):
    """float64 reference matrix between L2-normalized rows of x and r (r=None: x itself):
    cosine similarity when ``cosine``, else Euclidean distance."""

    def nrm(z):
        z = z.astype(np.float64)
        return z / np.linalg.norm(z, axis=1, keepdims=True)

    q = nrm(x)
    rr = q if r is None else nrm(r)
    return q @ rr.T if cosine else np.linalg.norm(q[:, None] - rr[None], axis=2)


def central_diff(f, x, h):
    """Central finite differences of the scalar function ``f`` at the float64 array ``x``:
    ``(f(x + h e_k) - f(x - h e_k)) / 2h`` for every element ``k`` (``x`` is not modified)."""
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += h
        xm[idx] -= h
        g[idx] = (f(xp) - f(xm)) / (2 * h)
    return g


def central_diff_inplace(f, a, h):
    """Central finite differences of the zero-argument ``f`` with respect to the array ``a`` it
    reads, perturbing ``a`` in place one element at a time (restored afterwards)."""
    g = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        old = a[idx]
        a[idx] = old + h
        fp = f()
        a[idx] = old - h
        fm = f()
        a[idx] = old
        g[idx] = (fp - fm) / (2 * h)
    return g


def grad_batch(seed, n, d, kind, k=3, scale=1.0):
    """The seeded batch of the finite-difference loss tests: x (n, d) float32, standard normal
    times ``scale``; labels by ``kind``: "one_class" all 0, "distinct" 0..n-1, otherwise drawn
    from k classes; kinds starting with "dups" copy x[0] into x[n-1] (n >= 2; each test file
    decides what the duplicate's label is). Returns (x, y, rng): rng continues the same stream
    (for reference batches)."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, d)) * scale).astype(np.float32)
    if kind == "one_class":
        y = np.zeros(n, np.int64)
    elif kind == "distinct":
        y = np.arange(n)
    else:
        y = rng.integers(0, k, n)
    if kind.startswith("dups") and n >= 2:
        x[n - 1] = x[0]
    return x, y, rng


def close_scaled(a, b, rtol=2e-5):
    """assert_allclose with an absolute slack of rtol times (1 + the largest |b|): float32
    results whose summation order differs from the reference's."""
    scale = float(np.abs(b).max()) if b.size else 0.0
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * (1.0 + scale))


DOCS = Path(__file__).resolve().parents[1] / "docs"


def run_threads(fn, n_threads=4, calls=6):
    """Call ``fn()`` ``calls`` times in each of ``n_threads`` threads at once; returns the
    exceptions raised (a list, empty when none)."""
    import threading

    errors = []

    def work():
        try:
            for _ in range(calls):
                fn()
        except Exception as e:  # noqa: BLE001 - returned to the test
            errors.append(e)

    ts = [threading.Thread(target=work) for _ in range(n_threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return errors


def small_fitted_embedder(n_classes, per_class, batch_size, seed=0):
    """A small_cnn_embedder(8) Embedder fitted one epoch (triplet loss) on random 12x12 images:
    ``(emb, X, y)``."""
    from mantissa_embed import Embedder, models

    rng = np.random.default_rng(seed)
    X = rng.random((n_classes * per_class, 1, 12, 12), dtype=np.float32)
    y = np.repeat(np.arange(n_classes), per_class)
    emb = Embedder(models.small_cnn_embedder(8), loss="triplet", seed=0)
    emb.fit(X, y, epochs=1, batch_size=batch_size)
    return emb, X, y


class CentersLoss:
    """A loss with a learnable parameter, for the testing kit's tests: L = sum_i |x_i - W[y_i]|^2
    (divided by N when ``mean``), W (num_classes, dim) float32 (zeros, or seeded normal with
    ``seed``). Each call sets ``W.grad = wgrad(W.grad + dL/dW)`` (``wgrad``: identity when None;
    a test passes a wrong one) and returns the exact embedding gradient."""

    def __init__(self, dim, num_classes=3, mean=True, seed=None, wgrad=None):
        from mantissa_embed.parameter import Parameter

        init = (
            np.zeros((num_classes, dim))
            if seed is None
            else np.random.default_rng(seed).standard_normal((num_classes, dim))
        )
        self.W = Parameter(init, name="W")
        self.mean = mean
        self.wgrad = (lambda g: g) if wgrad is None else wgrad

    def parameters(self):
        return [self.W]

    def __call__(self, embeddings, labels, indices_tuple=None):
        from mantissa_embed.losses import LossOutput

        x = np.asarray(embeddings, np.float64)
        diff = x - self.W.data[labels]
        div = len(x) if self.mean else 1
        gw = np.zeros(self.W.data.shape)
        np.add.at(gw, labels, -2 * diff / div)
        self.W.grad = self.wgrad(self.W.grad + gw)
        return LossOutput(float((diff**2).sum() / div), 2 * diff / div)
