"""Shared fixtures of the engine tests."""

import pytest

from mantissa_embed import engine

#: the SGEMM kernels this CPU runs: the conv paths differ between them (im2col + SGEMM with
#: generic; direct kernels with avx2; direct and Winograd kernels with avx512)
_CPU = engine.cpu_features()
CONV_KERNELS = (
    ["generic"]
    + (["avx2"] if _CPU["avx2"] and _CPU["fma"] else [])
    + (["avx512"] if _CPU["avx512f"] and _CPU["fma"] else [])
)


@pytest.fixture(params=CONV_KERNELS)
def kernel(request):
    """Run the test once per SGEMM kernel in CONV_KERNELS (restored afterwards)."""
    prev = engine._set_gemm_kernel(request.param)
    yield request.param
    engine._set_gemm_kernel(prev)
