"""docs/losses.md: its python code blocks run, in order, in one namespace, and every public loss
has a section."""
import re
from pathlib import Path

from mantissa_embed import losses

DOC = Path(__file__).resolve().parents[2] / "docs" / "losses.md"


def test_doc_code_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= len(losses.__all__) // 2
    ns = {}
    for i, code in enumerate(blocks):
        exec(compile(code, f"{DOC.name}[block {i}]", "exec"), ns)


def test_every_loss_is_documented():
    text = DOC.read_text()
    bases = {"LossOutput", "BaseMetricLossFunction", "GenericPairLoss"}
    missing = [n for n in losses.__all__ if n not in bases and f"## {n}\n" not in text]
    assert not missing, missing
