"""docs/losses.md has a section for every public loss (tests/docs/test_docs_blocks.py runs its code
blocks, each on its own)."""

from _helpers import DOCS
from mantissa_embed import losses


def test_every_loss_is_documented():
    text = (DOCS / "losses.md").read_text()
    bases = {
        "LossOutput",
        "BaseMetricLossFunction",
        "GenericPairLoss",
        "BaseProxyLoss",
        "WeightRegularizerMixin",
    }
    missing = [n for n in losses.__all__ if n not in bases and f"## {n}\n" not in text]
    assert not missing, missing
