"""Shared fixtures of the engine tests."""
import pytest

from mantissa_embed import engine

#: the SGEMM kernels this CPU runs: the conv paths differ between them (direct and Winograd
#: kernels only with avx512, im2col + SGEMM otherwise)
CONV_KERNELS = [k for k in ("generic", "avx512") if k == "generic" or engine.cpu_features()["avx512f"]]


@pytest.fixture(params=CONV_KERNELS)
def kernel(request):
    """Run the test once per SGEMM kernel in CONV_KERNELS (restored afterwards)."""
    prev = engine._set_gemm_kernel(request.param)
    yield request.param
    engine._set_gemm_kernel(prev)
