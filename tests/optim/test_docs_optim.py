"""docs/optim.md: its python code blocks run, in order, in one namespace, and every public
name of mantissa_embed.optim is in it."""
from _helpers import run_doc_blocks

from mantissa_embed import optim


def test_doc_code_blocks_run_and_name_everything():
    text = run_doc_blocks("optim.md", 3)
    missing = [n for n in optim.__all__ if n not in ("Optimizer", "Schedule") and f"`{n}(" not in text]
    assert not missing, missing
