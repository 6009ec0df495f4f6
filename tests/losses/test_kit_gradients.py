"""Every loss's gradients (embeddings, ref_emb, learnable parameters) through the public
``mantissa_embed.testing`` kit: ``check_loss_gradients`` on its hypothesis ``batches()``."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mantissa_embed import losses
from mantissa_embed.testing import batches, check_loss_gradients

C, D = 3, 4  # classes and embedding size of the batches; the proxy losses are built for them

# name -> (factory, takes ref_emb, indices_tuple kind: None, "pairs" or "triplets"; or "no labels")
LOSSES = {
    "Contrastive": (lambda: losses.ContrastiveLoss(), True, "pairs"),
    "Triplet": (lambda: losses.TripletMarginLoss(margin=0.2), True, "triplets"),
    "TripletSmooth": (lambda: losses.TripletMarginLoss(smooth_loss=True), True, "triplets"),
    "NTXent": (lambda: losses.NTXentLoss(temperature=0.5), True, "pairs"),
    "SupCon": (lambda: losses.SupConLoss(temperature=0.5), True, "pairs"),
    "NCA": (lambda: losses.NCALoss(), True, None),
    "MultiSimilarity": (lambda: losses.MultiSimilarityLoss(alpha=2, beta=5), True, "pairs"),
    "LiftedStructure": (lambda: losses.LiftedStructureLoss(), True, "pairs"),
    "GeneralizedLifted": (lambda: losses.GeneralizedLiftedStructureLoss(), True, "pairs"),
    "SNRContrastive": (lambda: losses.SignalToNoiseRatioContrastiveLoss(), True, "pairs"),
    "Angular": (lambda: losses.AngularLoss(alpha=30), False, "triplets"),
    "Margin": (lambda: losses.MarginLoss(), True, "triplets"),
    "TupletMargin": (lambda: losses.TupletMarginLoss(scale=4), True, "pairs"),
    "IntraPairVariance": (lambda: losses.IntraPairVarianceLoss(), True, "pairs"),
    "Instance": (lambda: losses.InstanceLoss(gamma=4), False, None),
    "ThresholdConsistentMargin": (lambda: losses.ThresholdConsistentMarginLoss(), True, "pairs"),
    "MultipleLosses": (
        lambda: losses.MultipleLosses(
            [losses.ContrastiveLoss(), losses.TripletMarginLoss()], weights=[0.3, 2.0]
        ),
        True,
        None,
    ),
    "ProxyAnchor": (lambda: losses.ProxyAnchorLoss(C, D, alpha=4, seed=1), False, None),
    "ProxyNCA": (lambda: losses.ProxyNCALoss(C, D, seed=1), False, None),
    "NormalizedSoftmax": (lambda: losses.NormalizedSoftmaxLoss(C, D, temperature=0.5, seed=1), False, None),
    "SoftTriple": (lambda: losses.SoftTripleLoss(C, D, centers_per_class=2, la=3, seed=1), False, None),
    "ArcFace": (lambda: losses.ArcFaceLoss(C, D, scale=4, seed=1), False, None),
    "CosFace": (lambda: losses.CosFaceLoss(C, D, scale=4, seed=1), False, None),
    "LargeMarginSoftmax": (lambda: losses.LargeMarginSoftmaxLoss(C, D, seed=1), False, None),
    "SphereFace": (lambda: losses.SphereFaceLoss(C, D, seed=1), False, None),
    "SubCenterArcFace": (
        lambda: losses.SubCenterArcFaceLoss(C, D, scale=4, sub_centers=2, seed=1),
        False,
        None,
    ),
    "FastAP": (lambda: losses.FastAPLoss(), False, None),
    "Histogram": (lambda: losses.HistogramLoss(n_bins=5), False, None),
    "RankedList": (lambda: losses.RankedListLoss(margin=0.4, Tn=10), False, None),
    "NPairs": (lambda: losses.NPairsLoss(), False, None),
    "PNP": (lambda: losses.PNPLoss(), False, None),
    "DynamicSoftMargin": (lambda: losses.DynamicSoftMarginLoss(), False, None),
    "Manifold": (lambda: losses.ManifoldLoss(l=D, K=2, seed=1), False, "no labels"),
}
# Not here, by design: their gradient is not the derivative of their value, as in PML. CircleLoss
# detaches its weights alpha_p, alpha_n; P2SGradLoss replaces the gradient (its paper's point);
# CrossBatchMemory enqueues detached copies of the batch. tests/losses/test_xbm_pml.py compares them with PML.


@pytest.mark.parametrize("name", sorted(LOSSES))
@settings(max_examples=5, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_gradients_match_finite_differences(name, data):
    factory, takes_ref, mined = LOSSES[name]
    batch = data.draw(
        batches(
            n=st.integers(2, 6),
            dim=D,
            num_classes=C,
            ref=st.booleans() if takes_ref else False,
            mined=st.sampled_from([None, mined if mined != "no labels" else None]),
            min_norm=0.1,
            max_norm=10.0,
        )
    )
    kwargs = batch.kwargs()
    if mined == "no labels":
        kwargs["labels"] = None
    result = check_loss_gradients(factory(), **kwargs)
    assert result.checked + result.skipped > 0


def test_a_wrong_gradient_is_caught():
    """The sweep can fail: a loss whose gradient is scaled by 1.5 is reported."""

    class Scaled:
        def __init__(self):
            self.inner = losses.NCALoss()

        def __call__(self, embeddings, labels, **kw):
            out = self.inner(embeddings, labels, **kw)
            out.grad = out.grad * np.float32(1.5)
            return out

    x = np.random.default_rng(0).standard_normal((6, D)).astype(np.float32)
    with pytest.raises(AssertionError, match=r"worst embeddings\[\d+, \d+\]"):
        check_loss_gradients(Scaled(), x, np.array([0, 0, 1, 1, 2, 2]))
