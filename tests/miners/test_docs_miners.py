"""The python code blocks of docs/miners.md run, in order, in one namespace, and every public
miner has a section."""
import re
from pathlib import Path

from mantissa_embed import miners

DOC = Path(__file__).resolve().parents[2] / "docs" / "miners.md"


def test_doc_code_blocks_run():
    text = DOC.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 12
    ns = {}
    for i, code in enumerate(blocks):
        exec(compile(code, f"{DOC.name}[block {i}]", "exec"), ns)


def test_every_miner_is_documented():
    text = DOC.read_text()
    for name in miners.__all__:
        if name != "BaseMiner":
            assert f"## {name}\n" in text, name
