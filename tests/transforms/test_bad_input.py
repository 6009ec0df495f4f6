"""Bad arguments of the transforms and of the resampling kernels raise a ValueError /
TypeError naming the argument."""

import numpy as np
import pytest

from mantissa_embed import _reference as ref, engine, transforms as T

X = np.zeros((2, 1, 5, 5), np.float32)


@pytest.mark.parametrize(
    "make,exc,match",
    [
        (lambda: T.RandomAffine(-1), ValueError, "degrees"),
        (lambda: T.RandomAffine(float("nan")), ValueError, "degrees"),
        (lambda: T.RandomAffine("10"), TypeError, "degrees"),
        (lambda: T.RandomAffine((10, -10)), ValueError, "degrees"),
        (lambda: T.RandomAffine((1, 2, 3)), ValueError, "degrees"),
        (lambda: T.RandomAffine(True), TypeError, "degrees"),
        (lambda: T.RandomAffine(0, translate=(0.1, 1.5)), ValueError, "translate"),
        (lambda: T.RandomAffine(0, translate=(-0.1, 0.1)), ValueError, "translate"),
        (lambda: T.RandomAffine(0, translate=0.1), TypeError, "translate"),
        (lambda: T.RandomAffine(0, scale=(0, 1)), ValueError, "scale"),
        (lambda: T.RandomAffine(0, scale=(-1, 1)), ValueError, "scale"),
        (lambda: T.RandomAffine(0, scale=(1.2, 0.8)), ValueError, "scale"),
        (lambda: T.RandomAffine(0, scale=(1, "a")), TypeError, "scale"),
        (lambda: T.RandomAffine(0, backend="torch"), ValueError, "backend"),
        (lambda: T.RandomHorizontalFlip(1.5), ValueError, "p"),
        (lambda: T.RandomHorizontalFlip(-0.1), ValueError, "p"),
        (lambda: T.RandomHorizontalFlip(None), TypeError, "p"),
        (lambda: T.RandomCrop(0), ValueError, "size"),
        (lambda: T.RandomCrop(2.5), TypeError, "size"),
        (lambda: T.RandomCrop((2, 3, 4)), ValueError, "size"),
        (lambda: T.RandomCrop(3, padding=-1), ValueError, "padding"),
        (lambda: T.RandomCrop(3, padding=(1, 2, 3)), ValueError, "padding"),
        (lambda: T.RandomCrop(3, padding=1.5), TypeError, "padding"),
        (lambda: T.Compose([T.RandomHorizontalFlip(), lambda x, r: x]), TypeError, r"transforms\[1\]"),
        (lambda: T.Compose(T.RandomHorizontalFlip()), TypeError, "transforms"),
    ],
)
def test_bad_constructor_arguments(make, exc, match):
    with pytest.raises(exc, match=match):
        make()


@pytest.mark.parametrize(
    "x,rng,exc,match",
    [
        (np.zeros((1, 5, 5), np.float32), np.random.default_rng(0), ValueError, "X must be 4-D"),
        (np.zeros((2, 1, 5, 5), bool), np.random.default_rng(0), TypeError, "X"),
        ("abc", np.random.default_rng(0), TypeError, "X"),
        (X, 0, TypeError, "rng must be a numpy.random.Generator"),
        (X, np.random.RandomState(0), TypeError, "rng"),
    ],
)
@pytest.mark.parametrize(
    "t", [T.RandomAffine(5), T.RandomCrop(3), T.RandomHorizontalFlip(), T.Compose([])], ids=repr
)
def test_bad_call_arguments(t, x, rng, exc, match):
    with pytest.raises(exc, match=match):
        t(x, rng)


def test_crop_larger_than_the_padded_image():
    with pytest.raises(ValueError, match=r"size \(8, 8\) is larger than the padded image 7x7"):
        T.RandomCrop(8, padding=1)(X, np.random.default_rng(0))
    assert T.RandomCrop(7, padding=1)(X, np.random.default_rng(0)).shape == (2, 1, 7, 7)


@pytest.mark.parametrize("be", [engine, ref], ids=["engine", "numpy"])
def test_kernel_bad_arguments(be):
    theta = np.zeros((2, 2, 3), np.float32)
    with pytest.raises(ValueError, match="theta must have shape"):
        be.affine_resample_forward(X, np.zeros((3, 2, 3), np.float32))
    with pytest.raises(ValueError, match="theta must be 3-D"):
        be.affine_resample_forward(X, np.zeros((2, 6), np.float32))
    with pytest.raises(ValueError, match="theta contains NaN"):
        be.affine_resample_forward(X, np.full((2, 2, 3), np.nan, np.float32))
    with pytest.raises(ValueError, match="x must be 4-D"):
        be.affine_resample_forward(X[0], theta)
    with pytest.raises(ValueError, match="out must have shape"):
        be.affine_resample_forward(X, theta, out=np.zeros((2, 1, 5, 4), np.float32))
    with pytest.raises(TypeError, match="out must have dtype float32"):
        be.affine_resample_forward(X, theta, out=np.zeros(X.shape))
    x = np.zeros((2, 1, 5, 5), np.float32)
    with pytest.raises(ValueError, match="out must not share memory with x"):
        be.affine_resample_forward(x, theta, out=x)
    with pytest.raises(ValueError, match="dy must have the shape of x"):
        be.affine_resample_backward(X, theta, np.zeros((2, 1, 5, 4), np.float32))
    with pytest.raises(TypeError, match="need_dx"):
        be.affine_resample_backward(X, theta, X, need_dx=1)
    with pytest.raises(ValueError, match="dx must not share memory with dy"):
        be.affine_resample_backward(X, theta, x, dx=x)
