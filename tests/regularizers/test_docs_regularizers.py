"""The python code blocks of docs/regularizers.md run, in order, in one namespace."""
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "regularizers.md"


def test_doc_code_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 5
    ns = {}
    for i, code in enumerate(blocks):
        exec(compile(code, f"{DOC.name}[block {i}]", "exec"), ns)
