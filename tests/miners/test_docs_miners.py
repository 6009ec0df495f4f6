"""The python code blocks of docs/miners.md run, in order, in one namespace, and every public
miner has a section."""
from _helpers import DOCS, run_doc_blocks

from mantissa_embed import miners


def test_doc_code_blocks_run():
    run_doc_blocks("miners.md", 12)


def test_every_miner_is_documented():
    text = (DOCS / "miners.md").read_text()
    for name in miners.__all__:
        if name != "BaseMiner":
            assert f"## {name}\n" in text, name
