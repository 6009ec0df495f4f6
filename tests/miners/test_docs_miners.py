"""docs/miners.md has a section for every public miner (tests/docs/test_docs_blocks.py runs its code
blocks, each on its own)."""

from _helpers import DOCS
from mantissa_embed import miners


def test_every_miner_is_documented():
    text = (DOCS / "miners.md").read_text()
    for name in miners.__all__:
        if name != "BaseMiner":
            assert f"## {name}\n" in text, name
