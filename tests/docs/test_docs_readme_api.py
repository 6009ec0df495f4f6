"""README.md's API section states the real signatures: ``Embedder(...)`` and the ``fit`` row
spell the code's parameters and defaults exactly, and every public method of Embedder has a
row in the method table."""

import inspect
import re
from pathlib import Path

from mantissa_embed import Embedder

README = Path(__file__).resolve().parents[2] / "README.md"


def _api_section():
    text = README.read_text()
    start = text.index("## The API")
    return text[start : text.index("\n## ", start + 1)]


def _spelled(name, func):
    """``name(params)`` as the README writes it: the signature without ``self`` and without
    annotations, strings in double quotes."""
    sig = inspect.signature(func)
    params = [p.replace(annotation=p.empty) for p in sig.parameters.values() if p.name != "self"]
    bare = sig.replace(parameters=params, return_annotation=sig.empty)
    return f"{name}{bare}".replace("'", '"')


def test_the_constructor_line_is_the_signature():
    spelled = _spelled("Embedder", Embedder.__init__)
    assert f"`{spelled}`" in " ".join(_api_section().split()), spelled


def test_the_fit_row_lists_every_argument_with_its_default():
    rows = [r for r in _api_section().splitlines() if r.startswith("| `fit(")]
    assert len(rows) == 1, rows
    spelled = _spelled("fit", Embedder.fit)
    assert rows[0].startswith(f"| `{spelled}` |"), (spelled, rows[0][:400])


def test_every_public_method_has_a_row():
    section = _api_section()
    rows = "\n".join(r for r in section.splitlines() if r.startswith("| `"))
    public = [n for n, f in inspect.getmembers(Embedder) if not n.startswith("_") and callable(f)]
    missing = [n for n in public if not re.search(rf"`(Embedder\.)?{n}\(", rows)]
    assert not missing, missing
