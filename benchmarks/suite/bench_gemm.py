"""SGEMM (``engine.sgemm``): square sizes and the products of ``small_cnn_embedder`` at batch 64."""

from __future__ import annotations

import numpy as np

from mantissa_embed import engine

# (M, N, K, trans_a, trans_b) of small_cnn_embedder(embed_dim=16) on 1x28x28, batch 64:
# dense 784->64 forward / weight grad / input grad, conv im2col products per sample,
# dense 64->16 forward
LAYER_SHAPES = {
    "dense1_fwd_64x64x784_NT": (64, 64, 784, False, True),
    "dense1_dW_64x784x64_TN": (64, 784, 64, True, False),
    "dense1_dX_64x784x64_NN": (64, 784, 64, False, False),
    "conv1_fwd_8x784x9_NN": (8, 784, 9, False, False),
    "conv2_fwd_16x196x72_NN": (16, 196, 72, False, False),
    "conv2_dcol_72x196x16_TN": (72, 196, 16, True, False),
    "conv2_dW_16x72x196_NT": (16, 72, 196, False, True),
    "dense2_fwd_64x16x64_NT": (64, 16, 64, False, True),
}


def _operands(M, N, K, ta, tb):
    rng = np.random.default_rng(0)
    A = rng.standard_normal((K, M) if ta else (M, K)).astype(np.float32)
    B = rng.standard_normal((N, K) if tb else (K, N)).astype(np.float32)
    return A, B, np.empty((M, N), np.float32)


class SgemmSquare:
    """C = A @ B, n x n x n, float32, 1 and 2 engine threads (GFLOP/s = 2 n^3 / time)."""

    params = ([256, 512, 1024, 2048], [1, 2])
    param_names = ["n", "threads"]
    timeout = 120

    def setup(self, n, threads):
        self._old = engine.get_num_threads()
        engine.set_num_threads(threads)
        self.A, self.B, self.C = _operands(n, n, n, False, False)

    def teardown(self, n, threads):
        engine.set_num_threads(self._old)

    def time_sgemm(self, n, threads):
        engine.sgemm(self.A, self.B, self.C)

    def peakmem_sgemm(self, n, threads):
        engine.sgemm(self.A, self.B, self.C)


class SgemmLayerShapes:
    """The SGEMM calls of one small_cnn_embedder batch of 64 (engine default threads)."""

    params = (list(LAYER_SHAPES),)
    param_names = ["shape"]

    def setup(self, shape):
        M, N, K, ta, tb = LAYER_SHAPES[shape]
        self.ta, self.tb = ta, tb
        self.A, self.B, self.C = _operands(M, N, K, ta, tb)

    def time_sgemm(self, shape):
        engine.sgemm(self.A, self.B, self.C, trans_a=self.ta, trans_b=self.tb)

    def peakmem_sgemm(self, shape):
        engine.sgemm(self.A, self.B, self.C, trans_a=self.ta, trans_b=self.tb)
