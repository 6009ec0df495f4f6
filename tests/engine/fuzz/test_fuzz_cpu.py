"""Fuzz of the thread-count and CPU-feature wrappers (``_engine/_cpu.pyx``)."""

from hypothesis import strategies as st

from _fuzz import Spec, family_test
from mantissa_embed import engine

_THREADS = engine.get_num_threads()

SPECS = {
    "get_num_threads": Spec(lambda draw: {}),
    "gemm_kernel_name": Spec(lambda draw: {}),
    "cpu_features": Spec(lambda draw: {}),
    "set_num_threads": Spec(lambda draw: {"n": draw(st.integers(1, 4))}, ints=("n",)),
}

test_fuzz = family_test(SPECS, restore=lambda: engine.set_num_threads(_THREADS))
