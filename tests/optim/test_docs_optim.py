"""docs/optim.md names every public name of mantissa_embed.optim (tests/docs/test_docs_blocks.py runs
its code blocks, each on its own)."""

from _helpers import DOCS
from mantissa_embed import optim


def test_doc_names_everything():
    text = (DOCS / "optim.md").read_text()
    missing = [n for n in optim.__all__ if n not in ("Optimizer", "Schedule") and f"`{n}(" not in text]
    assert not missing, missing
