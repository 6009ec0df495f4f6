"""RandomAffine: a random rotation, translation and scaling of each image about its centre."""

from __future__ import annotations

import numbers

import numpy as np

from .._validation import check_float
from ..backend import get_backend
from .base import Transform, check_pair


def affine_theta(angle, translate, scale, image_size):
    """The (N,2,3) float32 matrices of ``engine.affine_resample_forward`` (output -> input,
    normalized coordinates) for per-image rotations, translations and scalings about the centre.

    angle (N,) in degrees, counter-clockwise; translate (N,2) in pixels, (right, down);
    scale (N,) > 0; image_size (H, W). Each output image is the input rotated by ``angle``,
    scaled by ``scale``, then shifted by ``translate``, as ``torchvision.transforms.functional.affine``.
    """
    H, W = image_size
    a = np.deg2rad(np.asarray(angle, dtype=np.float64))
    t = np.asarray(translate, dtype=np.float64).reshape(-1, 2)
    s = np.asarray(scale, dtype=np.float64)
    c, sn = np.cos(a) / s, np.sin(a) / s
    # pixels (y down) about the centre: p_in = R(-angle) (p_out - t) / scale; normalized
    # coordinates divide x by W/2 and y by H/2
    theta = np.empty((a.shape[0], 2, 3))
    theta[:, 0, 0] = c
    theta[:, 0, 1] = -sn * H / W
    theta[:, 1, 0] = sn * W / H
    theta[:, 1, 1] = c
    theta[:, 0, 2] = -(c * t[:, 0] - sn * t[:, 1]) / (W / 2)
    theta[:, 1, 2] = -(sn * t[:, 0] + c * t[:, 1]) / (H / 2)
    return theta.astype(np.float32)


class RandomAffine(Transform):
    """Random affine transformation of each image about its centre, bilinear, zero fill
    (torchvision's ``RandomAffine`` with ``shear=None``, batched: one matrix per image and one
    ``engine.affine_resample_forward`` call per batch).

    Parameters
    ----------
    degrees : number or (min, max)
        Rotation angle range in degrees (counter-clockwise); a number d means (-d, d), d >= 0.
    translate : (a, b) in [0, 1], optional
        Maximal horizontal / vertical shift as fractions of W / H: tx ~ U(-a*W, a*W),
        ty ~ U(-b*H, b*H) pixels (continuous; torchvision rounds them to whole pixels).
    scale : (min, max), 0 < min <= max, optional
        Scale factor range, s ~ U(min, max).
    backend : "mantissa" (default) or "numpy"

    Per call the parameters of the N images are drawn from ``rng`` in this order: the N angles,
    then (with ``translate``) the N horizontal then the N vertical shifts, then (with ``scale``)
    the N scales (``sample_params``). ``degrees=0`` without translate and scale returns X
    exactly. Raises ValueError / TypeError naming the argument.
    """

    def __init__(
        self,
        degrees: float | tuple[float, float],
        translate: tuple[float, float] | None = None,
        scale: tuple[float, float] | None = None,
        backend: str = "mantissa",
    ) -> None:
        if isinstance(degrees, numbers.Real) and not isinstance(degrees, bool):
            d = check_float(degrees, "degrees", 0)
            self.degrees: tuple[float, float] = (-d, d)
        else:
            self.degrees = check_pair(degrees, "degrees")
        self.translate = (
            None if translate is None else check_pair(translate, "translate", 0, 1, ordered=False)
        )
        self.scale = None if scale is None else check_pair(scale, "scale", 0, strict=True)
        self._be = get_backend(backend)
        self.backend = backend

    def sample_params(self, n, image_size, rng):
        """The parameters of ``n`` images of ``image_size`` (H, W): ``(angle (n,) degrees,
        translate (n,2) pixels, scale (n,))``, drawn from ``rng`` as the call draws them."""
        H, W = image_size
        angle = rng.uniform(self.degrees[0], self.degrees[1], n)
        translate = np.zeros((n, 2))
        if self.translate is not None:
            translate[:, 0] = rng.uniform(-self.translate[0] * W, self.translate[0] * W, n)
            translate[:, 1] = rng.uniform(-self.translate[1] * H, self.translate[1] * H, n)
        scale = np.ones(n) if self.scale is None else rng.uniform(self.scale[0], self.scale[1], n)
        return angle, translate, scale

    def _apply(self, X, rng, out):
        N, _, H, W = X.shape
        theta = affine_theta(*self.sample_params(N, (H, W), rng), (H, W))
        return self._be.affine_resample_forward(X, theta, out=out)

    def _config(self):
        return {
            "degrees": list(self.degrees),
            "translate": None if self.translate is None else list(self.translate),
            "scale": None if self.scale is None else list(self.scale),
        }
