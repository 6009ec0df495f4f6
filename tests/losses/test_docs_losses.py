"""docs/losses.md: its python code blocks run, in order, in one namespace, and every public loss
has a section."""
from _helpers import DOCS, run_doc_blocks

from mantissa_embed import losses


def test_doc_code_blocks_run():
    run_doc_blocks("losses.md", len(losses.__all__) // 2)


def test_every_loss_is_documented():
    text = (DOCS / "losses.md").read_text()
    bases = {"LossOutput", "BaseMetricLossFunction", "GenericPairLoss"}
    missing = [n for n in losses.__all__ if n not in bases and f"## {n}\n" not in text]
    assert not missing, missing
