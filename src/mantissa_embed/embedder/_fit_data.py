"""``fit``'s data: ``X`` and ``y`` checked against the trunk (an array or an ``ImageDataset``), the
per-sample shape, and the split of ``validation`` into training and validation sets.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_array, check_labels
from ..datasets.image_dataset import ImageDataset
from ._inference import labels_for

__all__ = [
    "INPUT_NDIMS",
    "check_inputs",
    "sample_shape",
    "take_rows",
    "check_dataset",
    "check_fit_data",
    "check_validation_data",
    "split_validation",
]


#: the ranks of ``fit``'s ``X``: 4 for images (N, C, H, W), 2 for feature vectors (N, F)
INPUT_NDIMS = (4, 2)


def check_inputs(X: object, name: str, input_shape: tuple[int, ...] | None = None) -> np.ndarray:
    """``X`` as float32, checked as ``fit``'s input: numeric, non-empty, finite, 4-D images
    (N, C, H, W) or 2-D feature vectors (N, F), and of per-sample shape ``input_shape`` when
    given (the trunk's, once built). TypeError / ValueError naming ``name``."""
    X = check_array(X, name, allow_empty=False)
    if input_shape is None and X.ndim not in INPUT_NDIMS:
        raise ValueError(
            f"{name} must be 4-D images (N, C, H, W) or 2-D feature vectors (N, F), "
            f"got {X.ndim}-D shape {X.shape}"
        )
    if input_shape is not None and tuple(X.shape[1:]) != tuple(input_shape):
        kind = "feature vectors" if len(input_shape) == 1 else "images"
        raise ValueError(
            f"{name} must have shape (N, {', '.join(map(str, input_shape))}) ({kind}: the "
            f"trunk was built for that input), got {X.shape}"
        )
    return X


def sample_shape(X) -> tuple[int, ...]:
    """The per-sample shape of ``fit``'s input: an array's ``shape[1:]``, a dataset's
    ``image_shape``."""
    return tuple(X.image_shape) if isinstance(X, ImageDataset) else tuple(X.shape[1:])


def take_rows(X, mask):
    """Rows ``mask`` (bool) of an array or an ``ImageDataset`` (its ``subset``)."""
    return X.subset(mask) if isinstance(X, ImageDataset) else X[mask]


def check_dataset(ds, name, input_shape=None):
    """A non-empty ``ImageDataset`` whose ``image_shape`` is ``input_shape`` (when given)."""
    if len(ds) == 0:
        raise ValueError(f"{name} is an empty dataset")
    if input_shape is not None and tuple(ds.image_shape) != tuple(input_shape):
        raise ValueError(
            f"{name} gives images of shape {tuple(ds.image_shape)}; the trunk was built for "
            f"{tuple(input_shape)} (set the dataset's size= and channels= to match)"
        )
    return ds


def check_fit_data(net, X, y):
    """``fit``'s ``(X, y)`` checked against the trunk ``net``: an array (with labels ``y``) or
    an ``ImageDataset`` (``y`` None: its labels), of a per-sample shape the trunk takes."""
    built_shape = tuple(net.input_shape) if net.built else None
    y = labels_for(X, y, "y")
    if isinstance(X, ImageDataset):
        X = check_dataset(X, "X", built_shape)
    else:
        X = check_inputs(X, "X", built_shape)
        y = check_labels(y, "y", n=X.shape[0])
    shape = sample_shape(X)
    try:  # the first fit decides the input rank; the trunk's layers say whether they take it
        net.output_shape(shape)
    except ValueError as exc:
        if len(shape) == 1:
            raise ValueError(
                "X must be 4-D images (N, C, H, W) for this trunk, got feature vectors of shape "
                f"{X.shape} ({exc})"
            ) from None
        what = f"images of shape {shape}" if isinstance(X, ImageDataset) else f"shape {X.shape}"
        raise ValueError(f"X of {what} does not fit the trunk ({exc})") from None
    return X, y


def check_validation_data(validation, X):
    """``fit``'s ``validation`` data checked against ``X``'s per-sample shape: an
    ``ImageDataset`` (returned as is) or a pair ``(X_val, y_val)``, returned converted (float32,
    int64). ValueError / TypeError naming ``validation``, ``validation[0]`` or ``validation[1]``."""
    shape = sample_shape(X)
    if isinstance(validation, ImageDataset):
        return check_dataset(validation, "validation", shape)
    Xv = check_array(validation[0], "validation[0]", ndim=len(shape) + 1, allow_empty=False)
    if Xv.shape[1:] != shape:
        raise ValueError(
            f"validation[0] must have shape (n, {', '.join(map(str, shape))}) like X, got {Xv.shape}"
        )
    yv = check_labels(validation[1], "validation[1]", n=Xv.shape[0])
    return Xv, yv


def split_validation(X, y, validation, rng):
    """``(X_train, y_train, X_val, y_val)`` for ``fit``'s ``validation`` (``FitSettings.validation``,
    checked).

    A float: that fraction of the *classes* (at least two, and at least two left for
    training), drawn with ``rng``, is held out with all its images, so that the validation
    metrics measure what metric learning is for: classes not trained on. A pair
    ``(X_val, y_val)``, or an ``ImageDataset`` (its labels): used as given. None: no
    validation (X_val None). ``X`` may be an ``ImageDataset`` (then the split is two subsets).
    """
    if validation is None:
        return X, y, None, None
    if isinstance(validation, ImageDataset):
        return X, y, validation, validation.labels
    if not isinstance(validation, float):
        Xv, yv = validation
        return X, y, Xv, yv
    classes = np.unique(y)
    n_val = max(2, int(round(validation * classes.shape[0])))
    if classes.shape[0] - n_val < 2:
        raise ValueError(
            f"validation={validation} leaves fewer than two of the {classes.shape[0]} classes to train on"
        )
    held = rng.choice(classes, size=n_val, replace=False)
    mask = np.isin(y, held)
    return take_rows(X, ~mask), y[~mask], take_rows(X, mask), y[mask]
