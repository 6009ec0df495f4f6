"""Parameter: storage, gradient buffer, validation."""

import numpy as np
import pytest

from mantissa_embed.parameter import Parameter


def test_parameter_copies_to_float32_and_has_zero_grad():
    src = np.arange(6, dtype=np.float64).reshape(2, 3)
    p = Parameter(src, name="w")
    assert p.data.dtype == np.float32 and p.data.flags.c_contiguous
    assert p.shape == (2, 3) and p.size == 6
    assert not np.shares_memory(p.data, src)
    src[0, 0] = 100
    assert p.data[0, 0] == 0
    assert p.grad.shape == (2, 3) and p.grad.dtype == np.float32 and not p.grad.any()
    assert "w" in repr(p)


def test_zero_grad_keeps_the_buffer():
    p = Parameter(np.ones(3))
    g = p.grad
    g += 5
    p.zero_grad()
    assert p.grad is g and not g.any()


def test_non_contiguous_input_is_made_contiguous():
    p = Parameter(np.ones((4, 4))[:, ::2])
    assert p.data.flags.c_contiguous and p.shape == (4, 2)


def test_assign():
    p = Parameter(np.zeros((2, 2)))
    buf = p.data
    p.assign([[1, 2], [3, 4]])
    assert p.data is buf and p.data[1, 1] == 4
    with pytest.raises(ValueError, match="shape"):
        p.assign(np.zeros(3))
    with pytest.raises(ValueError, match="NaN"):
        p.assign(np.full((2, 2), np.nan))


def test_bad_input():
    with pytest.raises(ValueError, match="NaN"):
        Parameter([1.0, np.nan])
    with pytest.raises(ValueError, match="Inf"):
        Parameter([np.inf])
    with pytest.raises(TypeError):
        Parameter("abc")
    with pytest.raises(TypeError):
        Parameter(None)
    with pytest.raises(TypeError):
        Parameter(np.array([True, False]))
    with pytest.raises(TypeError, match="name"):
        Parameter([1.0], name=3)


def test_scalar_parameter():
    p = Parameter(2.5)
    assert p.shape == () and p.data.dtype == np.float32 and p.grad.shape == ()
