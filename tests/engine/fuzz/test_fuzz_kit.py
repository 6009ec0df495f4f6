"""The fuzz kit itself can fail: it flags a write past a buffer, a modified input and an
undocumented exception."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _fuzz import Guards, Spec, fuzz_wrapper


def test_guards_flag_a_write_one_past_the_end():
    g = Guards()
    out = g.wrap("out", np.zeros(4, np.float32))
    g.snapshot()
    np.lib.stride_tricks.as_strided(out, shape=(5,))[4] = 1.0
    with pytest.raises(AssertionError, match="outside the buffer of 'out'"):
        g.check([out])


def test_guards_flag_a_modified_input():
    g = Guards()
    x = g.wrap("x", np.zeros((2, 3), np.float32))
    g.snapshot()
    x[1, 2] = 5.0
    with pytest.raises(AssertionError, match="input 'x' was modified"):
        g.check([])


def _raises_undocumented(x):
    raise RuntimeError("kaboom")


def _misnames(x):
    np.asarray(x, dtype=np.float32)  # an object array raises here, naming nothing
    raise TypeError("something went wrong")


@pytest.mark.parametrize("fn, error", [(_raises_undocumented, RuntimeError), (_misnames, AssertionError)])
def test_the_property_rejects_undocumented_errors(fn, error):
    spec = Spec(lambda draw: {"x": np.zeros(3, np.float32)})

    @settings(max_examples=20, deadline=None, database=None, derandomize=True)
    @given(data=st.data())
    def run(data):
        fuzz_wrapper(data, fn, spec, mutate_p=1.0)

    with pytest.raises(error):
        run()
