"""Shared by the PML oracle tests: run a pytorch-metric-learning loss in float64 on our float32
inputs, and compare a ``LossOutput`` with the result -- through the public kit
(``mantissa_embed.testing``), so that the oracle suite exercises it."""

from mantissa_embed.testing import assert_loss_close, pml_reference


def pml_call(loss, x, y, ref=None, ry=None, it=None, backward=True):
    """``(value, d/dx, d/dref or None)`` of PML's ``loss`` on float64 copies of the inputs.

    float64 because torch.cdist's float32 matmul path loses the digits of small distances,
    which our engine recomputes exactly. A zero loss without a graph gives zero gradients."""
    return pml_reference(loss, x, y, it, ref, ry, backward=backward)


def compare(ours, theirs, grad_atol=None):
    """Loss within rel 1e-4 (abs 1e-6); gradients within rtol 1e-4 and an absolute tolerance of
    1e-4 of the largest entry (at least 1e-7), or ``grad_atol(b)`` for the reference array b."""
    assert_loss_close(ours, theirs, rtol=1e-4, atol=1e-6, grad_atol=grad_atol)
