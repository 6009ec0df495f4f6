"""mantissa_embed.testing.check_matches_pml: agrees with PML where we do, reports where we do
not, and skips with a clear message without torch."""

import sys
import unittest

import numpy as np
import pytest

from mantissa_embed import losses
from mantissa_embed.testing import check_matches_pml

X = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
Y = np.array([0, 0, 1, 1, 2, 2, 0, 1])


def test_triplet_matches_and_a_different_margin_does_not():
    pytest.importorskip("torch")
    pml_losses = pytest.importorskip("pytorch_metric_learning.losses")
    ours, ref = check_matches_pml(
        losses.TripletMarginLoss(margin=0.2), pml_losses.TripletMarginLoss(margin=0.2), X, Y
    )
    assert ours.loss == pytest.approx(ref[0], rel=1e-4)
    with pytest.raises(AssertionError, match="loss .* != reference"):
        check_matches_pml(
            losses.TripletMarginLoss(margin=0.3), pml_losses.TripletMarginLoss(margin=0.2), X, Y
        )


def test_without_torch_it_skips_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    with pytest.raises(unittest.SkipTest, match=r"needs torch and pytorch-metric-learning \(pip install"):
        check_matches_pml(losses.TripletMarginLoss(), object(), X, Y)
